"""``report`` and ``show`` while a run holds the store: they read a snapshot the run's store
makes in one transaction, say so in one line, and leave no copy behind; a run that sends
anything else is one line, exit 2.

The run here is another process holding the file through the store actor's class, which
serves its snapshots over a pipe as the actor does over Ray (the Ray path is in
tests/runner/distributed/test_run.py)."""

from __future__ import annotations

import contextlib
import pickle
import re
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conditions import Cohort, DataRoot
from runner.cli import app
from runner.reports import load_report_data
from runner.reports._tables import unsettled_why
from runner.store import Held, read_only
from tests.runner.console import run_console
from tests.runner.overlays.stores import write_scored_store

runner = CliRunner()

# Holds the store open for writing, as a run's store actor does, and answers each line on its
# stdin with a snapshot from StoreActor.snapshot, pickled as Ray would carry it.
_HOLDER = """
import pickle, struct, sys
from runner.distributed._store_actor import StoreActor
from runner.store import Store
actor = StoreActor.serving(Store(sys.argv[1]))
print("ready", flush=True)
for line in sys.stdin:
    sent = pickle.dumps(actor.snapshot(60.0, line.strip()))
    sys.stdout.buffer.write(struct.pack(">Q", len(sent)) + sent)
    sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort, small_root: DataRoot
) -> tuple[Path, list[str], int]:
    """The scored store, its questions, and its answers."""
    path = tmp_path_factory.mktemp("snap") / "exp.duckdb"
    qids = write_scored_store(path, small_cohort, small_root.images)
    with read_only(path) as con:
        (answers,) = con.execute(
            "SELECT count(*) FROM responses WHERE outcome = 'answer'"
        ).fetchone()  # type: ignore[misc]
    return path, qids, int(answers)


@contextlib.contextmanager
def held(path: Path) -> Iterator[tuple[Callable[[Path], Held], int]]:
    """``path`` held by another process; what the CLI asks the run for, served by it, and
    that process."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert holder.stdin is not None and holder.stdout is not None
    stdin, stdout = holder.stdin, holder.stdout

    def take(asked: Path) -> Held:
        assert asked == path
        stdin.write(b"token\n")
        stdin.flush()
        (size,) = struct.unpack(">Q", stdout.read(8))
        return Held(pickle.loads(stdout.read(size)), holder.pid)

    try:
        assert stdout.readline().strip() == b"ready"
        yield take, holder.pid
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder every temporary file of the command goes under."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _line(pid: int, answers: int) -> re.Pattern[str]:
    return re.compile(
        rf"the store is held by a run \(pid {pid}\): reporting from a snapshot taken at "
        rf"\d\d:\d\d:\d\d, {answers:,} answers\n"
    )


def _rows(output: str) -> list[str]:
    """The rows of every table printed, headers included."""
    return [line for line in output.splitlines() if "│" in line or "┃" in line]


def test_report_during_a_run_reads_a_snapshot_and_leaves_none(
    store: tuple[Path, list[str], int],
    tmp_path: Path,
    temp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tables are the store's, after one line saying they come from a snapshot; the HTML
    report names the store, not its copy; the copy is gone."""
    path, _, answers = store
    free = runner.invoke(app, ["report", str(path)])
    assert free.exit_code == 0, free.output
    assert "snapshot" not in free.output
    with held(path) as (take, pid):
        monkeypatch.setattr("runner.cli._report.snapshot_of_run", take)
        result = runner.invoke(app, ["report", str(path), "--html", str(tmp_path / "html")])
    assert result.exit_code == 0, result.output
    said = _line(pid, answers).match(result.output)
    assert said is not None, result.output[:300]
    # The same tables; the requests left are said to be running, not left for another run.
    assert _rows(result.output) == _rows(free.output) != []
    with read_only(path) as con:
        left = load_report_data(con).headline.open_requests
    running = unsettled_why({"running": sum(left.values())})
    assert running in " ".join(result.output.split())
    assert "again to finish" not in result.output
    index = (tmp_path / "html" / "index.html").read_text()
    assert "GroundBench report: exp.duckdb" in index
    assert "snapshot.duckdb" not in index
    assert list(temp.iterdir()) == []


def test_show_during_a_run_draws_from_a_snapshot(
    store: tuple[Path, list[str], int],
    tmp_path: Path,
    temp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, qids, answers = store
    out = tmp_path / "one.png"
    args = ["show", str(path), qids[0], "--configuration", "qwen", "--budget", "8"]
    with held(path) as (take, pid):
        monkeypatch.setattr("runner.cli._show.snapshot_of_run", take)
        result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = _line(pid, answers).match(result.output)
    assert said is not None, result.output[:300]
    assert result.output[said.end() :].startswith(f"wrote {out}")
    assert out.stat().st_size > 0
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize("command", ["report", "show"])
def test_a_run_that_sends_garbage_is_one_line(
    store: tuple[Path, list[str], int],
    temp: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    path, qids, _ = store
    args = [command, str(path)] + ([qids[0]] if command == "show" else [])
    with held(path):
        garbage = Held(b"\x00garbage", 7)
        monkeypatch.setattr(f"runner.cli._{command}.snapshot_of_run", lambda _: garbage)
        code, stderr = run_console(capfd, monkeypatch, *args)
    assert code == 2
    assert stderr == (
        f"groundbench: {path}: the run that holds the file sent no usable snapshot (a bytes, "
        "not a copy of a store); report once the run has ended\n"
    )
    assert list(temp.iterdir()) == []


def test_a_file_held_by_no_run_is_one_line(
    store: tuple[Path, list[str], int],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Held by a process that noted no run beside the store: nothing to ask for a snapshot."""
    path, _, _ = store
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with held(path):
        code, stderr = run_console(capfd, monkeypatch, "report", str(path))
    assert code == 2
    # (The second where this process joined a Ray of its own earlier: a suite's run tests.)
    said = ("no run of this experiment is going", "no groundbench run of it is going")
    assert stderr.startswith(f"groundbench: {path}: ")
    assert any(s in stderr for s in said), stderr
    assert stderr.count("\n") == 1
