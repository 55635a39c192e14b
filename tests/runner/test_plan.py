"""A store that would refuse the run says so before Ray starts (runner.plan.check_store_agrees):
a changed protocol names each field that changed, old and new, and the two ways on; so does a
cohort drawn otherwise than ``[cohort]`` asks."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from conditions import (
    Cohort,
    DataRoot,
    ProtocolMismatchError,
    generate_box_benchmark,
    write_cohort,
)
from runner._errors import ConfigError
from runner.cli import main
from runner.experiment import Experiment, load_experiment
from runner.plan import check_store_agrees, grid_of
from runner.store import Store

WAYS_ON = "they must not be mixed: revert the change, or point the experiment's store at a new file"


def _write(path: Path, images: Path, model: str = "qwen3-vl-plus", cohort: str = "") -> Path:
    path.write_text(
        f'store = "exp.duckdb"\nimages = "{images}"\n{cohort}'
        f'[backends.q]\nprovider = "qwen"\nmodel = "{model}"\nbase_url = "simulator"\n'
        '[[configurations]]\nname = "q-max"\nbackend = "q"\n'
        'decoding = { thinking = { mode = "on", effort = "max" } }\n'
    )
    return path


def _registered(experiment: Experiment, cohort: Cohort) -> None:
    """The store as a run of ``experiment`` leaves it: its cohort, its configurations."""
    write_cohort(experiment.store, cohort)
    configurations = [experiment.configuration(c, None) for c in experiment.configurations]
    grid = grid_of(experiment, cohort, configurations)
    with Store(experiment.store) as store:
        store.register(list(grid.registrations), list(grid.rows))


@pytest.fixture
def changed_model(tmp_path: Path, small_cohort: Cohort, small_root: DataRoot) -> Path:
    """An experiment whose store was run with model qwen3-vl-plus, now naming qwen3-vl-max."""
    path = _write(tmp_path / "exp.toml", small_root.images)
    _registered(load_experiment(path), small_cohort)
    return _write(path, small_root.images, model="qwen3-vl-max")


def test_a_changed_model_names_the_field_old_and_new_and_both_ways_on(
    changed_model: Path,
) -> None:
    experiment = load_experiment(changed_model)
    with pytest.raises(ProtocolMismatchError) as caught:
        check_store_agrees(experiment)  # plain Python: no Ray anywhere in this test
    message = str(caught.value)
    assert message.startswith(f"{experiment.store}, configuration q-max: results were made ")
    assert ': backends.q.model: "qwen3-vl-plus" → "qwen3-vl-max"; ' in message
    assert message.endswith(WAYS_ON) and "\n" not in message
    assert "templates" not in message and "cohort" not in message  # only what changed


def test_a_run_is_refused_before_ray_is_asked_to_start(
    changed_model: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    ray_connects: list[str | None],
) -> None:
    monkeypatch.setattr(sys, "argv", ["groundbench", "run", str(changed_model), "--no-check"])
    capfd.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    err = capfd.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(err) == 1, err
    assert '"qwen3-vl-plus" → "qwen3-vl-max"' in err[0] and err[0].endswith(WAYS_ON)
    assert ray_connects == []  # refused before Ray was asked for


def test_a_store_from_before_fields_were_kept_still_names_a_changed_model(
    changed_model: Path,
) -> None:
    experiment = load_experiment(changed_model)
    with duckdb.connect(str(experiment.store)) as con:  # as a store of version 6 holds it
        con.execute("UPDATE configurations SET protocol_fields = NULL")
    with pytest.raises(ProtocolMismatchError, match=r'backends\.q\.model: "qwen3-vl-plus" → "qw'):
        check_store_agrees(experiment)


def test_a_store_from_before_fields_were_kept_says_it_records_only_the_hash(
    tmp_path: Path, small_cohort: Cohort, small_root: DataRoot
) -> None:
    experiment = load_experiment(_write(tmp_path / "exp.toml", small_root.images))
    _registered(experiment, small_cohort)
    with duckdb.connect(str(experiment.store)) as con:  # another prompt: same settings
        con.execute("UPDATE configurations SET protocol_fields = NULL, protocol = 'b0b0b0b0b0b0'")
    with pytest.raises(ProtocolMismatchError) as caught:
        check_store_agrees(experiment)
    message = str(caught.value)
    assert "results were made under protocol b0b0b0b0b0b0, this run is " in message
    assert "records only the hash of the rest" in message and message.endswith(WAYS_ON)


def test_the_same_experiment_passes_and_another_configuration_is_not_compared(
    tmp_path: Path, small_cohort: Cohort, small_root: DataRoot
) -> None:
    path = _write(tmp_path / "exp.toml", small_root.images)
    _registered(load_experiment(path), small_cohort)
    check_store_agrees(load_experiment(path))
    renamed = path.read_text().replace('name = "q-max"', 'name = "q-plus"')
    path.write_text(renamed.replace("qwen3-vl-plus", "qwen3-vl-max"))
    check_store_agrees(load_experiment(path))  # a new configuration: nothing stored to mix


def test_the_store_names_the_field_too_where_the_early_check_was_skipped(
    changed_model: Path, small_cohort: Cohort
) -> None:
    experiment = load_experiment(changed_model)
    configurations = [experiment.configuration(c, None) for c in experiment.configurations]
    grid = grid_of(experiment, small_cohort, configurations)
    with Store(experiment.store) as store, pytest.raises(ProtocolMismatchError) as caught:
        store.register(list(grid.registrations), list(grid.rows))
    assert 'configuration.model: "qwen3-vl-plus" → "qwen3-vl-max"' in str(caught.value)
    assert str(caught.value).endswith(WAYS_ON)


def test_a_changed_cohort_names_each_field_old_and_new(
    tmp_path: Path, small_cohort: Cohort, small_root: DataRoot
) -> None:
    drawn = f'[cohort]\nroot = "{small_root.root}"\nseed = 0\nper_source = 15\nmatched = 15\n'
    path = _write(tmp_path / "exp.toml", small_root.images, cohort=drawn)
    _registered(load_experiment(path), small_cohort)
    check_store_agrees(load_experiment(path))
    path.write_text(path.read_text().replace("per_source = 15", "per_source = 20"))
    with pytest.raises(ConfigError) as caught:
        check_store_agrees(load_experiment(path))
    assert str(caught.value) == (
        f"{tmp_path / 'exp.duckdb'}: holds a cohort drawn otherwise than [cohort] now asks: "
        "cohort.per_source: 15 → 20; one store holds one cohort: revert the change, or point "
        "the experiment's store at a new file"
    )


def test_a_box_benchmarks_changed_decoding_is_named_at_the_configuration(tmp_path: Path) -> None:
    from runner.plan import ensure_box_set

    file, images = generate_box_benchmark("refbench-pro", tmp_path / "data", questions=6)
    path = tmp_path / "boxes.toml"
    path.write_text(
        f'store = "boxes.duckdb"\nimages = "{images}"\n'
        f'[boxes]\nbenchmark = "refbench-pro"\nfile = "{file}"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "qwen3-vl-plus"\nbase_url = "simulator"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\nconvention = "norm1000"\n'
        "decoding = { temperature = 0.0 }\n"
    )
    experiment = load_experiment(path)
    questions = ensure_box_set(experiment)
    configurations = [experiment.configuration(c, None) for c in experiment.configurations]
    grid = grid_of(experiment, questions, configurations)
    with Store(experiment.store) as store:
        store.register(list(grid.registrations), list(grid.rows))
    check_store_agrees(experiment)
    path.write_text(path.read_text().replace("temperature = 0.0", "temperature = 0.7"))
    with pytest.raises(ProtocolMismatchError) as caught:
        check_store_agrees(load_experiment(path))
    assert "configurations.q.decoding.temperature: 0.0 → 0.7" in str(caught.value)
