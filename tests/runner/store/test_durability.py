"""The store checkpoints as it writes, a torn write at the end of its log costs only what came
after the damage (never the store), and a log cut short says how many rows it lost."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import runner.store._repository as store_module
from runner.store import (
    BatchRecord,
    GridRow,
    Registration,
    Repository,
    ScoreRow,
    query_store,
    read_only,
)
from runner.store._written import Note, Written, noted
from tests.runner.console import run_console
from tests.runner.store.locks import lock_held

QIDS = [f"q{i}" for i in range(1, 7)]

# A run killed after six single-row writes: three checkpointed, three only in the log.
_KILLED_RUN = """
import os, sys
from runner.store import GridRow, Registration, Repository
from tests.runner.store.rows import attempt_row
store = Repository(sys.argv[1])
store.register([Registration("cfg", "a" * 64, "qwen", "m", 3, "{{}}")],
               [GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3)
                for q in {qids!r}])
for qid in {qids!r}[:3]:
    store.write_responses([attempt_row(qid)])
store._con.execute("CHECKPOINT")
for qid in {qids!r}[3:]:
    store.write_responses([attempt_row(qid)])
os._exit(0)  # no close, no checkpoint: the last three rows live only in the log
"""


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One killed run's store and log, for each test to copy: a process start is seconds."""
    path = tmp_path_factory.mktemp("killed") / "exp.duckdb"
    repo = Path(__file__).resolve().parents[3]
    subprocess.run(
        [sys.executable, "-c", _KILLED_RUN.format(qids=QIDS), str(path)], check=True, cwd=repo
    )
    assert Path(f"{path}.wal").stat().st_size > 0
    return path


def _killed_run(killed: Path, path: Path) -> Path:
    """A copy of the killed run's store at ``path``; its log's path."""
    wal = Path(f"{path}.wal")
    shutil.copyfile(killed, path)
    shutil.copyfile(f"{killed}.wal", wal)
    return wal


def _tear(wal: Path) -> None:
    """Zero the last 100 bytes of the log: the last entry fails its checksum."""
    data = wal.read_bytes()
    wal.write_bytes(data[:-100] + b"\0" * 100)


def _answered(path: Path) -> set[str]:
    with read_only(path) as con:
        return {r[0] for r in con.execute("SELECT qid FROM responses").fetchall()}


def test_a_killed_run_keeps_every_row_its_intact_log_holds(killed: Path, tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    _killed_run(killed, path)
    assert _answered(path) == set(QIDS)


@pytest.mark.parametrize("opener", ["store", "read-only", "sql"])
def test_a_torn_log_loses_only_what_came_after_the_damage(
    killed: Path, tmp_path: Path, opener: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "exp.duckdb"
    wal = _killed_run(killed, path)
    size = wal.stat().st_size
    _tear(wal)
    torn = wal.read_bytes()
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        if opener == "store":
            Repository(path).close()
        elif opener == "read-only":
            read_only(path).close()
        else:
            assert query_store(path, "SELECT count(*) FROM grid")[1] == [(len(QIDS),)]
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"groundbench: {path}: its write-ahead log was damaged at byte ")
    assert warning.endswith(
        f"of {size:,} (a torn write?); what it logged before that is kept, the rest is lost; "
        "the damaged log is saved as exp.duckdb.wal.damaged"
    )
    assert Path(f"{wal}.damaged").read_bytes() == torn  # kept whole, beside the store
    kept = _answered(path)
    assert set(QIDS[:3]) <= kept < set(QIDS)  # the checkpointed rows, and what preceded the tear


def _with_note(killed: Path, path: Path) -> Path:
    """A copy of the killed run's store and log, with the note of what it wrote."""
    wal = _killed_run(killed, path)
    note = Path(f"{killed}.written")
    if note.exists():  # (a store that keeps none fails on what the tests ask of it)
        shutil.copyfile(note, f"{path}.written")
    return wal


def test_a_log_cut_in_half_says_how_many_responses_are_lost_and_keeps_the_store_as_found(
    killed: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.runner.store.rows import attempt_row

    path = tmp_path / "exp.duckdb"
    wal = _with_note(killed, path)
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size // 2])  # no checksum fails: cut
    cut, found = wal.read_bytes(), path.read_bytes()
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        store = Repository(path)
    # The copy was made by another process: closing a descriptor of the file here would have
    # dropped this process's lock on it, and a second run could open the live store.
    assert lock_held(path)
    kept = {p.qid for p in store.pending()} ^ set(QIDS)  # no row: pending again, sent again
    store.close()
    lost = len(QIDS) - len(kept)
    assert set(QIDS[:3]) <= kept and lost > 0  # the checkpointed rows, and the log's first
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"groundbench: {path}: the store holds fewer rows than were ")
    assert f": {lost} of {len(QIDS)} responses written are lost; " in warning
    assert "are pending again: a rerun sends them again, and they are paid twice; " in warning
    assert warning.endswith("the store as it opened is copied to exp.duckdb.damaged (with its log)")
    assert Path(f"{path}.damaged").read_bytes() == found  # as DuckDB found them, before any
    assert Path(f"{path}.damaged.wal").read_bytes() == cut  # write cut the log at its end
    assert _answered(path) == kept
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="groundbench.store"), Repository(path) as store:
        # Said once (the store holds what its note says now), and the run goes on.
        assert len(store.write_responses([attempt_row(q) for q in set(QIDS) - kept])) == lost
    assert caplog.records == []
    assert _answered(path) == set(QIDS)
    assert not Path(f"{path}.damaged.1").exists()  # one copy, of the store that lost rows


