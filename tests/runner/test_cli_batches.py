"""``groundbench batches``: the ledger's batches listed, and open ones cancelled at the provider
(the simulator on loopback here), the key never shown. A cancel reads the key variable the
experiment file names and sends it only to that backend's base_url: what the store names is
checked against it, never used (a listener at the store's address counts what reaches it)."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner, Result

from conditions import Cohort, DataRoot, VariantCache
from runner._errors import ConfigError
from runner.backends import ApiKey, Origin, provider_named
from runner.batch._openai import OpenAIBatches
from runner.cli import app
from runner.simulator import SimSpec, Simulator, serving
from runner.store import BatchKey, BatchRecord, Store
from tests.runner.backends.loopback import Listener, listening
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
    return BatchKey(
        batch=tag,
        custom_id=f"{tag}-line",
        configuration="qwen",
        condition="plain",
        budget=8,
        qid="q1",
        attempt=0,
    )


def _store(path: Path, *records: BatchRecord) -> Path:
    with Store(path) as store:
        for record in records:
            store.repository.record_batch(record, [_key(record.id)])
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


def _experiment(path: Path, store: Path, images: Path, base_url: str) -> Path:
    """An experiment whose batch backend ``qwen-batch`` reads :data:`KEY_ENV` and sends to
    ``base_url``."""
    path.write_text(
        f'store = "{store}"\nimages = "{images}"\n'
        f'[backends.qwen-batch]\nprovider = "qwen"\nmodel = "{QWEN.model}"\nmode = "batch"\n'
        f'base_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
        '[[configurations]]\nname = "q"\nbackend = "qwen-batch"\n'
    )
    return path


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
                                ApiKey(KEY), origin=Origin.of(url))  # fmt: skip
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
            experiment = _experiment(tmp_path / "exp.toml", store, small_root.images, url + "/v1")
            cancelled = await asyncio.to_thread(
                runner.invoke, app, ["batches", str(experiment), "--cancel"]
            )
            # The simulator ends a cancelling batch at its next look; a second cancel looks.
            after = await api.cancel(remote.id)
            listed = await asyncio.to_thread(runner.invoke, app, ["batches", str(experiment)])
            return cancelled, listed, after.state

    cancelled, listed, state = asyncio.run(main())
    assert state == "cancelled"
    assert cancelled.exit_code == 1, cancelled.output  # the other address's batch: refused
    lines = cancelled.output.splitlines()
    assert len(lines) == 2 and "batch_done" not in cancelled.output
    assert "gb-gone" in lines[0] and "refused to send the key to http://127.0.0.1:" in lines[0]
    assert "gb-live" in lines[1] and lines[1].endswith(": cancelling")
    live = next(line for line in listed.output.splitlines() if "gb-live" in line)
    assert "cancelling" in live
    for output in (cancelled.output, listed.output):
        assert KEY not in output and KEY[:12] not in output


OTHER_ENV = "GB_TEST_SOME_OTHER_SECRET"
OTHER_SECRET = "another-secret-of-this-shell-0123456789"


def _forged(store: Path, evil: str) -> Path:
    """A store whose open batches name another key variable, another address, another backend."""
    return _store(
        store,
        _record("gb-var", base_url=evil + "/v1", api_key_env=OTHER_ENV, remote_id="batch_1"),
        _record("gb-url", base_url=evil + "/v1", remote_id="batch_2"),
        _record("gb-backend", backend="elsewhere", base_url=evil + "/v1", remote_id="batch_3"),
    )


def _cancel_with(args: list[str], tmp_path: Path, images: Path) -> tuple[Result, Listener]:
    hostile = Listener(status=200)

    async def main() -> Result:
        async with listening(hostile) as evil:
            _forged(tmp_path / "exp.duckdb", evil)
            _experiment(tmp_path / "exp.toml", tmp_path / "exp.duckdb", images, _dead_url())
            return await asyncio.to_thread(runner.invoke, app, ["batches", *args, "--cancel"])

    return asyncio.run(main()), hostile


def test_cancel_reads_only_the_experiments_key_variable_and_sends_only_to_its_address(
    small_root: DataRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(OTHER_ENV, OTHER_SECRET)
    done, hostile = _cancel_with([str(tmp_path / "exp.toml")], tmp_path, small_root.images)
    assert hostile.seen == []  # not one request reached the store's address
    assert done.exit_code == 1, done.output
    lines = done.output.splitlines()
    assert len(lines) == 3
    var, url, backend = (next(line for line in lines if f"{tag} " in line)
                         for tag in ("gb-var", "gb-url", "gb-backend"))  # fmt: skip
    assert (
        f"the store names key variable {OTHER_ENV}, but backend qwen-batch reads {KEY_ENV}" in var
    )
    assert "refused to send the key to http://127.0.0.1:" in url
    assert "the backend's base_url is at http://127.0.0.1:" in url
    assert "the experiment has no backend elsewhere" in backend
    assert OTHER_SECRET not in done.output and KEY not in done.output


def test_cancel_given_only_the_store_sends_nothing_and_asks_for_the_experiment(
    small_root: DataRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(OTHER_ENV, OTHER_SECRET)
    done, hostile = _cancel_with([str(tmp_path / "exp.duckdb")], tmp_path, small_root.images)
    assert hostile.carried(OTHER_SECRET) == 0 and hostile.seen == []
    assert isinstance(done.exception, ConfigError)
    message = str(done.exception)
    assert "batches --cancel takes the experiment file" in message and "\n" not in message
    assert OTHER_SECRET not in done.output


def test_an_older_stores_hostile_ids_and_states_are_shown_short_and_without_the_key(
    small_root: DataRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 37: an older version stored a server's id and state as given, and printed them.
    monkeypatch.setenv(KEY_ENV, KEY)
    dead = _dead_url()
    echoed = _record("gb-echoed", base_url=dead, remote_id=f"batch_{KEY}",
                     state="in_progress", provider_state="running\n" + "x" * 200_000)  # fmt: skip
    huge = _record("gb-huge", base_url=dead, remote_id="batch_" + "y" * 10_000,
                   state="in_progress", provider_state=f"in_progress {KEY}")  # fmt: skip
    store = _store(tmp_path / "exp.duckdb", echoed, huge)
    listed = runner.invoke(app, ["batches", str(store)])
    experiment = _experiment(tmp_path / "exp.toml", store, small_root.images, dead)
    cancelled = runner.invoke(app, ["batches", str(experiment), "--cancel"])
    assert listed.exit_code == 0 and cancelled.exit_code == 1, cancelled.output
    lines = cancelled.output.splitlines()
    assert len(lines) == 2 and all("bad-id" in line and len(line) < 600 for line in lines)
    assert "holds the API key" in lines[0] and "of 10,006 characters" in lines[1]
    for output in (listed.output, cancelled.output):
        assert KEY not in output and KEY[12:24] not in output and len(output) < 5_000
