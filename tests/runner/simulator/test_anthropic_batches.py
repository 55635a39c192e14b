"""The simulator's Anthropic Message Batches: a batch's life on the simulator's clock, its
results as the online answers, listing and its cursors, cancelling, deleting, every refusal,
the faults, and the routes (nothing under /v1/messages/batches reaches the online handler)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

from conditions import Cohort, DataRoot, VariantCache
from runner.backends import AnthropicMessages
from runner.simulator import BatchFaults, Faults, SimSpec, Simulator, serving
from runner.simulator._server import CALL_ID_HEADER
from tests.runner.test_against_simulator import CLEAN, KEY, _requests
from tests.runner.test_anthropic_against_simulator import CLAUDE

T = TypeVar("T")
Doc = dict[str, Any]
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
BATCHES = "/v1/messages/batches"
TURNAROUND_S = 10.0
OUTCOMES = ("processing", "succeeded", "errored", "canceled", "expired")


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
    cohort: Cohort, root: DataRoot, cache: VariantCache, clock: Clock, **batch: Any
) -> Simulator:
    faults = BatchFaults(turnaround_s=TURNAROUND_S, **batch)
    spec = SimSpec(behaviour=CLEAN, api_key=KEY, batch=faults)
    return Simulator(cohort, root.images, cache, spec, clock=clock)


def _claude_params(cohort: Cohort, root: DataRoot, cache: VariantCache, n: int) -> list[Doc]:
    """``n`` Messages requests with their images, as groundbench sends them online."""
    wire = AnthropicMessages(CLAUDE.model)
    return [json.loads(bytes(wire.encode(r))) for r in _requests(cohort, root, cache, CLAUDE, n)]


def _text_params(prompt: str = "hi", **extra: Any) -> Doc:
    """A Messages request with no image (the simulator answers it, knowing no question)."""
    return {
        "model": "claude-sonnet-4-5", "max_tokens": 2048,
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}], **extra,
    }  # fmt: skip


def _batch(*ids: str, params: Doc | None = None) -> Doc:
    return {"requests": [{"custom_id": i, "params": params or _text_params()} for i in ids]}


class Api:
    """The batch endpoints over one aiohttp session: each call's status and parsed body."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(
        self, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
    ) -> tuple[int, Any]:  # fmt: skip
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        async with self.session.request(
            method,
            self.url + path,
            data=data,
            params=query or {},
            headers=HEADERS if headers is None else headers,
        ) as r:
            raw = await r.read()
            try:
                return r.status, json.loads(raw)
            except ValueError:
                return r.status, raw

    async def create(self, body: Any) -> tuple[int, Any]:
        return await self.call("POST", BATCHES, body=body)

    async def made(self, *ids: str, params: Doc | None = None) -> Doc:
        status, doc = await self.create(_batch(*ids, params=params))
        assert status == 200, doc
        return dict(doc)

    async def get(self, batch_id: str) -> tuple[int, Any]:
        return await self.call("GET", f"{BATCHES}/{batch_id}")

    async def results(self, batch_id: str) -> tuple[int, bytes, str]:
        async with self.session.get(
            f"{self.url}{BATCHES}/{batch_id}/results", headers=HEADERS
        ) as r:
            return r.status, await r.read(), r.headers.get("Content-Type", "")


def _run(sim: Simulator, body: Callable[[Api], Awaitable[T]]) -> T:
    async def main() -> T:
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            return await body(Api(session, url))

    return asyncio.run(main())


def _anthropic_error(doc: Any, kind: str) -> str:
    """The message of an error in Anthropic's shape, of type ``kind``."""
    assert doc["type"] == "error" and doc["error"]["type"] == kind, doc
    return str(doc["error"]["message"])


def _lines(raw: bytes) -> list[Doc]:
    return [json.loads(line) for line in raw.splitlines()]


def _said(message: Doc) -> list[tuple[str, str]]:
    """What a message says, block by block (a thinking block's signature is per answer)."""
    return [(b["type"], b.get("text") or b["thinking"]) for b in message["content"]]


def _sums_to(counts: Doc, total: int) -> bool:
    return set(counts) == set(OUTCOMES) and sum(counts.values()) == total


