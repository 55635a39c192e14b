"""AnthropicBatches against the simulator on loopback: a line's params are the online body, the
create streams the file inline with its exact length, a batch's answers are the online answers,
faults read as the online wire reads them, a lost create is found by size, time and results,
and no error holds the key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web

from conditions import Cohort, DataRoot, Request, VariantCache
from runner.backends import (
    AnthropicMessages,
    ApiKey,
    CallError,
    Origin,
    QuotaExhausted,
    RateLimited,
    Refused,
    Transient,
    Unreadable,
    Usage,
)
from runner.batch import RemoteBatch, ResultLine
from runner.batch import _anthropic as wire
from runner.batch import _jsonl as jsonl
from runner.batch._anthropic import AnthropicBatches
from runner.batch._api import Sought, Undecided
from runner.simulator import BatchFaults, Faults, SimSpec, Simulator, serving
from tests.runner.batch.test_openai_batches import OTHER_KEY, Clock, _no_key_in, _results, _write
from tests.runner.test_against_simulator import CLEAN, KEY, _requests
from tests.runner.test_anthropic_against_simulator import CLAUDE

T = TypeVar("T")
MODEL = CLAUDE.model
TURNAROUND_S = 1.0


@pytest.fixture
def cache(tmp_path: Path) -> VariantCache:
    return VariantCache(tmp_path / "variants")


def _sim(
    cohort: Cohort, root: DataRoot, cache: VariantCache, clock: Clock, **spec: Any
) -> Simulator:
    faults = spec.pop("batch", BatchFaults(turnaround_s=TURNAROUND_S))
    spec = {"behaviour": CLEAN, "api_key": KEY, "batch": faults, **spec}
    return Simulator(cohort, root.images, cache, SimSpec(**spec), clock=clock)


def _run(
    sim: Simulator,
    body: Callable[[AnthropicBatches, str, aiohttp.ClientSession], Awaitable[T]],
    key: str = KEY,
) -> T:
    async def main() -> T:
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            api = AnthropicBatches(session, MODEL, url, ApiKey(key), origin=Origin.of(url))
            return await body(api, url, session)

    return asyncio.run(main())


def _sought(ids: dict[str, Request] | set[str], **fields: Any) -> Sought:
    """The batch of ``ids``, recorded a moment ago, the ledger knowing none."""
    values: dict[str, Any] = {
        "tag": "gb-sought", "input_file": None, "requests": len(ids),
        "since": datetime.now(UTC) - timedelta(seconds=1), "custom_ids": frozenset(ids),
        "known": frozenset(),
    }  # fmt: skip
    return Sought(**(values | fields))


def test_a_line_holds_the_online_body_as_its_params_and_its_answer_is_the_online_one(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _requests(small_cohort, small_root, cache, CLAUDE, 6)
    messages = AnthropicMessages(MODEL)

    async def body(api: AnthropicBatches, url: str, session: aiohttp.ClientSession) -> Any:
        ids = _write(api, requests, tmp_path / "in.jsonl")
        batch = await api.create(tmp_path / "in.jsonl", "gb-tag")
        assert batch.state == "in_progress" and batch.total == 6 and batch.tag is None
        clock.now = TURNAROUND_S
        ended = await api.get(batch.id)
        lines = await _results(api, ended)
        online = {}
        for custom_id, request in ids.items():
            headers = {**messages.headers(ApiKey(KEY)), "X-Client-Request-Id": custom_id}
            async with session.post(url + "/v1/messages", data=bytes(messages.encode(request)),
                                    headers=headers) as response:  # fmt: skip
                online[custom_id] = messages.decode(await response.read())
        return ids, ended, lines, online

    ids, ended, lines, online = _run(sim, body)
    assert ended.state == "completed" and ended.provider_state == "ended"
    assert (ended.total, ended.succeeded, ended.failed) == (6, 6, 0)
    assert sorted(line.custom_id or "" for line in lines) == sorted(ids)
    for line in lines:
        assert line.reply is not None and line.status == 200 and line.ran
        assert line.where.startswith(f"{ended.id} line ")
        assert line.reply.answer == online[line.custom_id].answer  # the same call, answered
        assert line.reply.reasoning == online[line.custom_id].reasoning
    assert any(line.reply.reasoning for line in lines if line.reply is not None)
    assert sim.stats.batches_created == 1 and all(sim.stats.submitted[i] == 1 for i in ids)
    # The documented line shape; its params byte for byte the online body.
    api = AnthropicBatches(None, MODEL, "http://x", ApiKey(KEY), origin=Origin.of("http://x"))  # type: ignore[arg-type]
    line = bytes(api.line("id-1", requests[0]))
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    assert line == b'{"custom_id":"id-1","params":' + bytes(messages.encode(requests[0])) + b"}\n"
    assert json.loads(line)["custom_id"] == "id-1"


def test_the_create_streams_the_file_inline_with_its_exact_length(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    """What reaches the server: one JSON object, ``requests`` the file's lines in order, sent
    with a Content-Length (no chunked encoding) equal to the bytes sent."""
    seen: dict[str, Any] = {}

    async def create(request: web.Request) -> web.Response:
        seen["headers"] = dict(request.headers)
        seen["body"] = await request.read()
        doc = {"id": "msgbatch_1", "type": "message_batch", "processing_status": "in_progress",
               "request_counts": {"processing": 3, "succeeded": 0, "errored": 0,
                                  "canceled": 0, "expired": 0}}  # fmt: skip
        return web.json_response(doc)

    requests = _requests(small_cohort, small_root, cache, CLAUDE, 3)

    async def main() -> RemoteBatch:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages/batches", create)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with aiohttp.ClientSession() as session:
                api = AnthropicBatches(session, MODEL, url, ApiKey(KEY), origin=Origin.of(url))
                _write(api, requests, tmp_path / "in.jsonl")
                return await api.create(tmp_path / "in.jsonl", "gb-tag")
        finally:
            await runner.cleanup()

    made = asyncio.run(main())
    assert made.id == "msgbatch_1" and made.total == 3
    headers, body = seen["headers"], seen["body"]
    assert int(headers["Content-Length"]) == len(body) and "Transfer-Encoding" not in headers
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    lines = (tmp_path / "in.jsonl").read_bytes().splitlines()
    assert json.loads(body) == {"requests": [json.loads(line) for line in lines]}


def test_faults_expiry_and_a_batch_that_fails_read_as_documented(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    faults = BatchFaults(line_error=0.3, malformed_line=0.2, expire_first=2, fail_first=1,
                         expired_share=0.5, turnaround_s=0.0)  # fmt: skip
    sim = _sim(small_cohort, small_root, cache, clock, batch=faults, seed=4)
    requests = _requests(small_cohort, small_root, cache, CLAUDE, 20)

    async def body(api: AnthropicBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        out = []
        for n in range(3):
            batch = await api.get((await api.create(tmp_path / "in.jsonl", f"t{n}")).id)
            out.append((batch, await _results(api, batch)))
        return out

    (failed, errored), (expired, half), (done, lines) = _run(sim, body)
    # Anthropic has no failed batch: the simulator's "failed" one errs on every request.
    assert failed.state == "completed" and failed.failed == 20
    assert all(isinstance(r.error, Transient) and r.error.status is None for r in errored)
    assert expired.state == "expired" and sum(not r.ran for r in half) == 10
    assert all(r.error is None and r.reply is None for r in half if not r.ran)
    assert done.state == "completed" and len(lines) == 20
    errors = [r.error for r in lines if r.error is not None]
    problems = [r for r in lines if r.problem is not None]
    replies = [r for r in lines if r.reply is not None]
    assert errors and problems and replies and len(errors) + len(problems) + len(replies) == 20
    assert all(isinstance(e, Transient) and e.code == "api_error" for e in errors)
    assert all(r.custom_id is None and "not JSON" in (r.problem or "") for r in problems)
    _no_key_in(errors)


def test_spent_credit_throttles_and_a_wrong_key_raise_the_online_classes_without_the_key(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    requests = _requests(small_cohort, small_root, cache, CLAUDE, 2)

    async def quota(api: AnthropicBatches, url: str, session: aiohttp.ClientSession) -> Any:
        _write(api, requests, tmp_path / "in.jsonl")
        await api.create(tmp_path / "in.jsonl", "first")
        with pytest.raises(QuotaExhausted) as spent:
            await api.create(tmp_path / "in.jsonl", "second")
        return spent.value

    faults = BatchFaults(quota_after_batches=1)
    spent = _run(_sim(small_cohort, small_root, cache, clock, batch=faults), quota)
    assert spent.status == 400 and spent.stops

    limit = Faults(requests_per_minute=1.0, burst=1)

    async def throttled(api: AnthropicBatches, url: str, s: aiohttp.ClientSession) -> Any:
        await api.find(_sought({"a"}))  # the one call the minute allows
        with pytest.raises(RateLimited) as limited:
            await api.find(_sought({"a"}))
        return limited.value

    limited = _run(_sim(small_cohort, small_root, cache, clock, faults=limit), throttled)
    assert limited.status == 429 and limited.retry_after is not None and limited.retry_after > 0

    async def refused(api: AnthropicBatches, url: str, session: aiohttp.ClientSession) -> Any:
        with pytest.raises(Refused) as wrong:
            await api.get("msgbatch_sim000000")
        return wrong.value

    wrong = _run(_sim(small_cohort, small_root, cache, clock), refused, key=OTHER_KEY)
    assert wrong.status == 401 and wrong.stops and wrong.code == "authentication_error"
    _no_key_in([spent, limited, wrong])


def test_a_lost_create_is_found_by_its_size_its_time_and_its_results(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _requests(small_cohort, small_root, cache, CLAUDE, 9)

    async def body(api: AnthropicBatches, url: str, session: aiohttp.ClientSession) -> Any:
        mine = _write(api, requests[:3], tmp_path / "mine.jsonl")
        theirs = _write(api, requests[3:6], tmp_path / "theirs.jsonl")  # as many, not ours
        larger = _write(api, requests, tmp_path / "larger.jsonl")
        found: dict[str, Any] = {"nothing yet": await api.find(_sought(mine))}
        made = await api.create(tmp_path / "mine.jsonl", "gb-mine")
        await api.create(tmp_path / "larger.jsonl", "gb-larger")  # another size: never it
        found["one running"] = await api.find(_sought(mine))
        found["known"] = await api.find(_sought(mine, known=frozenset({made.id})))
        later = datetime.now(UTC) + 2 * wire.CLOCK_SKEW
        found["made before"] = await api.find(_sought(mine, since=later))
        other = await api.create(tmp_path / "theirs.jsonl", "gb-theirs")
        with pytest.raises(Undecided) as undecided:
            await api.find(_sought(mine))
        clock.now = TURNAROUND_S  # both end: their results tell them apart
        await api.get(made.id), await api.get(other.id)
        found["by results"] = await api.find(_sought(mine))
        found["theirs"] = await api.find(_sought(theirs))
        found["neither"] = await api.find(_sought({"gb-none-1", "gb-none-2", "gb-none-3"}))
        return made, other, found, undecided.value, larger

    made, other, found, undecided, _ = _run(sim, body)
    assert found["nothing yet"] is None and found["known"] is None
    assert found["made before"] is None
    assert found["one running"] is not None and found["one running"].id == made.id
    assert undecided.retryable and undecided.code == "undecided" and made.id in str(undecided)
    assert found["by results"] is not None and found["by results"].id == made.id
    assert found["theirs"] is not None and found["theirs"].id == other.id
    assert found["neither"] is None  # both ended, neither holds those ids: never made


def test_find_pages_through_the_list_and_stops_at_batches_older_than_sought(
    monkeypatch: pytest.MonkeyPatch,
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setattr(wire, "PAGE_SIZE", 4)
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _requests(small_cohort, small_root, cache, CLAUDE, 2)
    listed: list[str] = []
    real_call = AnthropicBatches._call

    async def call(self: AnthropicBatches, method: str, url: str, what: str, **send: Any) -> Any:
        if what == "batch list":
            listed.append(send["params"].get("after_id", "first"))
        return await real_call(self, method, url, what, **send)

    monkeypatch.setattr(AnthropicBatches, "_call", call)

    async def body(api: AnthropicBatches, url: str, session: aiohttp.ClientSession) -> Any:
        one = _write(api, requests[:1], tmp_path / "one.jsonl")
        _write(api, requests, tmp_path / "two.jsonl")
        first = await api.create(tmp_path / "one.jsonl", "gb-first")
        for _ in range(9):  # nine of another size after it: the first is on the third page
            await api.create(tmp_path / "two.jsonl", "gb-other")
        found = await api.find(_sought(one))
        pages = len(listed)
        listed.clear()
        clock.now += 3600.0  # an hour on: every batch was made before what is now sought
        assert await api.find(_sought(one, since=datetime.now(UTC) + timedelta(hours=1))) is None
        return first, found, pages

    first, found, pages = _run(sim, body)
    assert found is not None and found.id == first.id and pages == 3
    assert listed == ["first"]  # the first page's newest is older than sought: no more read


def _serve(routes: dict[str, Any]) -> Callable[[], Awaitable[tuple[web.AppRunner, str]]]:
    async def start() -> tuple[web.AppRunner, str]:
        app = web.Application()
        for path, body in routes.items():

            async def answer(request: web.Request, body: Any = body) -> web.Response:
                return web.Response(body=body if isinstance(body, bytes) else json.dumps(body))

            app.router.add_get(path, answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"

    return start


def test_the_reader_yields_a_problem_for_each_unreadable_line_and_never_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire, "MAX_LINE_BYTES", 4096)
    unreadable = {"content": "not a list", "usage": {"input_tokens": -1, "output_tokens": 4}}
    message = {"id": "msg_1", "type": "message", "model": "claude-x", "role": "assistant",
               "content": [{"type": "text", "text": f"leak {KEY}"}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 3, "output_tokens": 4}}  # fmt: skip

    def result(custom_id: str, **doc: Any) -> bytes:
        return json.dumps({"custom_id": custom_id, "result": doc}).encode()

    lines = [
        result("ok", type="succeeded", message=message),
        result(
            "bad",
            type="errored",
            error={
                "type": "error",
                "error": {"type": "invalid_request_error", "message": f"no: {KEY}"},
            },
        ),
        result(
            "busy",
            type="errored",
            error={"type": "error", "error": {"type": "overloaded_error", "message": "later"}},
        ),
        result("late", type="expired"),
        result("stopped", type="canceled"),
        result("odd", type="mystery"),
        result("empty", type="succeeded", message=unreadable),
        b'{"custom_id": "cut", "result": {"ty',
        json.dumps({"result": {"type": "expired"}}).encode(),
        b"x" * 10_000,
        result("last-without-newline", type="succeeded", message=message),
    ]
    # results_url points elsewhere: the documented path on the configured base is read instead.
    batch_doc = {"id": "msgbatch_x", "processing_status": "ended",
                 "results_url": "http://elsewhere.invalid/steal"}  # fmt: skip

    async def main() -> list[ResultLine]:
        runner, url = await _serve({
            "/v1/messages/batches/msgbatch_x": batch_doc,
            "/v1/messages/batches/msgbatch_x/results": b"\n".join(lines),
        })()  # fmt: skip
        try:
            async with aiohttp.ClientSession() as session:
                api = AnthropicBatches(session, "m", url, ApiKey(KEY), origin=Origin.of(url))
                return await _results(api, await api.get("msgbatch_x"))
        finally:
            await runner.cleanup()

    read = asyncio.run(main())
    ok, bad, busy, late, stopped, odd, empty, cut, no_id, long, last = read
    assert [r.where for r in read][:2] == ["msgbatch_x line 1", "msgbatch_x line 2"]
    for r in (ok, last):
        assert r.reply is not None and r.reply.model == "claude-x" and r.status == 200
        assert KEY not in r.reply.answer and r.reply.usage.input_tokens == 3
    assert isinstance(bad.error, CallError) and not bad.error.retryable and bad.status is None
    assert bad.error.code == "invalid_request_error" and KEY not in str(bad.error)
    assert isinstance(busy.error, Transient) and busy.error.code == "overloaded_error"
    assert not late.ran and not stopped.ran and late.error is None and late.reply is None
    assert odd.problem and "unknown type" in odd.problem and odd.custom_id == "odd"
    # Billed, so the line's error with what it reported (a negative count is unknown).
    assert empty.problem is None and empty.custom_id == "empty" and empty.status == 200
    assert isinstance(empty.error, Unreadable) and empty.error.usage == Usage(None, 4)
    assert cut.problem and cut.custom_id is None and "not JSON" in cut.problem
    assert no_id.problem == "no custom_id"
    assert long.problem and "longer than" in long.problem


def test_nothing_is_uploaded_and_an_uploaded_file_is_no_source(tmp_path: Path) -> None:
    api = AnthropicBatches(None, MODEL, "http://x", ApiKey(KEY), origin=Origin.of("http://x"))  # type: ignore[arg-type]
    assert api.inline and api.limits.max_requests == 100_000
    assert api.limits.max_bytes <= 256 * 1_000_000 - 100_000 * 1 - 16  # room for the envelope
    with pytest.raises(TypeError, match="nothing is uploaded"):
        asyncio.run(api.upload(tmp_path / "x.jsonl", "x"))
    with pytest.raises(TypeError, match="not of 'file-1'"):
        asyncio.run(api.create("file-1", "x"))


def _listed(ident: object, n: int = 2, ended: bool = False) -> dict[str, Any]:
    """A batch as the list names it: made now, holding ``n`` requests."""
    counts = {"processing": 0 if ended else n, "succeeded": n if ended else 0,
              "errored": 0, "canceled": 0, "expired": 0}  # fmt: skip
    return {"id": ident, "type": "message_batch", "created_at": datetime.now(UTC).isoformat(),
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts}  # fmt: skip


def _look(routes: dict[str, Any], sought: Sought) -> RemoteBatch | Exception | None:
    """``find(sought)`` against a server answering ``routes``: what it found, or raised."""

    async def main() -> RemoteBatch | Exception | None:
        runner, url = await _serve(routes)()
        try:
            async with aiohttp.ClientSession() as session:
                api = AnthropicBatches(session, "m", url, ApiKey(KEY), origin=Origin.of(url))
                try:
                    return await api.find(sought)
                except CallError as exc:
                    return exc
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def test_a_hostile_batch_list_is_passed_over_and_an_unread_list_proves_nothing() -> None:
    mine = {"gb-a", "gb-b"}
    odd = [_listed(["a", "list"]), _listed({"an": "object"}), _listed(7), _listed("a b/../c"),
           _listed("x" * 10_000), _listed(KEY)]  # fmt: skip
    # Every entry another's, and a list that never ends (the same page, has_more): the look
    # ends after its pages, and, not read back to the record's time, proves nothing.
    page = {"data": odd, "has_more": True, "last_id": "msgbatch_next"}
    endless = _look({"/v1/messages/batches": page}, _sought(mine))
    assert isinstance(endless, Undecided) and "not among the account's last" in str(endless)
    assert f"{len(odd) * wire.FIND_PAGES:,}" in str(endless) and KEY not in str(endless)
    # The same entries on a list that ends: read to the end, none is it: never made.
    ended = _look({"/v1/messages/batches": {"data": odd, "has_more": False}}, _sought(mine))
    assert ended is None
    # A page naming no next one (no last_id) is no end of the list either.
    cut = _look({"/v1/messages/batches": {"data": odd, "has_more": True}}, _sought(mine))
    assert isinstance(cut, Undecided)


def test_an_ended_batch_whose_results_tell_nothing_may_be_the_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Results that name no id in their first HEAD_BYTES (blank lines without end), or that
    cannot be fetched, leave an ended batch as one that may be it: taken if alone, Undecided
    beside another, never a reason to create again."""
    monkeypatch.setattr(wire, "HEAD_BYTES", 64 * 1024)
    mine = {"gb-a", "gb-b"}
    blank = _listed("msgbatch_blank", ended=True)
    gone = _listed("msgbatch_gone", ended=True)  # its results answer 404
    routes: dict[str, Any] = {
        "/v1/messages/batches/msgbatch_blank/results": b"\n" * 1_000_000,
        "/v1/messages/batches": {"data": [blank], "has_more": False},
    }
    alone = _look(routes, _sought(mine))
    assert isinstance(alone, RemoteBatch) and alone.id == "msgbatch_blank"
    routes["/v1/messages/batches"] = {"data": [blank, gone], "has_more": False}
    both = _look(routes, _sought(mine))
    assert isinstance(both, Undecided) and "2 batches" in str(both)


def test_results_without_end_are_read_only_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that sends results without end (no read stalls, so no timeout fires) ends the
    reading after MAX_RESULTS_BYTES, with one problem line: the run goes on."""
    monkeypatch.setattr(jsonl, "MAX_RESULTS_BYTES", 200_000)
    line = json.dumps({"custom_id": "x", "result": {"type": "expired"}}).encode()

    async def main() -> list[ResultLine]:
        runner, url = await _serve({"/v1/messages/batches/msgbatch_x/results": (line + b"\n")
                                    * 20_000})()  # fmt: skip
        try:
            async with aiohttp.ClientSession() as session:
                api = AnthropicBatches(session, "m", url, ApiKey(KEY), origin=Origin.of(url))
                ended = RemoteBatch("msgbatch_x", "completed", "ended")
                return await _results(api, ended)
        finally:
            await runner.cleanup()

    read = asyncio.run(main())
    assert 0 < len(read) - 1 < 200_000 // len(line)
    assert all(not r.ran for r in read[:-1])
    assert read[-1].problem is not None and "of results: not read" in read[-1].problem
