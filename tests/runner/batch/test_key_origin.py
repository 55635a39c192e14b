"""A batch-mode backend sends its key only to its configured base_url's origin: a batch the store
recorded at another address is left open and never polled (the run says so in one line), and
each wire refuses a keyed request to another origin at the one place it attaches the key.
Against the simulator on loopback, with a real store and no Ray; a listener on another loopback
port counts what reaches it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from conditions import Cohort, DataRoot, VariantCache, task_of
from runner.backends import ApiKey, OffOrigin, Origin, call_id, provider_named
from runner.batch import BatchSettings, RemoteBatch
from runner.batch._gemini import GeminiBatches
from runner.batch._openai import OpenAIBatches
from runner.distributed import StorePort
from runner.distributed._batch_worker import BatchSpec, BatchWorker
from runner.distributed._report import BatchReport
from runner.simulator import BatchFaults, SimSpec, Simulator, serving
from runner.store import BatchKey, BatchRecord
from runner.summary import batch_lines
from tests.runner.backends.loopback import Listener, listening, serving_posts
from tests.runner.batch.sought import sought
from tests.runner.distributed.test_worker import CLEAN, QWEN, _configuration, _setup, _store

KEY = "sk-origin-run-0123456789abcdef"
NOW = datetime(2025, 1, 2, 3, 4, tzinfo=UTC)


def _record(tag: str, base_url: str, remote_id: str) -> BatchRecord:
    return BatchRecord(
        id=tag, backend="qwen", provider="qwen", model=QWEN.model, base_url=base_url,
        api_key_env="GB_TEST_KEY", phase="submitted", remote_id=remote_id, requests=1,
        created_at=NOW,
    )  # fmt: skip


def test_a_run_sends_no_key_to_an_open_batch_the_store_recorded_at_another_address(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    sim = Simulator(
        small_cohort, small_root.images, VariantCache(tmp_path / "v"),
        SimSpec(behaviour=CLEAN, api_key=KEY, batch=BatchFaults(turnaround_s=0.0)),
    )  # fmt: skip
    hostile = Listener()
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    ours, theirs = store.repository.pending()[:2]

    async def main() -> tuple[BatchWorker, str]:
        async with serving(sim) as url, listening(hostile) as evil:
            configuration = _configuration(url + "/v1")
            builder = task_of(small_cohort).builder(small_root.images, VariantCache(tmp_path / "v"))
            request = builder.build(ours.request, configuration)
            custom = call_id(request, 0)
            async with aiohttp.ClientSession() as session:  # a batch of ours, at our simulator
                api = OpenAIBatches(session, provider_named("qwen"), QWEN.model, url + "/v1",
                                    ApiKey(KEY), origin=Origin.of(url))  # fmt: skip
                (tmp_path / "in.jsonl").write_bytes(bytes(api.line(custom, request)))
                remote = await api.create(
                    await api.upload(tmp_path / "in.jsonl", "gb-ours"), "gb-ours"
                )
            store.repository.record_batch(
                _record("gb-ours", url + "/v1", remote.id),
                [BatchKey.of(ours.attempt_key, batch="gb-ours", custom_id=custom)],
            )
            # A forged (or someone else's) store: an open batch at another address.
            store.repository.record_batch(
                _record("gb-forged", evil + "/v1", "batch_forged"),
                [BatchKey.of(theirs.attempt_key, batch="gb-forged", custom_id="forged-line")],
            )
            spec = BatchSpec("qwen", BatchSettings(poll_s=0.01), tmp_path / "spool", False)
            worker = BatchWorker(_setup(configuration, small_root.images, tmp_path / "v"),
                                 small_cohort, StorePort.local(store), lambda _: ApiKey(KEY),
                                 spec)  # fmt: skip
            try:
                await worker.collect_open()
            finally:
                await worker.close()
            return worker, evil

    worker, evil = asyncio.run(main())
    assert hostile.seen == []  # not one request, with the key or without
    (forged,) = store.repository.batches(ids=["gb-forged"])
    assert forged.phase == "submitted"  # left open: its request stays held, never sent again
    (collected,) = store.repository.batches(ids=["gb-ours"])
    assert collected.phase == "read" and collected.answered == 1  # ours: collected as ever
    outcome = worker.report()
    assert outcome.elsewhere == 1 and outcome.read == 1
    report = BatchReport(0, 1, 0, 0, 0.0, elsewhere=outcome.elsewhere,
                         elsewhere_why=outcome.elsewhere_why)  # fmt: skip
    line = batch_lines("qwen", 0.0, report)[-1]
    assert line.startswith("  backend qwen: batch gb-forged (1 request), recorded at another")
    assert (
        f"refused to send the key to {evil}: the backend's base_url is at http://127.0.0.1:" in line
    )
    assert "set base_url to it" in line
    assert KEY not in line and "\n" not in line


def _refused(api_at: str, origin: Origin, gemini: bool) -> tuple[list[str], Listener]:
    """Each keyed call of a wire made at ``api_at`` with the key bound to ``origin``."""
    hostile = Listener(status=200)

    async def main() -> list[str]:
        async with listening(hostile) as evil, aiohttp.ClientSession() as session:
            base = api_at.format(evil=evil)
            if gemini:
                api: OpenAIBatches | GeminiBatches = GeminiBatches(
                    session, "gemini-2.5-flash", base, ApiKey(KEY), origin=origin
                )
                batch, file = "batches/b1", "files/f1"
            else:
                api = OpenAIBatches(session, provider_named("qwen"), "m", base, ApiKey(KEY),
                                    origin=origin)  # fmt: skip
                batch, file = "batch_1", "file-1"
            ended = RemoteBatch(batch, "completed", "completed", output_file=file)
            calls = [api.get(batch), api.cancel(batch), api.find(sought("gb-x", None)),
                     api.delete_file(file), _drain(api, ended)]  # fmt: skip
            said = []
            for call in calls:
                with pytest.raises(OffOrigin) as refused:
                    await call
                said.append(refused.value.message)
            return said

    return asyncio.run(main()), hostile


async def _drain(api: OpenAIBatches | GeminiBatches, batch: RemoteBatch) -> None:
    async for _ in api.results(batch):
        pass


@pytest.mark.parametrize("gemini", [False, True], ids=["openai", "gemini"])
def test_each_wire_refuses_every_keyed_call_to_another_origin(gemini: bool) -> None:
    said, hostile = _refused("{evil}/v1beta", Origin.of("https://api.example.com"), gemini)
    assert hostile.seen == []
    for line in said:
        assert line.startswith("refused to send the key to http://127.0.0.1:")
        assert "the backend's base_url is at https://api.example.com" in line
        assert KEY not in line


def test_gemini_sends_the_file_to_no_upload_url_at_another_origin(tmp_path: Path) -> None:
    hostile = Listener(status=200)
    file = tmp_path / "in.jsonl"
    file.write_bytes(b'{"key": "a", "request": {}}\n')

    async def main() -> str:
        async with listening(hostile) as evil:

            async def start(request: web.Request) -> web.Response:
                await request.read()
                return web.Response(headers={"X-Goog-Upload-URL": f"{evil}/upload?id=1"})

            async with serving_posts(start) as good, aiohttp.ClientSession() as session:
                api = GeminiBatches(session, "gemini-2.5-flash", good + "/v1beta", ApiKey(KEY),
                                    origin=Origin.of(good))  # fmt: skip
                with pytest.raises(OffOrigin) as refused:
                    await api.upload(file, "gb-x")
                return refused.value.message

    line = asyncio.run(main())
    assert hostile.seen == [] and line.startswith("refused to send the key to http://127.0.0.1:")
