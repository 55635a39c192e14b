"""What a command was given (runner._target): an experiment file or a store, told by content,
and the other of the two where the file says it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner import store as store_module
from runner._errors import ConfigError
from runner._target import experiment_for, kind_of, resolve, store_for
from runner.distributed._address import RunAddress, write_note
from runner.store import GridRow, Registration, Store, StoreError


def _experiment(folder: Path, name: str = "exp.toml", store: str = "exp.duckdb") -> Path:
    path = folder / name
    path.write_text(
        f'store = "{store}"\nimages = "images"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\n'
    )
    return path


def _run_store(path: Path, experiment: Path | None) -> Path:
    """A store a run registered, started from ``experiment``."""
    with Store(path) as s:
        s.register(
            [Registration("q", "a" * 64, "qwen", "m", 1, "{}")],
            [GridRow(configuration="q", condition="base", budget=8, qid="q1", attempts=1)],
            experiment=experiment,
        )
    return path


def test_an_experiment_file_names_its_store(tmp_path: Path) -> None:
    experiment = _experiment(tmp_path)
    target = resolve(experiment)
    assert target.kind == "experiment"
    assert target.store == tmp_path / "exp.duckdb" and target.experiment == experiment
    store, said = store_for(experiment)
    assert store == tmp_path / "exp.duckdb"
    assert said == f"experiment {experiment} → store {store}"
    assert experiment_for(experiment, "run") == (experiment, None)  # nothing to say


def test_a_store_names_the_experiment_its_run_was_started_from(tmp_path: Path) -> None:
    experiment = _experiment(tmp_path)
    store = _run_store(tmp_path / "exp.duckdb", experiment)
    target = resolve(store)
    assert (target.kind, target.store, target.experiment) == ("store", store, experiment)
    assert store_for(store) == (store, None)
    found, said = experiment_for(store, "run")
    assert found == experiment
    assert said == f"store {store} → experiment {experiment}"


def test_the_kind_is_read_from_the_content_not_the_name(tmp_path: Path) -> None:
    toml_named_duckdb = _experiment(tmp_path, "exp.duckdb", store="other.duckdb")
    assert kind_of(toml_named_duckdb) == "experiment"
    store_named_toml = _run_store(tmp_path / "store.toml", None)
    assert kind_of(store_named_toml) == "store"
    broken = tmp_path / "broken.toml"
    broken.write_text("store = \n")  # its own reading names the line
    assert kind_of(broken) == "experiment"


@pytest.mark.parametrize(
    "content", [b"\x89PNG\r\n\x1a\n\x00\x00", b"not = toml = at all", b"", b"\n", b'title = "x"\n']
)
def test_a_file_that_is_neither_is_one_line_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        resolve(path)
    assert str(caught.value) == (
        f"{path}: neither an experiment file (TOML) nor a store (DuckDB file)"
    )


def test_a_missing_file_or_a_folder_is_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "exp.toml"
    with pytest.raises(ConfigError) as caught:
        store_for(missing)
    assert str(caught.value) == (
        f"{missing}: no such file; give the experiment file (TOML) or its store (DuckDB file)"
    )
    with pytest.raises(ConfigError, match="is a folder; give the experiment file"):
        experiment_for(tmp_path, "run")


def test_a_store_naming_no_experiment_asks_for_the_toml(tmp_path: Path) -> None:
    store = _run_store(tmp_path / "exp.duckdb", None)  # a run from before stores named it
    with pytest.raises(ConfigError) as caught:
        experiment_for(store, "run")
    assert str(caught.value) == (
        f"{store} is a store; run takes the experiment file (the TOML that names this store)"
    )


def test_a_store_naming_a_moved_experiment_says_so(tmp_path: Path) -> None:
    experiment = _experiment(tmp_path)
    store = _run_store(tmp_path / "exp.duckdb", experiment)
    experiment.rename(tmp_path / "moved.toml")
    target = resolve(store)
    assert target.experiment is None and target.named == experiment
    with pytest.raises(ConfigError) as caught:
        experiment_for(store, "check")
    assert str(caught.value) == (
        f"{store} is a store; check takes the experiment file (the TOML that names this store)"
        f"; it names {experiment}, which is not there any more"
    )


def test_a_store_a_run_holds_names_the_experiment_of_the_runs_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = _experiment(tmp_path)
    store = _run_store(tmp_path / "exp.duckdb", None)

    def held(path: Path, **_: object) -> object:
        raise StoreError(f"{path}: a run holds the file; query it once the run has ended")

    monkeypatch.setattr(store_module, "read_only", held)
    with pytest.raises(ConfigError, match="is a store; a run holds it; monitor takes"):
        experiment_for(store, "monitor")
    note = RunAddress(
        address="127.0.0.1:1", namespace="n", token_auth=False, host="h", pid=1,
        started=datetime.now(UTC), experiment=str(experiment),
    )  # fmt: skip
    write_note(store, note)
    assert experiment_for(store, "monitor")[0] == experiment


def test_a_store_names_no_experiment_that_now_writes_elsewhere(tmp_path: Path) -> None:
    """The mismatch's advice is to point the experiment at a new store: the old store still
    names that file, and `run old.duckdb` would have run into the new one."""
    experiment = _experiment(tmp_path)
    store = _run_store(tmp_path / "exp.duckdb", experiment)
    _experiment(tmp_path, store="new.duckdb")  # the experiment file, edited since
    (tmp_path / "new.duckdb").touch()
    with pytest.raises(ConfigError, match=r"which now names the store .*new\.duckdb; give the"):
        experiment_for(store, "run")
    copy = tmp_path / "backup.duckdb"  # a copy names the experiment of the original
    copy.write_bytes(store.read_bytes())
    _experiment(tmp_path)
    with pytest.raises(ConfigError, match=r"which now names the store .*exp\.duckdb"):
        experiment_for(copy, "run")


def test_a_store_never_chooses_an_experiment_file_others_may_write(tmp_path: Path) -> None:
    """A command taking the file a store names sends the user's keys where it says: a file
    others can write (or another user's) is not taken from a store."""
    experiment = _experiment(tmp_path)
    store = _run_store(tmp_path / "exp.duckdb", experiment)
    experiment.chmod(0o666)
    with pytest.raises(ConfigError, match=r"lets others write it; give the experiment file"):
        experiment_for(store, "run")
    experiment.chmod(0o644)
    assert experiment_for(store, "run")[0] == experiment


def test_a_store_given_is_not_opened_to_be_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _run_store(tmp_path / "exp.duckdb", _experiment(tmp_path))
    opened: list[Path] = []
    monkeypatch.setattr(store_module, "read_only", lambda path, *a, **k: opened.append(path))
    assert store_for(store) == (store, None)
    assert opened == []
