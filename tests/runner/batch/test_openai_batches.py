"""OpenAIBatches against the simulator on loopback: a batch's answers are the online answers,
faults read as the online wire reads them, and no error holds the key."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web

from conditions import Cohort, DataRoot, Request, VariantCache
from runner.backends import (
    ApiKey,
    CallError,
    OpenAIChat,
    Origin,
    QuotaExhausted,
    RateLimited,
    Refused,
    Transient,
    Unreadable,
    Usage,
    provider_named,
)
from runner.batch import BatchApi, RemoteBatch, ResultLine
from runner.batch import _openai as wire
from runner.batch._openai import OpenAIBatches
from runner.simulator import BatchFaults, Faults, SimSpec, Simulator, serving
from tests.runner.batch.sought import sought
from tests.runner.test_against_simulator import CLEAN, KEY, QWEN, _requests

T = TypeVar("T")
QWEN_PROVIDER = provider_named("qwen")
OTHER_KEY = "sk-wrong-0123456789abcdefghijkl"


class Clock:
    """The simulator's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cache(tmp_path: Path) -> VariantCache:
    return VariantCache(tmp_path / "variants")


def _sim(
    cohort: Cohort, root: DataRoot, cache: VariantCache, clock: Clock, **spec: Any
) -> Simulator:
    spec = {"behaviour": CLEAN, "api_key": KEY, **spec}
    return Simulator(cohort, root.images, cache, SimSpec(**spec), clock=clock)


def _run(
    sim: Simulator,
    body: Callable[[OpenAIBatches, str, aiohttp.ClientSession], Awaitable[T]],
    key: str = KEY,
) -> T:
    async def main() -> T:
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            at = Origin.of(url)
            api = OpenAIBatches(
                session, QWEN_PROVIDER, QWEN.model, url + "/v1", ApiKey(key), origin=at
            )
            return await body(api, url, session)

    return asyncio.run(main())


def _write(api: BatchApi, requests: list[Request], path: Path) -> dict[str, Request]:
    ids = {f"gb-{i:04d}-{r.fingerprint[:12]}": r for i, r in enumerate(requests)}
    with path.open("wb") as f:
        for custom_id, request in ids.items():
            f.write(bytes(api.line(custom_id, request)))
    return ids


async def _results(api: BatchApi, batch: RemoteBatch) -> list[ResultLine]:
    return [line async for line in api.results(batch)]


async def _submit(api: OpenAIBatches, path: Path, tag: str) -> RemoteBatch:
    return await api.create(await api.upload(path, tag), tag)


def _no_key_in(errors: list[CallError]) -> None:
    for error in errors:
        for text in (str(error), error.message, error.code or ""):
            assert KEY not in text and OTHER_KEY not in text and KEY[:12] not in text


