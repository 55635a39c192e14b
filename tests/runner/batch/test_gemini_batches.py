"""Gemini's batch wire against the simulator on loopback: a line answers as the online call
with the same id; faults, quota, throttles and a wrong key raise the online error classes;
result lines that cannot be read are yielded as problems, never raised; the key is in no URL
and no error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import aiohttp
import pytest

from conditions import Cohort, DataRoot, Request, VariantCache
from runner.backends import (
    ApiKey,
    GeminiGenerate,
    Origin,
    QuotaExhausted,
    RateLimited,
    Refused,
    Transient,
    Unreadable,
    Usage,
)
from runner.backends._client import CALL_ID_HEADER, call_id
from runner.batch import BatchApi, RemoteBatch, ResultLine
from runner.batch._gemini import (
    GeminiBatches,
    inline_lines,
    media_base,
    read_line,
    remote_batch,
    result_lines,
)
from runner.simulator import BatchFaults, Faults, SimSpec, Simulator, serving
from tests.runner.batch.sought import sought
from tests.runner.test_against_simulator import CLEAN, GEMINI, _requests

T = TypeVar("T")
KEY = "AIzaSyGroundbenchTestKey0123456789abcdef"
MODEL = GEMINI.model
WIRE = GeminiGenerate(MODEL)


class Clock:
    """The simulator's clock, moved by the test: turnaround without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sim(
    cohort: Cohort, root: DataRoot, tmp: Path, clock: Clock, batch: BatchFaults, **spec: object
) -> Simulator:
    settings: dict[str, object] = {"seed": 2, "behaviour": CLEAN, "batch": batch} | spec
    return Simulator(
        cohort, root.images, VariantCache(tmp / "v"), SimSpec.model_validate(settings), clock=clock
    )


def _serve(
    sim: Simulator,
    body: Callable[[GeminiBatches, aiohttp.ClientSession, str], Awaitable[T]],
    key: str = KEY,
    urls: list[str] | None = None,
) -> T:
    async def record(
        session: aiohttp.ClientSession, context: object, params: aiohttp.TraceRequestStartParams
    ) -> None:
        if urls is not None:
            urls.append(str(params.url))

    async def main() -> T:
        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(record)
        async with serving(sim) as url, aiohttp.ClientSession(trace_configs=[trace]) as session:
            return await body(
                GeminiBatches(session, MODEL, url + "/v1beta", ApiKey(key), origin=Origin.of(url)),
                session,
                url,
            )

    return asyncio.run(main())


def _write(api: GeminiBatches, requests: list[Request], path: Path) -> list[str]:
    ids = [call_id(r, 0) for r in requests]
    with path.open("wb") as out:
        for cid, request in zip(ids, requests, strict=True):
            out.write(bytes(api.line(cid, request)))
    return ids


async def _all(lines: AsyncIterator[ResultLine]) -> list[ResultLine]:
    return [line async for line in lines]


async def _online(session: aiohttp.ClientSession, url: str, request: Request, cid: str) -> bytes:
    headers = {"x-goog-api-key": KEY, "Content-Type": "application/json", CALL_ID_HEADER: cid}
    body = bytes(WIRE.encode(request))
    async with session.post(WIRE.url(url + "/v1beta"), data=body, headers=headers) as response:
        assert response.status == 200
        return await response.read()


def test_a_line_is_the_online_body_and_its_answer_the_online_answer(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, tmp_path, clock, BatchFaults(turnaround_s=60))
    requests = _requests(small_cohort, small_root, VariantCache(tmp_path / "v"), GEMINI, 8)
    urls: list[str] = []

    async def body(api: GeminiBatches, session: aiohttp.ClientSession, url: str) -> None:
        ids = _write(api, requests, tmp_path / "in.jsonl")
        for cid, request in zip(ids, requests, strict=True):  # the line holds the online body
            line = json.loads(bytes(api.line(cid, request)))
            assert line == {"key": cid, "request": json.loads(bytes(WIRE.encode(request)))}
        file_id = await api.upload(tmp_path / "in.jsonl", "gb-batch-1")
        created = await api.create(file_id, "gb-batch-1")
        assert (created.state, created.provider_state) == ("validating", "BATCH_STATE_PENDING")
        assert created.tag == "gb-batch-1" and created.input_file == file_id
        clock.now += 40
        assert (await api.get(created.id)).state == "in_progress"
        clock.now += 40
        done = await api.get(created.id)
        assert done.state == "completed" and done.provider_state == "BATCH_STATE_SUCCEEDED"
        assert (done.total, done.succeeded, done.failed) == (8, 8, 0)
        assert done.output_file is not None
        lines = await _all(api.results(done))
        assert [line.custom_id for line in lines] == ids
        for line, cid, request in zip(lines, ids, requests, strict=True):
            online = WIRE.decode(await _online(session, url, request, cid))
            assert line.reply is not None and line.status == 200
            assert (line.reply.answer, line.reply.reasoning, line.reply.usage) == (
                online.answer, online.reasoning, online.usage,
            )  # fmt: skip
        await api.delete_file(done.output_file)
        await api.delete_file(file_id)

    _serve(sim, body, urls=urls)
    assert sim.stats.batches_created == 1 and set(sim.stats.submitted.values()) == {1}
    assert sim.stats.paid_twice == 8  # each call answered by the batch, then online: the same call
    assert urls and not any(KEY in u for u in urls)


