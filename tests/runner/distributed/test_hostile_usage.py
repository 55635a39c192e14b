"""What a server says of its usage never turns the spending cap off, ends a run or loses a
paid answer (issue 56).

A hostile OpenAI-compatible server on loopback bills every call 1,000 tokens in and 1,000 out
($2 at $1,000/M each), whatever it reports; the run's own parts (the feeder under a $20 cap,
a real worker, a real store, no Ray) drive a grid against it. Before, a negative count lowered
the spend below zero and the cap let every call through; a count past 2⁶³ raised out of the
store's write and lost the answers; an empty ``choices`` was retried three times per attempt
and counted at nothing; and no ``usage`` was counted at nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.hostile_usage import REPLIES as HOSTILE
from benchmarks.hostile_usage import completion
from conditions import Cohort, DataRoot
from runner.distributed import (
    BackendWorker,
    Feed,
    Feeder,
    FeedPolicy,
    SpendCap,
    StorePort,
    WorstCase,
)
from runner.store import ResponseRow, Store
from tests.runner.distributed.test_worker import _configuration, _setup, _store

BILLED = (1000, 1000)  # what every call really costs, in and out
MAX_OUTPUT = 1000  # the configuration's max_output_tokens: the server bills no more
INPUT_BOUND = 1000  # the cap's bound on a call's input (the estimate, 250, times 4)
CAP = 20.0


def _dollars(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * 1000 + output_tokens * 1000) / 1e6


REAL_CALL = _dollars(*BILLED)  # $2


UNKNOWN = {"negative", "past-int64", "past-float", "no-usage"}


@dataclass
class Hostile:
    """The server: every reply in ``replies`` in turn (the last one again and again), and
    what it billed for them: what it reported where that is a count, else its real tokens
    (:data:`BILLED`, output at ``max_output_tokens``)."""

    replies: Sequence[bytes]
    calls: int = 0
    billed: float = 0.0

    async def answer(self, request: web.Request) -> web.Response:
        await request.read()
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        self.billed += _billed(reply)
        return web.Response(body=reply, content_type="application/json")


def _billed(reply: bytes) -> float:
    """What the server bills for ``reply``, read apart from groundbench's reader."""
    usage = json.loads(reply).get("usage") or {}
    said = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    counts = [v if type(v) is int and 0 <= v < 2**31 else None for v in said]
    return _dollars(*(c if c is not None else b for c, b in zip(counts, BILLED, strict=True)))


def _run(store: Store, cohort: Cohort, root: DataRoot, tmp: Path, server: Hostile) -> Feed:
    """The store's grid against ``server`` under a $20 cap, as a run's parts drive it."""

    async def write(rows: Sequence[ResponseRow]) -> int:
        return store.write_responses(rows)

    async def main() -> Feed:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", server.answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        configuration = _configuration(url, max_transport_retries=2, retry_backoff_s=0.01)
        configuration = configuration.model_copy(
            update={"decoding": configuration.decoding.model_copy(
                update={"max_output_tokens": MAX_OUTPUT})},
        )  # fmt: skip
        setup = _setup(configuration, root.images, tmp / "variants")
        worker = BackendWorker(setup, cohort, write, lambda _: None)
        worst = WorstCase(
            _dollars, INPUT_BOUND, {configuration.name: MAX_OUTPUT}, {configuration.name: 3}
        )
        feed = Feed("hostile", (configuration.name,), worker, _no_restart, worker.shape,
                    cost=_dollars, worst=worst)  # fmt: skip
        cap = SpendCap(CAP)
        try:
            await Feeder(StorePort.local(store), FeedPolicy(), lambda _: None, cap=cap).drive(feed)
        finally:
            await worker.close()
            await runner.cleanup()
        assert cap.spent <= CAP and cap.reserved == 0
        return feed

    return asyncio.run(main())


async def _no_restart() -> BackendWorker:
    raise AssertionError("a worker in this process does not die")


def _rows(store: Store) -> list[tuple[object, ...]]:
    return store.repository.query(
        "SELECT outcome, http_status, input_tokens, output_tokens, usage_unknown FROM responses"
    )[1]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_usage_keeps_the_real_bill_under_the_cap_and_every_answer_stored(
    name: str, small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    server = Hostile([HOSTILE[name]])
    feed = _run(store, small_cohort, small_root, tmp_path, server)
    rows = _rows(store)
    assert server.billed == server.calls * REAL_CALL <= CAP  # what the server billed
    assert len(rows) == server.calls > 0  # every answered call is a row
    assert feed.stop is not None and feed.stop.kind == "capped"
    if name in UNKNOWN:  # counted at the worst case the cap reserved: input bound, max output
        assert set(rows) == {("answer", 200, INPUT_BOUND, MAX_OUTPUT, 1)}
        assert feed.tally.usage_unknown == len(rows)
    else:  # billed as reported, though no answer could be read: a transient error, not retried
        assert set(rows) == {("transient", 200, *BILLED, 0)}
        assert feed.tally.transient_ended == len(rows) and feed.tally.http_calls == len(rows)
    assert feed.spent == pytest.approx(server.billed)  # counted as the server billed
    store.close()


def test_an_answer_the_store_cannot_write_is_stored_as_that_attempts_problem_with_its_bill(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    # A lone surrogate is valid JSON and no UTF-8: Arrow refuses the string. Before, the
    # write raised out of the worker and the run ended, every row of the batch lost.
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    usage = '{"prompt_tokens": 1000, "completion_tokens": 1000}'
    server = Hostile([completion(usage, '[{"message": {"content": "\\ud800"}}]')])
    feed = _run(store, small_cohort, small_root, tmp_path, server)
    rows = store.repository.query(
        "SELECT outcome, error_code, answer, input_tokens, output_tokens FROM responses"
    )[1]
    assert len(rows) == server.calls > 0 and server.billed <= CAP
    assert set(rows) == {("transient", "not-stored", None, *BILLED)}
    assert feed.spent == pytest.approx(server.billed)
    store.close()


# Usage values of every kind a server may send: counts, and what no count is.
_VALUES = st.one_of(
    st.integers(0, 1000),
    st.integers(-(10**12), -1),
    st.integers(2**31, 10**40),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.none(),
)


@st.composite
def _replies(draw: st.DrawFn) -> list[bytes]:
    """Replies in a row: each usage any values (or none), each answer readable or not."""
    replies = []
    for _ in range(draw(st.integers(1, 6))):
        usage = draw(
            st.none()
            | st.fixed_dictionaries({"prompt_tokens": _VALUES, "completion_tokens": _VALUES})
        )
        choices = draw(st.sampled_from(['[{"message": {"content": "no"}}]', "[]", '"x"', "null"]))
        text = None if usage is None else json.dumps(usage)
        replies.append(completion(text, choices))
    return replies


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(replies=_replies())
def test_law_no_replies_let_what_the_server_billed_pass_the_cap(
    replies: list[bytes],
    small_cohort: Cohort,
    small_root: DataRoot,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Whatever it reports, the server bills each call what it reported where that is a count
    (at most the worst case: an honest input and ``max_output_tokens``), and its worst case
    where it is not: the sum never passes the cap, and every call it answered is a row."""
    tmp = tmp_path_factory.mktemp("law")
    store = _store(tmp / "exp.duckdb", small_cohort)
    server = Hostile(replies)
    _run(store, small_cohort, small_root, tmp, server)
    assert server.billed <= CAP and len(_rows(store)) == server.calls
    store.close()