# -- a batch's life ----------------------------------------------------------------------------


def test_a_batch_runs_on_the_clock_and_its_results_are_the_online_answers(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    params = _claude_params(small_cohort, small_root, cache, 3)
    ids = ["req-0", "req-1", "req_2"]
    body = {"requests": [{"custom_id": i, "params": p} for i, p in zip(ids, params, strict=True)]}

    async def main(api: Api) -> dict[str, Any]:
        # The body as the SDK may send it: any valid JSON, newlines between the elements.
        status, created = await api.create(json.dumps(body, indent=1).encode())
        assert status == 200, created
        batch_id = created["id"]
        clock.now = TURNAROUND_S - 0.1
        early = await api.get(batch_id)
        results_early = await api.results(batch_id)
        delete_early = await api.call("DELETE", f"{BATCHES}/{batch_id}")
        clock.now = TURNAROUND_S
        _, ended = await api.get(batch_id)
        paid = sum(sim.stats.paid.values())
        got = await api.results(batch_id)
        async with api.session.get(ended["results_url"], headers=HEADERS) as r:
            by_url = await r.read()
        online = {}
        for custom_id, p in zip(ids, params, strict=True):
            headers = {**HEADERS, CALL_ID_HEADER: custom_id}
            online[custom_id] = await api.call("POST", "/v1/messages", body=p, headers=headers)
        deleted = await api.call("DELETE", f"{BATCHES}/{batch_id}")
        return {
            "url": api.url, "created": created, "early": early, "results_early": results_early,
            "delete_early": delete_early, "ended": ended, "paid": paid, "results": got,
            "by_url": by_url, "online": online, "deleted": deleted,
            "gone": [await api.get(batch_id), (await api.results(batch_id))[:2]],
        }  # fmt: skip

    got = _run(sim, main)
    created, ended = got["created"], got["ended"]
    assert created["id"].startswith("msgbatch_") and created["type"] == "message_batch"
    assert created["processing_status"] == "in_progress"
    assert created["request_counts"] == {"processing": 3, "succeeded": 0, "errored": 0,
                                         "canceled": 0, "expired": 0}  # fmt: skip
    assert created["results_url"] is None and created["ended_at"] is None
    assert created["cancel_initiated_at"] is None and created["archived_at"] is None
    assert created["created_at"].endswith("Z") and created["expires_at"] > created["created_at"]
    assert got["early"] == (200, created)  # still in progress: nothing changed
    assert got["results_early"][0] == 400
    assert "no results yet" in _anthropic_error(json.loads(got["results_early"][1]),
                                                "invalid_request_error")  # fmt: skip
    assert got["delete_early"][0] == 400
    assert "Cancel it first" in _anthropic_error(got["delete_early"][1], "invalid_request_error")
    assert ended["processing_status"] == "ended" and ended["ended_at"] is not None
    assert ended["request_counts"] == {"processing": 0, "succeeded": 3, "errored": 0,
                                       "canceled": 0, "expired": 0}  # fmt: skip
    assert ended["results_url"] == f"{got['url']}{BATCHES}/{created['id']}/results"
    assert got["paid"] == 3 and sim.stats.batches_created == 1
    assert sim.stats.submitted == dict.fromkeys(ids, 1)
    status, raw, content_type = got["results"]
    assert status == 200 and content_type == "application/x-jsonl" and raw == got["by_url"]
    lines = {line["custom_id"]: line["result"] for line in _lines(raw)}
    assert sorted(lines) == sorted(ids)
    for custom_id, result in lines.items():
        assert result["type"] == "succeeded" and result["message"]["type"] == "message"
        online_status, message = got["online"][custom_id]
        assert online_status == 200
        assert _said(result["message"]) == _said(message)  # the online answer
    assert got["deleted"] == (200, {"id": created["id"], "type": "message_batch_deleted"})
    (get_status, get_doc), (results_status, _) = got["gone"]
    assert get_status == 404 and _anthropic_error(get_doc, "not_found_error")
    assert results_status == 404


def test_params_are_validated_as_the_batch_runs_not_when_it_is_made(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    thinking = {"type": "enabled", "budget_tokens": 4096}
    bad = _text_params(max_tokens=2048, thinking=thinking)  # a budget not under max_tokens

    async def main(api: Api) -> tuple[Doc, Doc, bytes]:
        created = await api.create(
            {"requests": [{"custom_id": "bad", "params": bad},
                          {"custom_id": "good", "params": _text_params()},
                          {"custom_id": "no-messages", "params": {"max_tokens": 5}}]}
        )  # fmt: skip
        assert created[0] == 200, created
        clock.now = TURNAROUND_S
        _, ended = await api.get(created[1]["id"])
        _, raw, _ = await api.results(ended["id"])
        return created[1], ended, raw

    created, ended, raw = _run(sim, main)
    assert created["processing_status"] == "in_progress"
    assert ended["request_counts"]["errored"] == 2 and ended["request_counts"]["succeeded"] == 1
    results = {line["custom_id"]: line["result"] for line in _lines(raw)}
    assert results["good"]["type"] == "succeeded"
    for custom_id in ("bad", "no-messages"):
        assert results[custom_id]["type"] == "errored"
        _anthropic_error(results[custom_id]["error"], "invalid_request_error")
    assert "budget_tokens" in results["bad"]["error"]["error"]["message"]
    assert sum(sim.stats.paid.values()) == 1  # only the one answered


# -- refusals --------------------------------------------------------------------------------

REFUSED: dict[str, tuple[Any, str]] = {  # the body sent, and what the refusal says
    "not JSON": (b'{"requests": [', "not valid JSON"),
    "deep": (b"[" * 100_000, "not valid JSON"),
    "not an object": ([], "dictionary"),
    "no requests": ({}, "requests: Field required"),
    "requests not a list": ({"requests": {"custom_id": "a"}}, "valid list"),
    "no request": ({"requests": []}, "at least 1 item"),
    "too many": (_batch("a", "b", "c"), "at most 2 items"),
    "a request not an object": ({"requests": ["a"]}, "requests.0: Input should be"),
    "no custom_id": ({"requests": [{"params": _text_params()}]}, "requests.0.custom_id"),
    "custom_id with a space": (_batch("a", "b c"), "requests.1.custom_id: String should match"),
    "custom_id too long": (_batch("x" * 65), "String should match"),
    "empty custom_id": (_batch(""), "String should match"),
    "custom_id with a newline": (_batch("a\n"), "String should match"),
    "duplicate custom_id": (_batch("a", "a"), "requests.1.custom_id: Duplicate"),
    "no params": ({"requests": [{"custom_id": "a"}]}, "requests.0.params: Field required"),
    "params not an object": ({"requests": [{"custom_id": "a", "params": "x"}]}, "params"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_batch_it_will_not_make_is_refused_400_and_nothing_is_made(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, case: str
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock(), max_requests=2)
    body, says = REFUSED[case]

    async def main(api: Api) -> tuple[int, Any, tuple[int, Any]]:
        status, doc = await api.create(body)
        return status, doc, await api.call("GET", BATCHES)

    status, doc, (_, listed) = _run(sim, main)
    assert status == 400
    assert says in _anthropic_error(doc, "invalid_request_error")
    assert listed["data"] == [] and sim.stats.batches_created == 0 and not sim.stats.submitted
    directory = sim.anthropic_batches._dir
    assert directory is None or not list(directory.iterdir())  # no params file left behind


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_past_the_size_limit_is_refused_413_unread(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, chunked: bool
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock(), max_file_bytes=1000)
    body = json.dumps(_batch(*(f"id-{n}" for n in range(40)))).encode()
    assert len(body) > 1000, "the test needs a body over the limit"

    async def chunks() -> AsyncIterator[bytes]:
        for at in range(0, len(body), 256):
            yield body[at : at + 256]

    async def main(api: Api) -> tuple[int, Any]:
        data: Any = chunks() if chunked else body
        async with api.session.post(api.url + BATCHES, data=data, headers=HEADERS) as r:
            return r.status, await r.json()

    status, doc = _run(sim, main)
    assert status == 413
    assert "maximum size of 1000 bytes" in _anthropic_error(doc, "request_too_large")
    assert sim.stats.batches_created == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", BATCHES), ("GET", BATCHES), ("GET", f"{BATCHES}/msgbatch_sim000000"),
     ("POST", f"{BATCHES}/msgbatch_sim000000/cancel"), ("DELETE", f"{BATCHES}/msgbatch_sim000000"),
     ("GET", f"{BATCHES}/msgbatch_sim000000/results"), ("GET", f"{BATCHES}/x/y")],
)  # fmt: skip
def test_a_wrong_key_is_refused_401_on_every_endpoint_and_either_header_takes_the_key(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, method: str, path: str
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock())

    async def main(api: Api) -> list[tuple[int, Any]]:
        await api.made("a")
        return [
            await api.call(method, path, body=_batch("b"), headers=headers)
            for headers in ({"x-api-key": "sk-ant-wrong-0123456789"}, {},
                            {"Authorization": f"Bearer {KEY}"})
        ]  # fmt: skip

    (wrong, wrong_doc), (keyless, keyless_doc), (bearer, _) = _run(sim, main)
    assert wrong == keyless == 401
    assert "sk-ant-wrong" not in _anthropic_error(wrong_doc, "authentication_error")
    _anthropic_error(keyless_doc, "authentication_error")
    assert bearer != 401


def test_spent_credit_refuses_a_new_batch_as_the_api_does(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock(), quota_after_batches=1)

    async def main(api: Api) -> tuple[Doc, tuple[int, Any]]:
        return await api.made("a"), await api.create(_batch("b"))

    made, (status, doc) = _run(sim, main)
    assert made["processing_status"] == "in_progress"
    assert status == 400
    assert "credit balance is too low" in _anthropic_error(doc, "invalid_request_error")
    assert sim.stats.batches_created == 1 and sim.stats.faults["batch-quota"] == 1


def test_batch_endpoints_are_rate_limited_as_online_calls(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    faults = Faults(requests_per_minute=60.0, burst=1)
    spec = SimSpec(api_key=KEY, faults=faults, batch=BatchFaults(turnaround_s=TURNAROUND_S))
    sim = Simulator(small_cohort, small_root.images, cache, spec, clock=Clock())

    async def main(api: Api) -> list[tuple[int, Any]]:
        return [await api.call("GET", BATCHES) for _ in range(2)]  # the clock stands still

    (first, _), (second, doc) = _run(sim, main)
    assert first == 200 and second == 429
    _anthropic_error(doc, "rate_limit_error")


# -- listing ---------------------------------------------------------------------------------


def test_the_list_pages_newest_first_both_ways_and_ids_are_never_reused(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)

    async def main(api: Api) -> dict[str, Any]:
        made = [(await api.made(f"b{n}"))["id"] for n in range(5)]
        pages: list[Doc] = []
        query: dict[str, str] = {"limit": "2"}
        for _ in range(5):  # bounded: three pages are expected
            status, page = await api.call("GET", BATCHES, query=query)
            assert status == 200, page
            pages.append(page)
            if not page["has_more"]:
                break
            query = {"limit": "2", "after_id": page["last_id"]}
        before = [
            (await api.call("GET", BATCHES, query={"limit": "2", "before_id": made[0]}))[1],
            (await api.call("GET", BATCHES, query={"limit": "2", "before_id": made[2]}))[1],
        ]
        clock.now = TURNAROUND_S
        deleted = await api.call("DELETE", f"{BATCHES}/{made[2]}")
        after_deleted = (await api.call("GET", BATCHES, query={"after_id": made[2]}))[1]
        again = (await api.made("b5"))["id"]
        refused = [
            await api.call("GET", BATCHES, query={"limit": limit})
            for limit in ("0", "1001", "many")
        ] + [await api.call("GET", BATCHES, query={"after_id": made[1], "before_id": made[3]})]
        unknown = (await api.call("GET", BATCHES, query={"after_id": "msgbatch_nobody"}))[1]
        default = (await api.call("GET", BATCHES))[1]
        return {
            "made": made, "pages": pages, "before": before, "deleted": deleted,
            "after_deleted": after_deleted, "again": again, "refused": refused,
            "unknown": unknown, "default": default,
        }  # fmt: skip

    got = _run(sim, main)
    made = got["made"]
    assert len(set(made)) == 5
    assert [[b["id"] for b in p["data"]] for p in got["pages"]] == [
        made[4:2:-1],
        made[2:0:-1],
        made[:1],
    ]
    assert [p["has_more"] for p in got["pages"]] == [True, True, False]
    for page in got["pages"]:
        assert set(page) == {"data", "has_more", "first_id", "last_id"}
        assert (page["first_id"], page["last_id"]) == (
            page["data"][0]["id"],
            page["data"][-1]["id"],
        )
    nearest, newest = got["before"]
    assert [b["id"] for b in nearest["data"]] == [made[2], made[1]] and nearest["has_more"]
    assert [b["id"] for b in newest["data"]] == [made[4], made[3]] and not newest["has_more"]
    assert got["deleted"][0] == 200
    assert [b["id"] for b in got["after_deleted"]["data"]] == [made[1], made[0]]
    assert got["again"] not in made  # a deleted batch's id is not given again
    for status, doc in got["refused"]:
        assert status == 400
        _anthropic_error(doc, "invalid_request_error")
    assert got["unknown"] == {"data": [], "has_more": False, "first_id": None, "last_id": None}
    listed = [b["id"] for b in got["default"]["data"]]
    assert listed == [got["again"], made[4], made[3], made[1], made[0]]
    assert all(b["processing_status"] == "ended" for b in got["default"]["data"][1:])


# -- cancelling ------------------------------------------------------------------------------


def test_a_cancelled_batch_ends_on_the_next_look_with_every_request_canceled(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)

    async def main(api: Api) -> dict[str, Any]:
        made = await api.made("a", "b")
        kept = await api.made("c")
        clock.now = 1.0
        cancel = f"{BATCHES}/{made['id']}/cancel"
        canceling = await api.call("POST", cancel)
        clock.now = 2.0
        _, ended = await api.call("POST", cancel)  # the next look: it ends
        clock.now = 3.0
        again = await api.get(made["id"])
        _, raw, _ = await api.results(made["id"])
        after = await api.call("POST", cancel)
        unknown = await api.call("POST", f"{BATCHES}/msgbatch_nobody/cancel")
        _, other = await api.get(kept["id"])
        return {
            "canceling": canceling, "again": again, "ended": ended, "raw": raw, "after": after,
            "unknown": unknown, "other": other,
        }  # fmt: skip

    got = _run(sim, main)
    status, canceling = got["canceling"]
    assert status == 200 and canceling["processing_status"] == "canceling"
    assert canceling["cancel_initiated_at"] is not None and canceling["results_url"] is None
    assert _sums_to(canceling["request_counts"], 2)
    assert canceling["request_counts"]["processing"] == 2
    ended = got["ended"]
    assert got["again"] == (200, ended)
    assert ended["processing_status"] == "ended" and ended["ended_at"] is not None
    assert ended["cancel_initiated_at"] == canceling["cancel_initiated_at"]
    assert ended["request_counts"]["canceled"] == 2 and _sums_to(ended["request_counts"], 2)
    assert _lines(got["raw"]) == [{"custom_id": i, "result": {"type": "canceled"}}
                                  for i in ("a", "b")]  # fmt: skip
    assert got["after"] == (200, ended)  # ended: a cancel changes nothing
    assert got["unknown"][0] == 404
    assert got["other"]["processing_status"] == "in_progress"  # another batch runs on
    assert sim.stats.paid == {}


# -- faults ----------------------------------------------------------------------------------


def test_failing_and_expiring_batches_end_as_chosen_and_the_counts_always_sum(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    faults = {"fail_first": 1, "expire_first": 2, "expired_share": 0.5}
    sim = _sim(small_cohort, small_root, cache, clock, **faults)

    async def main(api: Api) -> list[tuple[Doc, list[Doc]]]:
        made = [await api.made(*(f"b{b}-{n}" for n in range(4))) for b in range(3)]
        clock.now = TURNAROUND_S
        ended = []
        for batch in made:
            _, doc = await api.get(batch["id"])
            _, raw, _ = await api.results(batch["id"])
            ended.append((doc, _lines(raw)))
        return ended

    (failed, failed_lines), (expired, expired_lines), (fine, fine_lines) = _run(sim, main)
    for doc, lines in ((failed, failed_lines), (expired, expired_lines), (fine, fine_lines)):
        assert doc["processing_status"] == "ended" and _sums_to(doc["request_counts"], 4)
        assert len(lines) == 4
    assert failed["request_counts"]["errored"] == 4
    for line in failed_lines:
        assert line["result"]["type"] == "errored"
        _anthropic_error(line["result"]["error"], "api_error")
    assert expired["request_counts"]["succeeded"] == 2 == expired["request_counts"]["expired"]
    assert [line["result"]["type"] for line in expired_lines] == ["succeeded"] * 2 + ["expired"] * 2
    assert fine["request_counts"]["succeeded"] == 4
    assert sum(sim.stats.paid.values()) == 6  # the failed batch and the expired half: unpaid
    assert sim.stats.faults["batch-failed"] == 1 and sim.stats.faults["batch-expired"] == 1


@pytest.mark.parametrize("fault", ["line_error", "malformed_line"])
def test_a_requests_faults_an_api_error_or_a_line_cut_short(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, fault: str
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock, **{fault: 1.0})

    async def main(api: Api) -> tuple[Doc, bytes]:
        made = await api.made("a", "b")
        clock.now = TURNAROUND_S
        _, ended = await api.get(made["id"])
        return ended, (await api.results(made["id"]))[1]

    ended, raw = _run(sim, main)
    counts, lines = ended["request_counts"], raw.splitlines()
    assert _sums_to(counts, 2) and len(lines) == 2
    if fault == "line_error":
        assert counts["errored"] == 2 and sim.stats.paid == {}
        for line in _lines(raw):
            _anthropic_error(line["result"]["error"], "api_error")
    else:
        assert counts["succeeded"] == 2  # answered (and paid), written cut short
        assert sum(sim.stats.paid.values()) == 2
        for cut in lines:
            with pytest.raises(ValueError):
                json.loads(cut)


# -- routes ----------------------------------------------------------------------------------


def test_nothing_under_the_batches_path_reaches_the_online_handler(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    bearer = {"Authorization": f"Bearer {KEY}"}

    async def main(api: Api) -> dict[str, Any]:
        prefixed = BATCHES.replace("/v1", "/anthropic/v1")
        status, made = await api.call("POST", prefixed, body=_batch("a"))
        assert status == 200, made
        clock.now = TURNAROUND_S
        _, ended = await api.call("GET", f"{prefixed}/{made['id']}")
        return {
            "online": await api.call("POST", "/v1/messages", body=_text_params()),
            "post_id": await api.call("POST", f"{BATCHES}/{made['id']}", body=_text_params()),
            "deeper": await api.call("POST", f"{BATCHES}/x/v1/messages", body=_text_params()),
            "unknown": await api.call("GET", f"{BATCHES}/msgbatch_nobody"),
            "openai": await api.call("GET", "/v1/batches", headers=bearer),
            "ended": ended, "url": api.url,
        }  # fmt: skip

    got = _run(sim, main)
    assert got["online"][0] == 200 and got["online"][1]["type"] == "message"
    for name in ("post_id", "deeper", "unknown"):
        status, doc = got[name]
        assert status == 404
        _anthropic_error(doc, "not_found_error")
    assert got["openai"][0] == 200 and got["openai"][1]["object"] == "list"
    ended = got["ended"]
    assert ended["results_url"] == f"{got['url']}/anthropic{BATCHES}/{ended['id']}/results"
    assert sum(sim.stats.paid.values()) == 2  # the batch's request and the online call


def test_the_params_and_results_live_on_disk_until_shutdown(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)

    async def main(api: Api) -> tuple[Path, list[str], list[str]]:
        made = await api.made("a")
        directory = sim.anthropic_batches._dir
        assert directory is not None
        running = sorted(p.name for p in directory.iterdir())
        clock.now = TURNAROUND_S
        await api.get(made["id"])
        return directory, running, sorted(p.name for p in directory.iterdir())

    directory, running, ended = _run(sim, main)
    assert running == ["params-000001.jsonl"]
    assert ended == ["msgbatch_sim000000-results.jsonl"]  # the params go once answered
    assert not directory.exists()