def test_faulty_lines_are_errors_or_problems_never_raised(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    clock = Clock()
    faults = BatchFaults(turnaround_s=0, line_error=0.3, malformed_line=0.3)
    sim = _sim(small_cohort, small_root, tmp_path, clock, faults)
    requests = _requests(small_cohort, small_root, VariantCache(tmp_path / "v"), GEMINI, 24)

    async def body(
        api: GeminiBatches, session: aiohttp.ClientSession, url: str
    ) -> list[ResultLine]:
        ids = _write(api, requests, tmp_path / "in.jsonl")
        batch = await api.create(await api.upload(tmp_path / "in.jsonl", "b"), "b")
        done = await api.get(batch.id)
        assert done.state == "completed"
        lines = await _all(api.results(done))
        assert len(lines) == len(ids)
        return lines

    lines = _serve(sim, body)
    errors = [line for line in lines if line.error is not None]
    problems = [line for line in lines if line.problem is not None]
    replies = [line for line in lines if line.reply is not None]
    assert errors and problems and replies
    assert len(errors) + len(problems) + len(replies) == len(lines)
    assert all(isinstance(e.error, Transient) and e.status == 500 for e in errors)
    assert all(p.problem and p.problem.startswith("not JSON") for p in problems)
    # A line cut short is a problem, whatever it held (an error line may be cut too).
    assert sim.stats.faults["batch-malformed-line"] == len(problems)
    assert sim.stats.faults["batch-line-error"] >= len(errors)


def test_expired_and_failed_batches(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    clock = Clock()
    faults = BatchFaults(turnaround_s=0, fail_first=1, expire_first=1, expired_share=0.5)
    sim = _sim(small_cohort, small_root, tmp_path, clock, faults)
    requests = _requests(small_cohort, small_root, VariantCache(tmp_path / "v"), GEMINI, 6)

    async def body(
        api: GeminiBatches, session: aiohttp.ClientSession, url: str
    ) -> tuple[RemoteBatch, RemoteBatch, list[ResultLine], list[ResultLine]]:
        _write(api, requests, tmp_path / "in.jsonl")
        file_id = await api.upload(tmp_path / "in.jsonl", "in")
        failed = await api.get((await api.create(file_id, "first")).id)
        expired = await api.get((await api.create(file_id, "second")).id)
        return failed, expired, await _all(api.results(failed)), await _all(api.results(expired))

    failed, expired, none, half = _serve(sim, body)
    assert failed.state == "failed" and failed.output_file is None and failed.message
    assert none == []
    assert expired.state == "expired" and expired.provider_state == "BATCH_STATE_EXPIRED"
    assert len(half) == 3 and all(line.reply is not None for line in half)


def test_quota_on_create_and_throttles_on_the_endpoints(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, tmp_path, clock, BatchFaults(quota_after_batches=1))
    requests = _requests(small_cohort, small_root, VariantCache(tmp_path / "v"), GEMINI, 2)

    async def quota(api: GeminiBatches, session: aiohttp.ClientSession, url: str) -> None:
        _write(api, requests, tmp_path / "in.jsonl")
        file_id = await api.upload(tmp_path / "in.jsonl", "in")
        await api.create(file_id, "one")
        with pytest.raises(QuotaExhausted) as spent:
            await api.create(file_id, "two")
        assert spent.value.stops

    _serve(sim, quota)
    # One request a minute, and the clock never moves: the second request is throttled.
    throttled = Faults(requests_per_minute=1, burst=1)
    sim = _sim(small_cohort, small_root, tmp_path, clock, BatchFaults(), faults=throttled)

    async def throttle(api: GeminiBatches, session: aiohttp.ClientSession, url: str) -> None:
        await api.find(sought("nothing", None))
        with pytest.raises(RateLimited) as limited:
            await api.get("batches/x")
        assert limited.value.retry_after is not None and limited.value.retry_after > 0

    _serve(sim, throttle)


def test_a_wrong_key_is_refused_and_never_shown(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    sim = _sim(small_cohort, small_root, tmp_path, Clock(), BatchFaults(), api_key=KEY)
    (tmp_path / "in.jsonl").write_bytes(b'{"key": "a", "request": {}}\n')
    wrong = "AIzaSyWrongWrongWrongWrong0123456789xyz"
    urls: list[str] = []

    async def body(api: GeminiBatches, session: aiohttp.ClientSession, url: str) -> list[str]:
        shown = []
        for call in (
            lambda: api.upload(tmp_path / "in.jsonl", "x"),
            lambda: api.get("batches/abc"),
            lambda: api.find(sought("x", None)),
            lambda: api.cancel("batches/abc"),
            lambda: api.delete_file("files/abc"),
        ):
            with pytest.raises(Refused) as refused:
                await call()
            shown.append(f"{refused.value} {refused.value.code} {refused.value!r}")
        return shown

    shown = _serve(sim, body, key=wrong, urls=urls)
    assert all(wrong not in s and wrong[:12] not in s for s in shown)
    assert urls and not any(wrong in u for u in urls)


def test_find_by_display_name_or_input_file_and_cancel(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, tmp_path, clock, BatchFaults(turnaround_s=100))
    requests = _requests(small_cohort, small_root, VariantCache(tmp_path / "v"), GEMINI, 2)

    async def body(api: GeminiBatches, session: aiohttp.ClientSession, url: str) -> None:
        _write(api, requests, tmp_path / "in.jsonl")
        files = [await api.upload(tmp_path / "in.jsonl", f"in-{n}") for n in range(3)]
        made = [await api.create(f, f"gb-{n}") for n, f in enumerate(files)]
        found = await api.find(sought("gb-1", None))
        assert found is not None and found.id == made[1].id
        by_file = await api.find(sought("not-a-tag", files[2]))
        assert by_file is not None and by_file.id == made[2].id
        assert await api.find(sought("gb-9", "files/none")) is None
        cancelled = await api.cancel(made[0].id)
        assert cancelled.state == "cancelled" and cancelled.output_file is None
        clock.now += 200
        assert (await api.get(made[0].id)).state == "cancelled"
        assert await _all(api.results(cancelled)) == []

    _serve(sim, body)


def test_find_reads_every_page(small_cohort: Cohort, small_root: DataRoot, tmp_path: Path) -> None:
    sim = _sim(small_cohort, small_root, tmp_path, Clock(), BatchFaults(turnaround_s=100))
    (tmp_path / "in.jsonl").write_bytes(b'{"key": "a", "request": {"contents": []}}\n')

    async def body(api: GeminiBatches, session: aiohttp.ClientSession, url: str) -> None:
        file_id = await api.upload(tmp_path / "in.jsonl", "in")
        first = await api.create(file_id, "oldest")
        for n in range(120):  # more than a page: the oldest is on the second
            await api.create(file_id, f"gb-{n}")
        found = await api.find(sought("oldest", None))
        assert found is not None and found.id == first.id

    _serve(sim, body)


# -- reading result lines, without a server ---------------------------------------------------


def _response(text: str, model: str = MODEL) -> dict[str, object]:
    return {
        "candidates": [{"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
        "modelVersion": model,
    }


async def _chunks(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_result_lines_that_cannot_be_read_are_problems_and_billed_ones_errors() -> None:
    key = ApiKey(KEY)
    usage = {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 1}
    lines = [
        json.dumps({"key": "a", "response": _response("[1, 2]")}),
        json.dumps({"key": "unknown-to-the-run", "response": _response("x")}),
        json.dumps({"key": "a", "response": _response("again")}),  # a key seen before
        json.dumps({"key": "b", "response": _response("y")})[:30],  # cut short
        json.dumps({"key": "c", "response": _response("z", model="gemini-other")}),
        json.dumps({"response": _response("no key")}),
        json.dumps({"key": "d", "response": {"candidates": "not a list", "usageMetadata": usage}}),
        json.dumps({"key": "e", "error": {"code": 8, "message": "Resource exhausted."}}),
        json.dumps({"key": "f", "error": {"code": 13, "message": f"internal {KEY}"}}),
        "",
        json.dumps({"key": "g", "response": _response(f"leaks {KEY}")}),
    ]
    data = ("\n".join(lines) + "\n").encode()

    async def main() -> list[ResultLine]:
        return await _all(result_lines(_chunks(data), "files/out", WIRE, key))

    read = asyncio.run(main())
    assert [r.where for r in read][:2] == ["files/out line 1", "files/out line 2"]
    a, unknown, twice, cut, other, nokey, broken, throttle, internal, leak = read
    assert a.reply is not None and a.reply.answer == "[1, 2]"
    assert unknown.custom_id == "unknown-to-the-run" and unknown.reply is not None  # the run's call
    assert twice.problem and "line 1" in twice.problem and twice.reply is None
    assert cut.problem and cut.problem.startswith("not JSON") and cut.custom_id == "b"
    assert other.reply is not None and other.reply.model == "gemini-other"  # the run compares
    assert nokey.problem == "no key" and nokey.custom_id is None
    # Billed, so the line's error with what it reported (issue 56), not a problem.
    assert broken.problem is None and broken.custom_id == "d" and broken.status == 200
    assert isinstance(broken.error, Unreadable) and broken.error.usage == Usage(5, 3, 1)
    assert isinstance(throttle.error, RateLimited) and throttle.status == 429
    assert isinstance(internal.error, Transient) and KEY not in str(internal.error)
    assert leak.reply is not None and KEY not in leak.reply.answer
    assert leak.where == "files/out line 11"


def test_inline_responses_are_read_as_lines() -> None:
    doc = {
        "name": "batches/x",
        "done": True,
        "response": {
            "inlinedResponses": {
                "inlinedResponses": [
                    {"metadata": {"key": "a"}, "response": _response("one")},
                    {"metadata": {"key": "b"}, "error": {"code": 14, "message": "unavailable"}},
                    {"response": _response("no key")},
                ]
            }
        },
    }
    a, b, c = inline_lines(doc, WIRE)
    assert a.where == "inline line 1" and a.reply is not None and a.reply.answer == "one"
    assert isinstance(b.error, Transient) and b.status == 503
    assert c.problem == "no key"


def test_a_batch_is_read_from_its_operation() -> None:
    doc = {
        "name": "batches/abc",
        "done": True,
        "metadata": {
            "displayName": "gb-7",
            "state": "BATCH_STATE_SUCCEEDED",
            "inputConfig": {"fileName": "files/in"},
            "output": {"responsesFile": "files/out"},
            "batchStats": {
                "requestCount": "4",
                "successfulRequestCount": "3",
                "failedRequestCount": "1",
            },
        },
    }
    batch = remote_batch(doc)
    assert (batch.id, batch.state, batch.tag, batch.input_file, batch.output_file) == (
        "batches/abc", "completed", "gb-7", "files/in", "files/out",
    )  # fmt: skip
    assert (batch.total, batch.succeeded, batch.failed) == (4, 3, 1)
    # The guide's examples spell states JOB_STATE_*, as the SDK reports them: both are read.
    assert remote_batch({"name": "batches/x", "metadata": {"state": "JOB_STATE_EXPIRED"}}).ended
    failed = {"name": "batches/y", "done": True, "error": {"code": 3, "message": f"bad {KEY}"},
              "metadata": {"state": "BATCH_STATE_FAILED"}}  # fmt: skip
    assert KEY not in (remote_batch(failed, ApiKey(KEY)).message or "")


def test_media_go_under_upload_and_download_before_the_version() -> None:
    real = "https://generativelanguage.googleapis.com/v1beta"
    assert media_base(real, "upload") == "https://generativelanguage.googleapis.com/upload/v1beta"
    assert media_base(real + "/", "download").endswith(".com/download/v1beta")
    assert media_base("https://proxy.example/gemini/v1", "upload") == (
        "https://proxy.example/gemini/upload/v1"
    )
    assert media_base("http://127.0.0.1:9", "upload") == "http://127.0.0.1:9/upload/v1beta"


def test_a_key_in_the_base_url_is_refused() -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            at = Origin.of("https://x.example")
            GeminiBatches(
                session, MODEL, f"https://x.example/v1beta?key={KEY}", ApiKey(KEY), origin=at
            )

    with pytest.raises(Exception, match="holds an API key"):
        asyncio.run(main())


def test_read_line_reports_a_non_object() -> None:
    line = read_line(b"[1, 2]", "files/o line 1", WIRE, None)
    assert line.problem and "list" in line.problem and line.custom_id is None


def _is_a_batch_api(api: GeminiBatches) -> BatchApi:
    return api  # mypy checks that GeminiBatches satisfies the BatchApi protocol
