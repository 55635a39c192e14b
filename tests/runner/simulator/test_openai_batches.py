"""The simulator's OpenAI batch endpoints: validation, cancelling, listing, files on disk, what
is paid, and the official ``openai`` SDK reading them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from conditions import Cohort, DataRoot, VariantCache
from runner.backends import ApiKey, Fatal, Origin
from runner.batch._openai import OpenAIBatches
from runner.simulator import BatchFaults, Simulator, serving
from tests.runner.batch.sought import sought
from tests.runner.batch.test_openai_batches import (
    QWEN_PROVIDER,
    Clock,
    _results,
    _run,
    _sim,
    _submit,
    _write,
)
from tests.runner.test_against_simulator import KEY, QWEN, _requests


@pytest.fixture
def cache(tmp_path: Path) -> VariantCache:
    return VariantCache(tmp_path / "variants")


def test_a_file_with_a_bad_line_or_a_repeated_id_fails_validation_with_its_lines(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock())
    requests = _requests(small_cohort, small_root, cache, QWEN, 2)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        path = tmp_path / "in.jsonl"
        line = bytes(api.line("same", requests[0]))
        path.write_bytes(line + b"{not json\n" + line)
        batch = await _submit(api, path, "bad")
        return batch, await api.get(batch.id)

    created, failed = _run(sim, body)
    assert created.state == "validating" and failed.state == "failed"
    assert failed.message is not None
    assert "line 2" in failed.message and "line 3: duplicate custom_id" in failed.message
    assert sim.stats.paid == {} and sim.stats.submitted == {}


def test_too_many_lines_fail_the_batch_and_too_many_bytes_refuse_the_upload(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    faults = BatchFaults(max_requests=2, max_file_bytes=200_000)
    sim = _sim(small_cohort, small_root, cache, Clock(), batch=faults)
    requests = _requests(small_cohort, small_root, cache, QWEN, 3)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        path = tmp_path / "in.jsonl"
        path.write_bytes(b"".join(bytes(api.line(f"id-{n}", r)) for n, r in enumerate(requests)))
        assert path.stat().st_size <= 200_000, "the test needs a small file"
        batch = await api.get((await _submit(api, path, "many")).id)
        big = tmp_path / "big.jsonl"
        big.write_bytes(b"x" * 200_001)
        with pytest.raises(Fatal) as refused:
            await api.upload(big, "big")
        return batch, refused.value

    batch, refused = _run(sim, body)
    assert batch.state == "failed" and "at most 2" in (batch.message or "")
    assert refused.status == 400


def test_a_cancelled_batch_answers_nothing_and_says_so_per_line(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _requests(small_cohort, small_root, cache, QWEN, 4)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        batch = await _submit(api, tmp_path / "in.jsonl", "c")
        cancelling = await api.cancel(batch.id)
        clock.now = 5.0  # past the turnaround: cancelled all the same
        cancelled = await api.get(batch.id)
        return cancelling, cancelled, await _results(api, cancelled)

    cancelling, cancelled, lines = _run(sim, body)
    assert cancelling.state == "cancelling" and cancelled.state == "cancelled"
    assert len(lines) == 4 and all(not r.ran and r.error is None for r in lines)
    assert sim.stats.paid == {}


def test_the_list_pages_newest_first_and_files_live_on_disk_until_shutdown(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock())
    requests = _requests(small_cohort, small_root, cache, QWEN, 1)
    headers = {"Authorization": f"Bearer {KEY}"}

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        file_id = await api.upload(tmp_path / "in.jsonl", "in")
        made = [(await api.create(file_id, f"t{n}")).id for n in range(5)]
        pages = []
        after = None
        while True:
            query = {"limit": "2"} | ({"after": after} if after else {})
            async with session.get(url + "/v1/batches", params=query, headers=headers) as r:
                page = await r.json()
            pages.append([b["id"] for b in page["data"]])
            if not page["has_more"]:
                break
            after = page["last_id"]
        directory = sim.openai_batches._dir
        assert directory is not None and (directory / file_id).is_file()
        await api.delete_file(file_id)
        await api.delete_file(file_id)  # gone already: deleted all the same
        assert not (directory / file_id).exists()
        return made, pages, directory

    made, pages, directory = _run(sim, body)
    assert pages == [made[4:2:-1], made[2:0:-1], made[:1]]
    assert not directory.exists()  # the server shut down: its files went with it


def test_a_deleted_files_id_is_never_given_to_another_upload(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    """A client finds a batch whose create answer it lost by its input file: an id reused
    after a delete would find another batch (OpenAI's ids are never reused)."""
    sim = _sim(small_cohort, small_root, cache, Clock())
    requests = _requests(small_cohort, small_root, cache, QWEN, 1)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        uploaded = [await api.upload(tmp_path / "in.jsonl", f"f{n}") for n in range(3)]
        made = await api.create(uploaded[-1], "made")
        for file_id in uploaded:  # files go; their batches stay
            await api.delete_file(file_id)
        again = await api.upload(tmp_path / "in.jsonl", "again")
        return uploaded, again, made, await api.find(sought("again", again))

    uploaded, again, made, found = _run(sim, body)
    assert again not in uploaded and made.id is not None
    assert found is None  # no batch of the new file yet, so none is found


def test_a_batch_pays_each_line_once(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock, batch=BatchFaults(turnaround_s=0.0))
    requests = _requests(small_cohort, small_root, cache, QWEN, 5)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        ids = _write(api, requests, tmp_path / "in.jsonl")
        batch = await _submit(api, tmp_path / "in.jsonl", "p")
        for _ in range(3):  # looking again answers nothing again
            ended = await api.get(batch.id)
        await api.find(sought("p", None))
        return ids, await _results(api, ended)

    ids, lines = _run(sim, body)
    assert len(lines) == 5 and all(r.reply is not None for r in lines)
    assert sum(sim.stats.paid.values()) == 5 and sim.stats.paid_twice == 0
    assert dict(sim.stats.submitted) == dict.fromkeys(ids, 1)


def test_the_official_sdk_reads_the_simulators_batches(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    openai = pytest.importorskip("openai")
    sim = _sim(small_cohort, small_root, cache, Clock(), batch=BatchFaults(turnaround_s=0.0))
    requests = _requests(small_cohort, small_root, cache, QWEN, 3)
    x = Origin.of("http://x")
    api = OpenAIBatches(None, QWEN_PROVIDER, QWEN.model, "http://x", ApiKey(KEY), origin=x)  # type: ignore[arg-type]
    ids = _write(api, requests, tmp_path / "in.jsonl")

    async def main() -> tuple[Any, Any, Any, bytes]:
        async with serving(sim) as url:
            client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
            with (tmp_path / "in.jsonl").open("rb") as f:
                uploaded = await client.files.create(file=f, purpose="batch")
            made = await client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                completion_window="24h", metadata={"groundbench": "sdk"},
            )  # fmt: skip
            ended = await client.batches.retrieve(made.id)
            listed = [b async for b in client.batches.list(limit=1)]
            content = await client.files.content(ended.output_file_id)
            await client.close()
            return made, ended, listed, content.content

    made, ended, listed, content = asyncio.run(main())
    assert made.status == "validating" and made.metadata == {"groundbench": "sdk"}
    assert ended.status == "completed" and ended.request_counts.completed == 3
    assert [b.id for b in listed] == [made.id]
    out = [json.loads(line) for line in content.splitlines()]
    assert sorted(o["custom_id"] for o in out) == sorted(ids)
    assert all(o["response"]["status_code"] == 200 for o in out)


def test_simulator_keeps_its_batch_service(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(small_cohort, small_root.images, cache)
    assert sim.openai_batches.sim is sim