def test_a_line_is_the_online_body_and_its_answer_is_the_online_answer(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _requests(small_cohort, small_root, cache, QWEN, 6)
    chat = OpenAIChat(QWEN_PROVIDER, QWEN.model)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        ids = _write(api, requests, tmp_path / "in.jsonl")
        batch = await _submit(api, tmp_path / "in.jsonl", "run-1/batch-0")
        assert batch.state == "validating" and batch.tag == "run-1/batch-0"
        clock.now = 0.6
        assert (await api.get(batch.id)).state == "in_progress"
        clock.now = 1.0
        ended = await api.get(batch.id)
        lines = await _results(api, ended)
        online = {}
        for custom_id, request in ids.items():
            headers = {**chat.headers(ApiKey(KEY)), "X-Client-Request-Id": custom_id}
            posted = bytes(chat.encode(request))
            async with session.post(url + "/v1/chat/completions", data=posted,
                                    headers=headers) as response:  # fmt: skip
                online[custom_id] = chat.decode(await response.read())
        return ids, ended, lines, online

    ids, ended, lines, online = _run(sim, body)
    assert ended.state == "completed" and ended.provider_state == "completed"
    assert (ended.total, ended.succeeded, ended.failed) == (6, 6, 0)
    assert ended.error_file is None and ended.output_file is not None
    assert sorted(line.custom_id or "" for line in lines) == sorted(ids)
    for line in lines:
        assert line.reply is not None and line.status == 200 and line.ran
        assert line.where.startswith(f"{ended.output_file} line ")
        assert line.reply.answer == online[line.custom_id].answer  # the same call, answered
        assert line.reply.reasoning == online[line.custom_id].reasoning
    assert sim.stats.batches_created == 1
    assert all(sim.stats.submitted[i] == 1 for i in ids)
    assert sim.stats.paid_twice == 6  # each call paid in the batch, then again online
    # Byte for byte the online body, in the documented line shape.
    x = Origin.of("http://x")
    api = OpenAIBatches(None, QWEN_PROVIDER, QWEN.model, "http://x", ApiKey(KEY), origin=x)  # type: ignore[arg-type]
    line = bytes(api.line("id-1", requests[0]))
    assert line.endswith(b"}\n") and bytes(chat.encode(requests[0])) in line
    doc = json.loads(line)
    assert (doc["custom_id"], doc["method"], doc["url"]) == ("id-1", "POST", "/v1/chat/completions")


def test_line_faults_expiry_and_failure_read_as_documented(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    faults = BatchFaults(line_error=0.3, malformed_line=0.2, expire_first=2, fail_first=1,
                         expired_share=0.5, turnaround_s=0.0)  # fmt: skip
    sim = _sim(small_cohort, small_root, cache, clock, batch=faults, seed=4)
    requests = _requests(small_cohort, small_root, cache, QWEN, 20)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        out = []
        for n in range(3):
            batch = await api.get((await _submit(api, tmp_path / "in.jsonl", f"t{n}")).id)
            out.append((batch, await _results(api, batch)))
        return out

    (failed, none), (expired, half), (done, lines) = _run(sim, body)
    assert failed.state == "failed" and none == [] and failed.message
    assert expired.state == "expired"
    assert sum(not r.ran for r in half) == 10 and all(r.error is None for r in half if not r.ran)
    assert done.state == "completed" and len(lines) == 20
    errors = [r.error for r in lines if r.error is not None]
    problems = [r for r in lines if r.problem is not None]
    replies = [r for r in lines if r.reply is not None]
    assert errors and problems and replies and len(errors) + len(problems) + len(replies) == 20
    assert all(isinstance(e, Transient) and e.status == 500 for e in errors)
    assert all(r.custom_id is None and "not JSON" in (r.problem or "") for r in problems)
    assert all(r.where.startswith(done.error_file or "?") for r in lines if r.error)
    _no_key_in(errors)


def test_quota_throttles_and_a_wrong_key_raise_the_online_classes_without_the_key(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    requests = _requests(small_cohort, small_root, cache, QWEN, 2)

    async def quota(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        await _submit(api, tmp_path / "in.jsonl", "first")
        with pytest.raises(QuotaExhausted) as spent:
            await _submit(api, tmp_path / "in.jsonl", "second")
        return spent.value

    faults = BatchFaults(quota_after_batches=1)
    spent = _run(_sim(small_cohort, small_root, cache, clock, batch=faults), quota)
    assert spent.status == 429 and spent.code == "insufficient_quota"

    async def throttled(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        await api.upload(tmp_path / "in.jsonl", "x")
        with pytest.raises(RateLimited) as limited:
            await api.find(sought("x", None))
        return limited.value

    limit = Faults(requests_per_minute=1.0, burst=1)
    limited = _run(_sim(small_cohort, small_root, cache, clock, faults=limit), throttled)
    assert limited.status == 429 and limited.retry_after is not None and limited.retry_after > 0

    async def refused(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        with pytest.raises(Refused) as wrong:
            await api.get("batch_sim000000")
        return wrong.value

    wrong = _run(_sim(small_cohort, small_root, cache, clock), refused, key=OTHER_KEY)
    assert wrong.status == 401 and wrong.stops
    _no_key_in([spent, limited, wrong])


def test_find_finds_a_batch_by_its_tag_or_its_file(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _requests(small_cohort, small_root, cache, QWEN, 2)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        made = [await _submit(api, tmp_path / "in.jsonl", f"tag-{n}") for n in range(5)]
        return made, [
            await api.find(sought("tag-1", None)),
            await api.find(sought("nothing", made[3].input_file)),
            await api.find(sought("nothing", "file-unknown")),
        ]

    made, (by_tag, by_file, missing) = _run(sim, body)
    assert by_tag is not None and by_tag.id == made[1].id
    assert by_file is not None and by_file.id == made[3].id
    assert missing is None


def test_find_pages_through_the_list(monkeypatch: pytest.MonkeyPatch,
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:  # fmt: skip
    """With pages of 100 the oldest of 130 batches is on the second page."""
    sim = _sim(small_cohort, small_root, cache, Clock())
    requests = _requests(small_cohort, small_root, cache, QWEN, 1)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        file_id = await api.upload(tmp_path / "in.jsonl", "in")
        made = [await api.create(file_id, f"tag-{n}") for n in range(130)]
        return made[0], await api.find(sought("tag-0", None))

    first, found = _run(sim, body)
    assert found is not None and found.id == first.id


def _serve_file(raw: bytes) -> Callable[[], Any]:
    async def content(request: web.Request) -> web.Response:
        return web.Response(body=raw)

    app = web.Application()
    app.router.add_get("/v1/files/{file_id}/content", content)
    return lambda: app


def test_the_reader_yields_a_problem_for_each_unreadable_line_and_never_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "MAX_LINE_BYTES", 4096)
    choice = {"message": {"content": f"leak {KEY}"}, "finish_reason": "stop"}
    answer = {"id": "c1", "model": "another-model", "choices": [choice]}

    def ok(custom_id: str, body: object = answer, status: int = 200) -> bytes:
        doc = {"id": "r", "custom_id": custom_id,
               "response": {"status_code": status, "request_id": "q", "body": body}}  # fmt: skip
        return json.dumps(doc).encode()

    lines = [
        ok("unknown-id"),
        ok("twice"),
        ok("twice"),
        b"",
        b'{"custom_id": "cut", "response": {"status_',
        json.dumps({"response": {"status_code": 200}}).encode(),
        ok("no-choices", {"id": "x", "usage": {"prompt_tokens": 7, "completion_tokens": 9}}),
        ok("bad-request", {"error": {"code": "invalid_request_error", "message": KEY}}, 400),
        json.dumps({"custom_id": "other", "error": {"code": "oops", "message": "m"}}).encode(),
        json.dumps({"custom_id": "late", "error": {"code": "batch_expired"}}).encode(),
        b"x" * 10_000,
        ok("last-without-newline"),
    ]

    async def main() -> list[ResultLine]:
        runner = web.AppRunner(_serve_file(b"\n".join(lines))(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        try:
            async with aiohttp.ClientSession() as session:
                api = OpenAIBatches(
                    session, QWEN_PROVIDER, "m", url, ApiKey(KEY), origin=Origin.of(url)
                )
                batch = RemoteBatch("batch_x", "completed", "completed", output_file="file-o")
                return await _results(api, batch)
        finally:
            await runner.cleanup()

    read = asyncio.run(main())
    assert [r.where for r in read][:3] == ["file-o line 1", "file-o line 2", "file-o line 3"]
    unknown, twice1, twice2, cut, no_id, no_choices, bad, other, late, long, last = read
    for r in (unknown, twice1, twice2, last):
        assert r.reply is not None and r.reply.model == "another-model"
        assert KEY not in r.reply.answer
    assert twice1.custom_id == twice2.custom_id == "twice"  # reported both; the runner judges
    assert cut.problem and cut.custom_id is None and cut.where == "file-o line 5"
    assert no_id.problem == "no custom_id"
    # Billed, so no problem but the line's error, with the usage it reported (issue 56).
    assert no_choices.problem is None and no_choices.custom_id == "no-choices"
    assert isinstance(no_choices.error, Unreadable) and no_choices.status == 200
    assert no_choices.error.usage == Usage(7, 9)
    assert isinstance(bad.error, CallError) and bad.status == 400 and KEY not in str(bad.error)
    assert isinstance(other.error, CallError) and other.error.code == "oops"
    assert not late.ran and late.error is None and late.reply is None
    assert long.problem and "longer than" in long.problem


def test_an_upload_sends_the_open_file_not_its_bytes(
    monkeypatch: pytest.MonkeyPatch,
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path,
) -> None:  # fmt: skip
    sent: list[object] = []
    add_field = aiohttp.FormData.add_field

    def spy(self: aiohttp.FormData, name: str, value: Any, **kw: Any) -> None:
        sent.append(value)
        add_field(self, name, value, **kw)

    monkeypatch.setattr(aiohttp.FormData, "add_field", spy)
    sim = _sim(small_cohort, small_root, cache, Clock())
    requests = _requests(small_cohort, small_root, cache, QWEN, 3)

    async def body(api: OpenAIBatches, url: str, session: aiohttp.ClientSession) -> str:
        _write(api, requests, tmp_path / "in.jsonl")
        return await api.upload(tmp_path / "in.jsonl", "in")

    assert _run(sim, body).startswith("file-")
    assert any(isinstance(v, io.BufferedReader) for v in sent)
    assert not any(isinstance(v, bytes) and len(v) > 100 for v in sent)
