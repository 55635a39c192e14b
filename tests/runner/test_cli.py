"""The groundbench command line."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    DataRoot,
    RequestBuilder,
    Transport,
    VariantCache,
    plan,
    write_cohort,
)
from runner._output import OutputError
from runner.backends import ApiKey, AttemptRecord, Client, ask
from runner.cli import app, main
from tests.runner.unwritable import unwritable

runner = CliRunner()


def test_fidelity_prints_c_n_per_budget(shared_data: Path) -> None:
    result = runner.invoke(
        app, ["fidelity", str(shared_data / "coco-000000039769" / "instances.json")]
    )
    assert result.exit_code == 0, result.output
    assert "4 eligible referents in" in result.output
    for n in ("8", "16", "24", "32", "64"):
        assert f"│ {n:>2} │" in result.output


def test_a_bad_file_is_one_readable_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{")
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "fidelity", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"groundbench: {bad}: not JSON")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("groundbench ")


def test_synth_into_a_folder_it_cannot_write_is_one_line(tmp_path: Path) -> None:
    with unwritable(tmp_path / "locked") as locked:
        result = runner.invoke(app, ["synth", str(locked / "data"), "--images", "10"])
        assert isinstance(result.exception, OutputError)
        assert str(result.exception).startswith(f"{locked / 'data'}: cannot write there (")
        assert str(result.exception).endswith("give OUT a folder you can write to")
        assert list(locked.iterdir()) == []


def test_synth_then_build_then_summary(tmp_path: Path) -> None:
    data, experiment = tmp_path / "data", tmp_path / "experiment.duckdb"
    made = runner.invoke(app, ["synth", str(data), "--images", "60", "--seed", "1"])
    assert made.exit_code == 0, made.output
    assert (data / "refcocog" / "refs(umd).p").is_file()
    args = ["cohort", "build", str(data), str(experiment), "--per-source", "8", "--matched", "6"]
    built = runner.invoke(app, args)
    assert built.exit_code == 0, built.output
    assert "(24 questions) stored in" in built.output
    again = runner.invoke(app, args)
    assert "already in" in again.output
    toml = tmp_path / "exp.toml"  # the experiment file naming the store is taken as it
    toml.write_text(
        f'store = "{experiment.name}"\nimages = "data/images"\n[backends.q]\nprovider = "qwen"\n'
        'model = "m"\n[[configurations]]\nname = "q"\nbackend = "q"\n'
    )
    named = runner.invoke(app, [*args[:3], str(toml), *args[4:]])
    assert named.exit_code == 0, named.output
    assert f"already in {experiment}" in named.output
    summary = runner.invoke(app, ["cohort", "summary", str(experiment)])
    assert summary.exit_code == 0, summary.output
    assert "24 questions" in summary.output and "C_N" in summary.output
    assert re.search(r"questions\s*│\s*│\s*8\s*│\s*8\s*│\s*8\s*│\s*24\s*│\s*6\s*│", summary.output)
    assert re.search(r"phrase length\s*│\s*mean words\s*│\s*\d+\.\d", summary.output)


def test_a_short_source_is_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    runner.invoke(app, ["synth", str(data), "--images", "20"])
    built = runner.invoke(app, ["cohort", "build", str(data), str(tmp_path / "e.duckdb")])
    assert built.exit_code == 0, built.output
    assert "refcoco: only" in built.output and "of 500 questions" in built.output


def test_a_missing_data_root_is_one_line_and_exit_2(tmp_path: Path) -> None:
    experiment = tmp_path / "e.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()",
         "cohort", "build", str(tmp_path / "nowhere"), str(experiment)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"groundbench: {tmp_path / 'nowhere' / 'refcoco' / 'instances.json'}: "
        "cannot read: No such file or directory"
    )
    assert not experiment.exists()  # nothing half-written


def test_a_single_source_root_builds_with_source(shared_data: Path, tmp_path: Path) -> None:
    shutil.copytree(shared_data / "coco-000000039769", tmp_path / "refcoco")
    args = ["cohort", "build", str(tmp_path), str(tmp_path / "e.duckdb"),
            "--images", str(tmp_path / "refcoco"), "--source", "refcoco"]  # fmt: skip
    built = runner.invoke(app, args)
    assert built.exit_code == 0, built.output
    assert "refcoco: only 1 of 500 questions" in built.output
    assert "(1 questions) stored in" in built.output
    wrong = runner.invoke(app, [*args[:-1], "refcocx"])
    assert wrong.exit_code == 2 and "unknown source 'refcocx'" in wrong.output


def _groundbench(*args: str) -> list[str]:
    return [sys.executable, "-c", "from runner.cli import main; main()", *args]


def test_simulate_serves_a_cohort_on_loopback(
    small_root: DataRoot, small_cohort: Cohort, tmp_path: Path
) -> None:
    experiment = tmp_path / "exp.duckdb"
    write_cohort(experiment, small_cohort)
    process = subprocess.Popen(
        _groundbench("simulate", str(experiment), "--images", str(small_root.images),
                     "--port", "0", "--seed", "7"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.match(r"simulator serving (http://127\.0\.0\.1:\d+)$", first.strip())
        assert match, first
        configuration = PAPER_CONFIGURATIONS[0].model_copy(
            update={"transport": Transport(base_url=match.group(1) + "/api/v3")}
        )
        builder = RequestBuilder(small_cohort, small_root.images, VariantCache(tmp_path / "v"))
        request = builder.build(next(iter(plan(small_cohort, [configuration]))), configuration)

        async def one() -> list[AttemptRecord]:
            async with Client(configuration, ApiKey("sk-cli-test")) as backend:
                return await ask(backend, request, lambda r: None)

        records = asyncio.run(one())
        assert records[0].outcome == "answer" and records[0].http_status == 200
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_bad_simulator_spec_is_one_line_naming_the_field(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text('{"faults": {"server_error": 3}}')
    done = subprocess.run(
        _groundbench("simulate", str(tmp_path / "x.duckdb"), "--images", str(tmp_path),
                     "--spec", str(spec)),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"groundbench: {spec}: faults.server_error: ")
    assert len(done.stderr.strip().splitlines()) == 1


def test_run_without_the_key_variable_is_one_line_before_anything_starts(
    tmp_path: Path, small_root: DataRoot
) -> None:
    experiment = tmp_path / "exp.toml"
    experiment.write_text(
        f'store = "exp.duckdb"\nimages = "{small_root.images}"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\napi_key_env = "GB_UNSET_KEY_VARIABLE"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\n'
    )
    done = subprocess.run(
        _groundbench("run", str(experiment)), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "backend q:" in lines[0] and "GB_UNSET_KEY_VARIABLE" in lines[0]
    assert not (tmp_path / "exp.duckdb").exists()  # nothing was made


PAPER_KEYS = ("DASHSCOPE_API_KEY", "ARK_API_KEY", "MOONSHOT_API_KEY", "GEMINI_API_KEY")


def test_check_names_every_key_variable_not_set_at_once_and_never_a_value(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    paper = Path(__file__).resolve().parents[2] / "ops" / "paper.toml"
    for variable in PAPER_KEYS:
        monkeypatch.delenv(variable, raising=False)
    code, err = _console(capfd, monkeypatch, "check", str(paper))
    assert code == 2 and err == [
        "groundbench: backends qwen, doubao, kimi, gemini: environment variables "
        "DASHSCOPE_API_KEY, ARK_API_KEY, MOONSHOT_API_KEY, GEMINI_API_KEY are not set: each must "
        "hold its backend's API key"
    ]
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-0f3c9e2a7b414d8e9a6f")  # one set: the rest named
    monkeypatch.setenv("MOONSHOT_API_KEY", "   ")  # blank is not set
    code, err = _console(capfd, monkeypatch, "check", str(paper))
    assert code == 2 and err == [
        "groundbench: backends doubao, kimi, gemini: environment variables ARK_API_KEY, "
        "MOONSHOT_API_KEY, GEMINI_API_KEY are not set: each must hold its backend's API key"
    ]
    assert "0f3c9e2a" not in err[0]


def test_one_key_variable_two_backends_read_is_named_once(
    tmp_path: Path, small_root: DataRoot, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.delenv("GB_UNSET_SHARED_KEY", raising=False)
    experiment = tmp_path / "exp.toml"
    backend = 'provider = "qwen"\nmodel = "m"\napi_key_env = "GB_UNSET_SHARED_KEY"\n'
    experiment.write_text(
        f'store = "exp.duckdb"\nimages = "{small_root.images}"\n'
        f"[backends.a]\n{backend}[backends.b]\n{backend}"
        '[[configurations]]\nname = "a"\nbackend = "a"\n'
        '[[configurations]]\nname = "b"\nbackend = "b"\n'
    )
    code, err = _console(capfd, monkeypatch, "check", str(experiment))
    assert code == 2 and err == [
        "groundbench: backends a, b: environment variable GB_UNSET_SHARED_KEY is not set: it "
        "must hold the API key"
    ]
    assert not (tmp_path / "exp.duckdb").exists()  # nothing was made


def _console(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[object, list[str]]:
    """The console script run in this process, as a user runs it: its exit code and the
    lines of its stderr."""
    monkeypatch.setattr(sys, "argv", ["groundbench", *args])
    capfd.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code, capfd.readouterr().err.strip().splitlines()


DEEP = 100_000


@pytest.mark.parametrize("command", ["check", "run"])
@pytest.mark.parametrize(
    "line", ["a = " + "[" * DEEP + "]" * DEEP, "a = " + "{b = " * DEEP + "1" + "}" * DEEP]
)
def test_an_experiment_file_nested_too_deep_is_one_line(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    line: str,
) -> None:
    # tomllib reads nesting by recursion: 100,000 deep was a RecursionError's traceback.
    experiment = tmp_path / "exp.toml"
    experiment.write_text(f'{line}\nstore = "exp.duckdb"\n')
    code, err = _console(capfd, monkeypatch, command, str(experiment))
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"groundbench: {experiment}: not valid TOML: ")
    assert "nested too deep" in err[0] and "Traceback" not in err[0]


@pytest.mark.parametrize("command", ["check", "run"])
@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e999"])
def test_max_spend_is_a_finite_number_of_dollars(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    value: str,
) -> None:
    # inf was taken as a cap that every estimate fits; refused as any bad option is.
    missing = tmp_path / "never-read.toml"
    code, err = _console(capfd, monkeypatch, command, str(missing), f"--max-spend={value}")
    assert code == 2
    assert any(line.startswith("Error: Invalid value for '--max-spend'") for line in err), err
    assert not any(str(missing) in line for line in err)  # refused before the file is read


# A key, and a model name holding 12 of its characters (a backend refuses it: the model is
# written into every record and log line).
SHARED_KEY = "gb-0f3c9e2a7b414d8e9a6f"


def test_a_model_holding_a_piece_of_the_key_is_one_line_before_ray_starts(
    tmp_path: Path,
    small_root: DataRoot,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    ray_connects: list[str | None],
) -> None:
    # The driver checked its backends with a stand-in key; the actors, with the real one,
    # refused the model once Ray had started: four Ray tracebacks.
    monkeypatch.setenv("GB_SHARED_KEY", SHARED_KEY)
    experiment = tmp_path / "exp.toml"
    experiment.write_text(
        f'store = "exp.duckdb"\nimages = "{small_root.images}"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "qwen-0f3c9e2a7b41"\n'
        'api_key_env = "GB_SHARED_KEY"\n[[configurations]]\nname = "q"\nbackend = "q"\n'
    )
    code, err = _console(capfd, monkeypatch, "run", str(experiment))
    assert code == 2 and len(err) == 1, err
    assert err[0] == (
        "groundbench: configuration q: its model holds an API key; a key goes only in the "
        "environment variable the backend names (api_key_env)"
    )
    assert ray_connects == []  # Ray was never asked to start
    assert not (tmp_path / "exp.duckdb").exists()  # nothing was made


def test_sql_prints_a_table_csv_json_and_refuses_to_write(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    store = tmp_path / "exp.duckdb"
    write_cohort(store, small_cohort)
    count = len(small_cohort.questions)
    result = runner.invoke(app, ["sql", str(store), "SELECT count(*) AS n FROM questions"])
    assert result.exit_code == 0, result.output
    assert f"│ {count} │" in result.output
    as_csv = runner.invoke(app, ["sql", str(store), "SELECT 1 AS a, 'x' AS b", "--format", "csv"])
    assert as_csv.output == "a,b\n1,x\n"
    as_json = runner.invoke(app, ["sql", str(store), "SELECT 1 AS a", "--format", "json"])
    assert as_json.output.strip() == '{"a": 1}'
    for bad, why in (
        ("DELETE FROM questions", "not DELETE"),
        ("SELECT 1; DROP TABLE questions", "one statement at a time"),
        ("EXPLAIN ANALYZE DELETE FROM questions", "not EXPLAIN DELETE"),
        ("SELECT * FROM questons", "'questons' in the store: did you mean \"questions\"?"),
        ("SELECT qidd FROM questions", 'not found in FROM clause! Candidate bindings: "qid"'),
    ):
        done = subprocess.run(
            _groundbench("sql", str(store), bad), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, bad
        assert done.stderr.startswith("groundbench: ") and why in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    longer = subprocess.run(  # a query may hold a run's store 10 minutes at most
        _groundbench("sql", str(store), "SELECT 1", "--timeout", "86400"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert longer.returncode == 2
    assert longer.stderr == (
        "groundbench: a query runs for at most 600 s, not 86400 (--timeout); narrow it "
        "(WHERE, LIMIT) to answer sooner\n"
    )
    assert runner.invoke(app, ["sql", str(store), "SELECT count(*) FROM questions"]).exit_code == 0
    assert (
        f"│ {count} "
        in runner.invoke(app, ["sql", str(store), "SELECT count(*) FROM questions"]).output
    )


def test_sql_piped_shows_long_names_whole_and_floats_short(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    store = tmp_path / "exp.duckdb"
    write_cohort(store, small_cohort)
    name = "a_column_name_far_longer_than_any_terminal_would_show_" * 2
    query = f"SELECT 0.1::DOUBLE + 0.2 AS {name}, -0.0::DOUBLE AS z, 'cue-colour-wrong' AS c"
    shown = runner.invoke(app, ["sql", str(store), query])  # CliRunner: not a terminal
    assert shown.exit_code == 0, shown.output
    assert "…" not in shown.output and name in shown.output
    row = next(line for line in shown.output.splitlines() if "cue-colour-wrong" in line)
    assert [c.strip() for c in row.strip("│ ").split("│")] == ["0.3", "0", "cue-colour-wrong"]
    exported = runner.invoke(app, ["sql", str(store), query, "--format", "csv"])
    assert exported.output.splitlines()[1].startswith("0.30000000000000004,")  # data: all digits


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``group`` (Typer's own click), by its path of names."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _words(text: str) -> str:
    return " ".join(text.split())


def test_every_help_text_is_shown_whole_brackets_and_defaults_included() -> None:
    # Help as written reaches the screen: no "[boxes]" or "[default: …]" taken for markup.
    commands = dict(_commands(typer.main.get_command(app)))
    assert ("run",) in commands and ("boxes", "score") in commands
    for path, command in commands.items():
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, path
        shown = _words(result.output)
        for param in command.params:
            written = getattr(param, "help", None)
            if written:
                assert _words(written) in shown, (path, written)
    boxes = runner.invoke(app, ["boxes", "--help"], env={"COLUMNS": "200"})
    assert "put [boxes] in an experiment file" in _words(boxes.output)


def _experiment_file(folder: Path, images: Path) -> Path:
    path = folder / "exp.toml"
    path.write_text(
        f'store = "exp.duckdb"\nimages = "{images}"\n'
        '[backends.q]\nprovider = "qwen"\nmodel = "m"\nbase_url = "simulator"\n'
        '[[configurations]]\nname = "q"\nbackend = "q"\n'
    )
    return path


def test_report_and_sql_take_the_experiment_file_and_say_which_store(
    tmp_path: Path, small_cohort: Cohort, small_root: DataRoot
) -> None:
    from tests.runner.overlays.stores import write_scored_store

    store = tmp_path / "exp.duckdb"
    write_scored_store(store, small_cohort, small_root.images)
    experiment = _experiment_file(tmp_path, small_root.images)
    resolved = f"experiment {experiment} → store {store}\n"
    shown = runner.invoke(app, ["report", str(experiment)])
    assert shown.exit_code == 0, shown.output
    assert shown.stderr == resolved  # was: "cannot open read-only: … not a valid DuckDB file"
    assert "Table 1" in shown.stdout
    query = "SELECT count(*) AS n FROM questions"
    as_csv = runner.invoke(app, ["sql", str(experiment), query, "--format", "csv"])
    assert as_csv.exit_code == 0, as_csv.output
    assert as_csv.stdout == f"n\n{len(small_cohort.questions)}\n"  # the data alone on stdout
    assert as_csv.stderr == resolved
    given_the_store = runner.invoke(app, ["sql", str(store), query])
    assert given_the_store.exit_code == 0 and given_the_store.stderr == ""


def test_run_given_a_store_runs_the_experiment_it_names_else_asks_for_the_toml(
    tmp_path: Path,
    small_cohort: Cohort,
    small_root: DataRoot,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from runner.cli import _run
    from runner.store import GridRow, Registration, Store

    store = tmp_path / "exp.duckdb"
    write_cohort(store, small_cohort)  # a cohort built alone: no run has named its file
    code, err = _console(capfd, monkeypatch, "run", str(store))
    assert code == 2 and err == [
        f"groundbench: {store} is a store; run takes the experiment file (the TOML that "
        "names this store)"
    ]
    experiment = _experiment_file(tmp_path, small_root.images)
    with Store(store) as s:  # as a run of it leaves the store
        s.register(
            [Registration("q", "a" * 64, "qwen", "m", 1, "{}")],
            [
                GridRow(
                    configuration="q",
                    condition="base",
                    budget=8,
                    qid=small_cohort.questions[0].qid,
                    attempts=1,
                )
            ],
            experiment=experiment,
        )
    ran: list[Path] = []

    def run_in_view(loaded: object, where: Path, options: object) -> object:
        ran.append(where)
        return type("Report", (), {"done": True})()

    monkeypatch.setattr(_run, "run_in_view", run_in_view)
    code, err = _console(capfd, monkeypatch, "run", str(store))
    assert code == 0 and ran == [experiment]
    assert err == [f"store {store} → experiment {experiment}"]


def test_help_imports_none_of_the_packages_the_commands_use() -> None:
    """`groundbench --help` took 5.7 s on a loaded machine, importing every package a command
    might need; the commands now import theirs when they run."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, runner.cli; print(*sys.modules)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    heavy = {
        "conditions", "scoring", "duckdb", "ray", "aiohttp", "numpy", "shapely", "matplotlib",
        "runner.store", "runner.experiment", "runner.backends", "runner.simulator",
    }  # fmt: skip
    assert heavy.isdisjoint(loaded), heavy.intersection(loaded)
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "--help"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0
    assert "report" in done.stdout and "data" in done.stdout


def test_the_defaults_help_shows_are_their_sources() -> None:
    from conditions import CohortSpec, SynthSpec
    from runner import demo
    from runner.cli import _common as cli
    from runner.store import MAX_QUERY_TIMEOUT_S, QUERY_TIMEOUT_S

    assert SynthSpec.images == cli.SYNTH_IMAGES
    assert CohortSpec().seed == cli.COHORT_SEED
    assert (demo.IMAGES, demo.PER_SOURCE) == (cli.DEMO_IMAGES, cli.DEMO_PER_SOURCE)
    assert (cli.QUERY_TIMEOUT, cli.MAX_QUERY_TIMEOUT) == (QUERY_TIMEOUT_S, MAX_QUERY_TIMEOUT_S)