@pytest.mark.parametrize("reader", ["read-only", "sql"])
def test_a_log_cut_in_half_is_said_by_a_reading_too_which_changes_nothing(
    killed: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, reader: str
) -> None:
    path = tmp_path / "exp.duckdb"
    wal = _with_note(killed, path)
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size // 2])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        if reader == "sql":
            (count,) = query_store(path, "SELECT count(*) FROM responses")[1][0]
        else:
            count = len(_answered(path))
    lost = len(QIDS) - count
    (warning,) = [r.getMessage() for r in caplog.records]  # what a report of it would lack
    assert warning.startswith(f"groundbench: {path}: the store holds fewer rows than were ")
    assert f": {lost} of {len(QIDS)} responses written are missing from what this reads; " in (
        warning
    )
    assert lost > 0 and "\n" not in warning
    # A reading writes nothing: the log and the note stay as found, for the run to copy.
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_link_at_the_notes_name_or_the_copys_is_never_written_through(
    killed: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "exp.duckdb"
    wal = _with_note(killed, path)
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size // 2])
    claimed = noted(path)
    # Someone who may write beside the store plants links: the copy's name points at a file
    # not yet made, and (after the copy) the note's name at a file of the user's.
    elsewhere, victim = tmp_path / "elsewhere", tmp_path / "victim.txt"
    Path(f"{path}.damaged").symlink_to(elsewhere)
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        Repository(path).close()
    assert not elsewhere.exists()  # the copy went to the next free name instead
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.endswith("copied to exp.duckdb.damaged.1 (with its log)")
    assert claimed is not None and Path(f"{path}.damaged.1").stat().st_size > 0
    victim.write_text("the user's own words\n")
    Path(f"{path}.written").unlink()
    Path(f"{path}.written").symlink_to(victim)
    assert noted(path) is None  # a link claims nothing
    Repository(path).close()
    assert victim.read_text() == "the user's own words\n"


def test_an_intact_log_is_no_loss_and_no_copy(
    killed: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "exp.duckdb"
    _with_note(killed, path)
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        Repository(path).close()
    assert caplog.records == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.duckdb", "exp.duckdb.written"]
    assert _answered(path) == set(QIDS)


def test_a_note_beside_a_store_made_anew_is_not_a_loss(
    killed: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "exp.duckdb"
    _with_note(killed, path)
    path.unlink()  # the user starts again: the note is of the store deleted
    Path(f"{path}.wal").unlink()
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        Repository(path).close()
    assert caplog.records == []
    assert not Path(f"{path}.damaged").exists()


def test_the_note_claims_only_what_is_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runner.store.rows import attempt_row

    path = tmp_path / "exp.duckdb"
    in_flight: list[Written | None] = []
    register = Repository._register_configurations

    def registering(store: Repository, configurations: list[Registration]) -> object:
        in_flight.append(noted(path))  # as the transaction that may drop scores begins
        return register(store, configurations)

    monkeypatch.setattr(Repository, "_register_configurations", registering)

    def registration(reading: str) -> Registration:
        return Registration("cfg", "a" * 64, "qwen", "m", 3, "{}", reading)

    with Repository(path) as store:
        assert noted(path) == Written(0, 0, 0)
        store.register(
            [registration("pixels")],
            [
                GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3)
                for q in QIDS
            ],
        )
        store.write_responses([attempt_row(q) for q in QIDS[:3]])
        store.write_responses([attempt_row(QIDS[3])])
        store.write_scores(
            [ScoreRow.of(j.key, parseable=True) for j in store.unscored_answers()[:2]], []
        )
        store.record_batch(_batch(), [])
        assert noted(path) == Written(4, 2, 1)
        store.register(
            [registration("unit")],
            [
                GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3)
                for q in QIDS
            ],
        )
        assert in_flight[-1] == Written(4, 0, 1)  # lowered before: a crash inside is no loss
        assert noted(path) == Written(4, 0, 1)  # the scores dropped by the new reading


def test_lost_scores_and_batches_are_named_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "exp.duckdb"
    Repository(path).close()
    Note(path).write(Written(7, 5, 2))  # what a store that lost its whole log had written
    with caplog.at_level(logging.WARNING, logger="groundbench.store"):
        Repository(path).close()
    (warning,) = [r.getMessage() for r in caplog.records]
    assert (
        ": 7 of 7 responses written, 5 of 5 scores (made again, no call), 2 of 2 batches "
        "recorded (one sent still runs at its provider: cancel it there) are lost; "
    ) in warning
    assert Path(f"{path}.damaged").exists() and not Path(f"{path}.damaged.wal").exists()


def test_a_store_in_memory_keeps_no_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Repository(":memory:") as store:
        store.register(
            [Registration("cfg", "a" * 64, "qwen", "m", 3, "{}")],
            [
                GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3)
                for q in QIDS
            ],
        )
    assert list(tmp_path.iterdir()) == []


