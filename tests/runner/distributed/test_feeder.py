"""The run's policy without Ray: the feeder drives in-process workers and fakes that die.

Two kinds of backend: a fake that "sends" a chunk by marking its calls done in a fake store
(and can die, or meet its quota, on chunk k), and the real :class:`BackendWorker` against the
simulator on loopback with a real store, wrapped to die after part of chunk k has landed — the
cases the Ray fault suite covers, counted rather than timed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conditions import Cohort, DataRoot, VariantCache
from runner._errors import RunnerError
from runner.backends import ApiKey
from runner.distributed import (
    BackendWorker,
    ChunkOutcome,
    Feed,
    Feeder,
    FeedPolicy,
    RunFailed,
    WorkerLost,
    score_to_the_end,
)
from runner.distributed._spend import SpendCap
from runner.simulator import SimSpec, Simulator, serving
from runner.store import Pending, ResponseRow
from tests.runner.distributed.local import StorePort
from tests.runner.distributed.test_worker import CLEAN, _configuration, _store

SMALL = FeedPolicy(chunk=4, chunks_in_flight=2, max_restarts=2)


def _calls(n: int) -> list[Pending]:
    return [Pending("m", "base", 8, f"q{i:03d}", 0) for i in range(n)]


@dataclass
class FakeStore:
    """The pending set of one configuration; a call is done once a backend "sends" it."""

    calls: list[Pending]
    done: set[str] = field(default_factory=set)
    asked: int = 0  # times the feeder asked what is pending
    left_unscored: list[int] = field(default_factory=list)  # unscored() answers, in turn
    requeued: int = 0

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        self.asked += 1
        return [p for p in self.calls if p.qid not in self.done]

    async def unscored(self) -> int:
        return self.left_unscored.pop(0) if self.left_unscored else 0

    async def requeue_unscored(self) -> None:
        self.requeued += 1


@dataclass
class FakeBackend:
    """Sends chunks into ``store``; on chunk ``die_on`` (counted over its life) it sends
    ``before_death`` of the calls and dies; on chunk ``quota_on`` it reports a quota error."""

    store: FakeStore
    sent: list[str] = field(default_factory=list)  # every call that reached "the provider"
    chunks: int = 0
    running: int = 0
    most_running: int = 0
    die_on: int | None = None
    before_death: int = 0
    quota_on: int | None = None
    refused_on: int | None = None
    fail_on: int | None = None
    resumed: int = 0
    tokens_per_call: int = 0  # input tokens each answer reports

    async def run(self, chunk: list[Pending]) -> ChunkOutcome:
        self.chunks += 1
        number = self.chunks
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(0)  # let the feeder queue what it would
            if number == self.fail_on:
                raise RunnerError("the store refused a write")
            if number == self.die_on:
                self._send(chunk[: self.before_death])
                raise WorkerLost("actor died")
            if number == self.quota_on:
                self._send(chunk[:1])
                return ChunkOutcome(1, 1, 1, 0, quota="insufficient_quota")
            if number == self.refused_on:
                return ChunkOutcome(1, 1, 0, 1, refused="fatal (HTTP 401 invalid_api_key): no")
            self._send(chunk)
            tokens = self.tokens_per_call * len(chunk)
            return ChunkOutcome(len(chunk), len(chunk), len(chunk), 0, input_tokens=tokens)
        finally:
            self.running -= 1

    async def resume_after_quota(self) -> None:
        self.resumed += 1

    def _send(self, calls: Sequence[Pending]) -> None:
        for p in calls:
            self.sent.append(p.qid)
            self.store.done.add(p.qid)


def _feed(backend: FakeBackend, restarts: list[FakeBackend] | None = None) -> Feed:
    """A feed whose restart hands out the next of ``restarts`` (fresh, healthy workers)."""
    spares = list(restarts or [])

    async def restart() -> FakeBackend:
        return spares.pop(0)

    return Feed("b", ("m",), backend, restart)


def _drive(
    store: FakeStore, feed: Feed, policy: FeedPolicy = SMALL, cap: SpendCap | None = None
) -> list[str]:
    lines: list[str] = []

    async def no_wait(_: float) -> None:
        return None

    asyncio.run(Feeder(store, policy, lines.append, no_wait, cap=cap).drive(feed))
    return lines


def test_every_call_is_sent_once_with_at_most_the_chunks_in_flight() -> None:
    store = FakeStore(_calls(37))
    backend = FakeBackend(store)
    feed = _feed(backend)
    _drive(store, feed)
    assert sorted(backend.sent) == [p.qid for p in store.calls]  # each once
    assert backend.chunks == 10 and backend.most_running == 2  # ceil(37 / 4), two at a time
    assert feed.finished == 37 and feed.restarts == 0 and store.asked == 1


@pytest.mark.parametrize("die_on", [1, 2, 5, 10])
@pytest.mark.parametrize("before_death", [0, 3])
def test_a_worker_dying_on_chunk_k_costs_no_call_twice_and_loses_none(
    die_on: int, before_death: int
) -> None:
    store = FakeStore(_calls(37))
    dying = FakeBackend(store, die_on=die_on, before_death=before_death)
    fresh = FakeBackend(store)
    feed = _feed(dying, [fresh])
    lines = _drive(store, feed)
    sent = dying.sent + fresh.sent
    assert sorted(sent) == [p.qid for p in store.calls]  # every call once: none lost, none twice
    assert feed.restarts == 1 and feed.port is fresh
    assert len(fresh.sent) == 37 - len(dying.sent)  # the new worker gets only what is left
    assert lines == [f"backend b: actor restarted; {len(fresh.sent)} calls re-sent"]


def test_a_worker_that_keeps_dying_fails_the_run_after_the_restarts_allowed() -> None:
    store = FakeStore(_calls(20))
    workers = [FakeBackend(store, die_on=1, before_death=1) for _ in range(4)]
    feed = _feed(workers[0], workers[1:])
    with pytest.raises(RunFailed, match="backend b: its actor died 3 times"):
        _drive(store, feed)
    assert feed.restarts == 3 and workers[3].chunks == 0  # no fourth worker is fed
    sent = [q for w in workers for q in w.sent]
    assert len(sent) == len(set(sent)) == len(store.done)  # what landed stays; none twice


def test_quota_stops_the_backend_and_nothing_more_is_fed() -> None:
    store = FakeStore(_calls(40))
    backend = FakeBackend(store, quota_on=3)
    feed = _feed(backend)
    lines = _drive(store, feed)
    assert feed.quota == "insufficient_quota"
    # Chunk 3 met the quota while chunk 4 was queued behind it; no chunk after that one.
    assert backend.chunks == 4 and len(backend.sent) == 4 + 4 + 1 + 4
    assert lines == ["backend b: quota exhausted, stopped: insufficient_quota"]


def test_after_the_quota_wait_the_backend_resumes_with_what_is_pending() -> None:
    store = FakeStore(_calls(40))
    backend = FakeBackend(store, quota_on=3)
    feed = _feed(backend)
    waited = FeedPolicy(chunk=4, wait_on_quota_s=30.0, max_quota_waits=1)
    lines = _drive(store, feed, waited)
    assert backend.resumed == 1 and feed.quota is None
    assert sorted(backend.sent) == [p.qid for p in store.calls]  # the rest, each once
    assert lines == ["backend b: quota exhausted; trying again in 30 s"]


def test_a_refused_key_stops_the_backend_at_once_with_no_wait() -> None:
    store = FakeStore(_calls(40))
    backend = FakeBackend(store, refused_on=2)
    feed = _feed(backend)
    waited = FeedPolicy(chunk=4, wait_on_quota_s=30.0, max_quota_waits=3)  # not for a key
    lines = _drive(store, feed, waited)
    assert feed.refused == "fatal (HTTP 401 invalid_api_key): no" and feed.quota is None
    # Chunks 1 and 2 ran together, 2 meeting the refusal: no chunk was fed after it.
    assert backend.chunks == 2 and backend.resumed == 0 and len(store.done) == 4
    assert lines == [
        "backend b: stopped, no call of it can succeed: fatal (HTTP 401 invalid_api_key): no"
    ]


@pytest.mark.parametrize("prior", [1.0, 3.0, 0.5])  # the estimate per call: right, high, low
def test_a_spending_cap_stops_the_calls_where_the_money_runs_out(prior: float) -> None:
    store = FakeStore(_calls(40))
    backend = FakeBackend(store, tokens_per_call=1000)
    feed = _feed(backend)
    feed.cost = lambda input_tokens, _output: input_tokens / 1000  # a dollar a call
    feed.call_cost = prior
    cap = SpendCap(10.5)
    lines = _drive(store, feed, cap=cap)
    sent = len(backend.sent)
    assert feed.capped and feed.spent == sent == cap.spent and cap.reserved == 0
    assert lines == [
        f"spending cap reached: ${sent:,.2f} of $10.50 spent this run; no further call is sent "
        "(the calls in flight end)"
    ]
    if prior == 1.0:
        assert sent == 10  # every call the money pays for, and not one more
    elif prior > 1.0:  # stops short by what the high estimate of the next call holds back
        assert 8 <= sent <= 10
    else:  # an estimate too low overshoots by no more than the calls in flight
        assert 10 < sent <= 10 + SMALL.chunk * SMALL.chunks_in_flight
    assert sent == len(set(backend.sent))


def test_backends_share_the_cap_and_none_is_stopped_while_another_holds_money_back() -> None:
    # Backend a's estimate is 5 times its real cost: its first chunk holds back money it
    # will not spend. Backend b must wait for it, not stop with nothing sent.
    feeds, backends = [], []
    for name, prior in (("a", 5.0), ("b", 1.0)):
        store = FakeStore(_calls(40))
        backend = FakeBackend(store, tokens_per_call=1000)
        feed = Feed(name, ("m",), backend, _no_restart)
        feed.cost = lambda input_tokens, _output: input_tokens / 1000
        feed.call_cost = prior
        feeds.append((store, feed))
        backends.append(backend)
    cap = SpendCap(20.5)
    lines: list[str] = []

    async def both() -> None:
        await asyncio.gather(
            *(Feeder(store, SMALL, lines.append, cap=cap).drive(feed) for store, feed in feeds)
        )

    asyncio.run(both())
    sent = [len(b.sent) for b in backends]
    assert all(n > 0 for n in sent) and all(f.capped for _, f in feeds)
    assert 18 <= sum(sent) <= 20 and cap.spent == sum(sent) and cap.reserved == 0


async def _no_restart() -> FakeBackend:
    raise AssertionError("no worker dies here")


def test_a_free_backend_is_never_stopped_by_the_cap() -> None:
    store = FakeStore(_calls(20))
    backend = FakeBackend(store, tokens_per_call=1000)
    feed = _feed(backend)  # no prices: every call costs nothing
    assert _drive(store, feed, cap=SpendCap(0.0)) == []
    assert len(backend.sent) == 20 and not feed.capped


def test_an_error_of_the_worker_ends_the_drive_as_itself() -> None:
    store = FakeStore(_calls(40))
    backend = FakeBackend(store, fail_on=2)
    with pytest.raises(RunnerError, match="the store refused a write"):
        _drive(store, _feed(backend))
    assert backend.chunks == 2  # nothing fed after the error


# -- scoring rounds ------------------------------------------------------------------------------


async def _lost() -> None:
    raise WorkerLost("scorer died")


async def _fine() -> None:
    return None


def test_a_scorer_that_dies_is_replaced_and_what_it_held_is_scored() -> None:
    store = FakeStore([], left_unscored=[7, 0])
    again: list[tuple[int, bool]] = []

    def next_run(i: int, lost: bool) -> asyncio.Future[None]:
        again.append((i, lost))
        return asyncio.ensure_future(_fine())

    async def main() -> int:
        return await score_to_the_end(store, [_fine(), _lost()], next_run)

    assert asyncio.run(main()) == 0
    assert store.requeued == 1 and again == [(0, False), (1, True)]


def test_scoring_gives_up_after_its_rounds_and_says_what_is_left() -> None:
    store = FakeStore([], left_unscored=[5, 5, 5, 5])

    async def main() -> int:
        return await score_to_the_end(store, [_lost()], lambda i, lost: _lost(), rounds=3)

    assert asyncio.run(main()) == 5 and store.requeued == 2  # none after the last round


def test_a_scorers_own_error_is_raised() -> None:
    async def broken() -> None:
        raise RunnerError("scores table is gone")

    async def main() -> int:
        return await score_to_the_end(FakeStore([]), [broken()], lambda i, lost: _fine())

    with pytest.raises(RunnerError, match="scores table is gone"):
        asyncio.run(main())


# -- the real worker, dying after part of a chunk has landed -------------------------------------


class DiesMidChunk:
    """A real worker that, on chunk ``die_on``, sends only the first ``sent`` calls of it and
    then dies — their records are stored, the rest of the chunk is lost with the worker."""

    def __init__(self, worker: BackendWorker, die_on: int, sent: int) -> None:
        self.worker, self.die_on, self.sent, self.chunks = worker, die_on, sent, 0

    async def run(self, chunk: list[Pending]) -> ChunkOutcome:
        self.chunks += 1
        if self.chunks == self.die_on:
            await self.worker.run(chunk[: self.sent])
            raise WorkerLost("actor died")
        return await self.worker.run(chunk)

    async def resume_after_quota(self) -> None:
        await self.worker.resume_after_quota()


@pytest.mark.parametrize("die_on", [1, 3])
def test_a_real_worker_dying_mid_chunk_is_resumed_with_no_call_paid_twice(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path, die_on: int
) -> None:
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    requests = len(store.pending())
    simulator = Simulator(
        small_cohort, small_root.images, VariantCache(tmp_path / "v"), SimSpec(behaviour=CLEAN)
    )

    async def write(rows: Sequence[ResponseRow]) -> int:
        return store.write_responses(rows)

    async def main() -> Feed:
        async with serving(simulator) as url:
            workers: list[BackendWorker] = []

            def worker() -> BackendWorker:
                workers.append(
                    BackendWorker([_configuration(url)], small_cohort, small_root.images,
                                  tmp_path / "v", write, lambda _: ApiKey("sk-test"))
                )  # fmt: skip
                return workers[-1]

            async def restart() -> BackendWorker:
                return worker()

            feed = Feed("qwen", (_configuration(url).name,), DiesMidChunk(worker(), die_on, 5),
                        restart)  # fmt: skip
            try:
                await Feeder(StorePort(store), FeedPolicy(chunk=16), lambda _: None).drive(feed)
            finally:
                for w in workers:
                    await w.close()
            return feed

    feed = asyncio.run(main())
    assert feed.restarts == 1 and store.pending() == []
    _, ((answers, keys),) = store.query(
        "SELECT count(*), count(DISTINCT (configuration, condition, budget, qid)) FROM responses"
    )
    assert answers == keys == requests  # every request answered once
    assert sum(simulator.stats.statuses.values()) == requests  # and paid for once
