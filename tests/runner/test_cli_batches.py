"""``groundbench batches``: the ledger's batches listed, and open ones cancelled at the provider
(the simulator on loopback here), the key never shown."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner, Result

from conditions import Cohort, DataRoot, VariantCache
from runner.backends import ApiKey, provider_named
from runner.batch._openai import OpenAIBatches
from runner.cli import app
from runner.simulator import SimSpec, Simulator, serving
from runner.store import BatchKey, BatchRecord, Store
from tests.runner.test_against_simulator import CLEAN, KEY, QWEN, _requests

runner = CliRunner()
KEY_ENV = "GB_TEST_BATCH_KEY"
WHEN = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)


def _record(tag: str, **fields: object) -> BatchRecord:
    base = {"backend": "qwen-batch", "provider": "qwen", "model": QWEN.model,
            "base_url": "https://dashscope.example/v1", "api_key_env": KEY_ENV,
            "phase": "submitted", "requests": 1, "created_at": WHEN}  # fmt: skip
    return BatchRecord.model_validate({"id": tag, **base, **fields})


def _key(tag: str) -> BatchKey:
    return BatchKey(tag, f"{tag}-line", "qwen", "plain", 8, "q1", 0)


def _store(path: Path, *records: BatchRecord) -> Path:
    with Store(path) as store:
        for record in records:
            store.record_batch(record, [_key(record.id)])
    return path


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_lists_every_batch_oldest_first_and_counts_the_open_ones(tmp_path: Path) -> None:
    empty = _store(tmp_path / "empty.duckdb")
    assert runner.invoke(app, ["batches", str(empty)]).output.strip() == "no batches recorded"
    new = _record("gb-new", created_at=WHEN.replace(hour=5), state="in_progress",
                  provider_state="in_progress", remote_id="batch_2")  # fmt: skip
    counts = {"succeeded": 3, "failed": 1, "answered": 3, "errored": 1, "unrun": 0, "problems": 0}
    old = _record("gb-old", phase="read", state="completed", provider_state="completed",
                  remote_id="batch_1", requests=4, ended_at=WHEN, **counts)  # fmt: skip
    store = _store(tmp_path / "exp.duckdb", new, old)
    shown = runner.invoke(app, ["batches", str(store)])
    assert shown.exit_code == 0, shown.output
    rows = [line for line in shown.output.splitlines() if "gb-" in line]
    assert [r.split("│")[1].strip() for r in rows] == ["gb-old", "gb-new"]
    assert "3/1" in rows[0] and "3/1/0/0" in rows[0] and "completed" in rows[0]
    assert "in_progress" in rows[1] and "2025-01-02" in rows[1]
    assert shown.output.splitlines()[-1] == "2 batches, 1 open"


def test_cancel_cancels_the_open_batch_at_the_simulator_and_never_shows_the_key(
    small_cohort: Cohort,
    small_root: DataRoot,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    cache = VariantCache(tmp_path / "variants")
    sim = Simulator(small_cohort, small_root.images, cache,
                    SimSpec(behaviour=CLEAN, api_key=KEY), clock=lambda: 0.0)  # fmt: skip
    request = _requests(small_cohort, small_root, cache, QWEN, 1)[0]
    store = tmp_path / "exp.duckdb"

    async def main() -> tuple[Result, Result, str]:
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            api = OpenAIBatches(session, provider_named("qwen"), QWEN.model, url + "/v1",
                                ApiKey(KEY))  # fmt: skip
            (tmp_path / "in.jsonl").write_bytes(bytes(api.line("gb-live-line", request)))
            remote = await api.create(await api.upload(tmp_path / "in.jsonl", "gb-live"), "gb-live")
            _store(
                store,
                _record("gb-live", base_url=url + "/v1", remote_id=remote.id,
                        state=remote.state, provider_state=remote.provider_state),
                _record("gb-gone", base_url=_dead_url(), remote_id="batch_gone",
                        state="in_progress", created_at=WHEN.replace(hour=1)),
                _record("gb-done", phase="read", state="completed", remote_id="batch_done"),
            )  # fmt: skip
            cancelled = await asyncio.to_thread(
                runner.invoke, app, ["batches", str(store), "--cancel"]
            )
            # The simulator ends a cancelling batch at its next look; a second cancel looks.
            after = await api.cancel(remote.id)
            listed = await asyncio.to_thread(runner.invoke, app, ["batches", str(store)])
            return cancelled, listed, after.state

    cancelled, listed, state = asyncio.run(main())
    assert state == "cancelled"
    assert cancelled.exit_code == 1, cancelled.output  # the gone simulator's batch failed
    lines = cancelled.output.splitlines()
    assert len(lines) == 2 and "batch_done" not in cancelled.output
    assert "gb-gone" in lines[0] and "the simulator that held it ended with its run" in lines[0]
    assert "gb-live" in lines[1] and lines[1].endswith(": cancelling")
    live = next(line for line in listed.output.splitlines() if "gb-live" in line)
    assert "cancelling" in live
    for output in (cancelled.output, listed.output):
        assert KEY not in output and KEY[:12] not in output


def test_an_older_stores_hostile_ids_and_states_are_shown_short_and_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 37: an older version stored a server's id and state as given, and printed them.
    monkeypatch.setenv(KEY_ENV, KEY)
    echoed = _record("gb-echoed", base_url=_dead_url(), remote_id=f"batch_{KEY}",
                     state="in_progress", provider_state="running\n" + "x" * 200_000)  # fmt: skip
    huge = _record("gb-huge", base_url=_dead_url(), remote_id="batch_" + "y" * 10_000,
                   state="in_progress", provider_state=f"in_progress {KEY}")  # fmt: skip
    store = _store(tmp_path / "exp.duckdb", echoed, huge)
    listed = runner.invoke(app, ["batches", str(store)])
    cancelled = runner.invoke(app, ["batches", str(store), "--cancel"])
    assert listed.exit_code == 0 and cancelled.exit_code == 1, cancelled.output
    lines = cancelled.output.splitlines()
    assert len(lines) == 2 and all("bad-id" in line and len(line) < 600 for line in lines)
    assert "holds the API key" in lines[0] and "of 10,006 characters" in lines[1]
    for output in (listed.output, cancelled.output):
        assert KEY not in output and KEY[12:24] not in output and len(output) < 5_000