def _batch() -> BatchRecord:
    return BatchRecord(
        id="gb-1", backend="b", provider="qwen", model="m", base_url="https://x.example/v1",
        api_key_env="DASHSCOPE_API_KEY", phase="preparing", requests=0,
        created_at=datetime.now(UTC),
    )  # fmt: skip


def test_the_store_checkpoints_every_few_thousand_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runner.store.rows import attempt_row

    monkeypatch.setattr(store_module, "CHECKPOINT_ROWS", 4)
    path = tmp_path / "exp.duckdb"
    wal = Path(f"{path}.wal")
    with Repository(path) as store:
        store.register(
            [Registration("cfg", "a" * 64, "qwen", "m", 3, "{}")],
            [
                GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3)
                for q in QIDS
            ],
        )
        for qid in QIDS[:3]:
            store.write_responses([attempt_row(qid)])
        assert wal.exists() and wal.stat().st_size > 0  # three rows: still only logged
        store.write_responses([attempt_row(QIDS[3])])  # the fourth: checkpointed
        assert not wal.exists() or wal.stat().st_size == 0


# --- a damaged store file: one line from every command that reads it ---------------------------

_BLOCK = 262_144  # DuckDB's block; the file's three 4 KiB headers come first
_SQL = "SELECT count(*), max(answer), max(error_message) FROM responses"


def test_a_damaged_store_file_is_one_line_from_sql_and_report(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runner.store.rows import attempt_row

    pristine = tmp_path / "pristine.duckdb"
    with Repository(pristine) as store:
        store.register(
            [Registration("cfg", "a" * 64, "qwen", "m", 3, "{}")],
            [
                GridRow(configuration="cfg", condition="base", budget=8, qid=f"q{i}", attempts=3)
                for i in range(200)
            ],
        )
        store.write_responses([attempt_row(f"q{i}") for i in range(200)])
    blocks = (pristine.stat().st_size - 12_288) // _BLOCK
    failed: list[int] = []
    for offset in [12_288 + 100] + [12_288 + k * _BLOCK + 100 for k in range(1, blocks)]:
        path = tmp_path / f"at-{offset}.duckdb"
        data = bytearray(pristine.read_bytes())
        data[offset : offset + 4096] = b"\xa5" * 4096
        path.write_bytes(data)
        commands = [["sql", str(path), _SQL]]
        if offset == 12_288 + 100:  # the report reads the catalogue first, as sql does
            commands.append(["report", str(path)])
        for command in commands:
            code, stderr = run_console(capfd, monkeypatch, *command)
            if code in (0, None):
                continue  # the damage lies where this command does not read
            lines = stderr.strip().splitlines()
            assert code == 2 and len(lines) == 1, (offset, command, stderr)
            assert lines[0].startswith(f"groundbench: {path}: "), lines[0]
            if "Corrupt database file" in lines[0]:
                assert lines[0].endswith("the file is damaged: restore it from a copy")
                failed.append(offset)
    assert 12_288 + 100 in failed  # the first block (the catalogue) is read by every command
    assert len(set(failed)) >= 2  # and at least one block of rows, read by the query
