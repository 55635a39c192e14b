"""The run's policy without Ray: the feeder drives in-process ports and fakes that die.

Every rule is tested in both modes, through one fake port shaped as an online worker (its
concurrency and a small buffer, each attempt handed once a run) or as a batch-mode one (big
leases, attempts handed again when a batch never ran them); and through the real
:class:`BackendWorker` against the simulator on loopback with a real store, wrapped to die
after part of lease k has landed — the cases the Ray fault suite covers, counted, not timed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conditions import Cohort, DataRoot, VariantCache
from runner._errors import RunnerError
from runner.backends import ApiKey
from runner.distributed import (
    BackendWorker,
    Feed,
    Feeder,
    FeedPolicy,
    Outcome,
    RunFailed,
    Shape,
    SpendCap,
    Stop,
    StorePort,
    Tally,
    WorkerLost,
    WorstCase,
    online_shape,
    score_to_the_end,
)
from runner.simulator import SimSpec, Simulator, serving
from runner.store import Pending, ResponseRow
from tests.runner.distributed.test_worker import CLEAN, _configuration, _setup, _store

ONLINE = online_shape(4)  # holds 5, a lease of 1
BATCH = Shape(holds=12, lease=6, resends=2, one_attempt=True)
MODES = pytest.mark.parametrize("shape", [ONLINE, BATCH], ids=["online", "batch"])
_SPENT = Stop(kind="quota", why="insufficient_quota")
_REFUSED = Stop(kind="refused", why="fatal (HTTP 401): no")


def _capped(feed: Feed) -> bool:
    return feed.stop is not None and feed.stop.kind == "capped"


def _calls(n: int) -> list[Pending]:
    return [
        Pending(configuration="m", condition="base", budget=8, qid=f"q{i:03d}", next_attempt=0)
        for i in range(n)
    ]


@dataclass
class FakeStore:
    """The pending set of one configuration; a call is done once a port "sends" it."""

    calls: list[Pending]
    done: set[str] = field(default_factory=set)
    asked: int = 0  # times the feeder asked what is pending
    left_unscored: list[int] = field(default_factory=list)  # unscored() answers, in turn
    requeued: int = 0
    next_attempt: dict[str, int] = field(default_factory=dict)  # once a later attempt errored

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        self.asked += 1
        return [
            p._replace(next_attempt=self.next_attempt.get(p.qid, p.next_attempt))
            for p in self.calls
            if p.qid not in self.done
        ]

    async def unscored(self) -> int:
        return self.left_unscored.pop(0) if self.left_unscored else 0

    async def requeue_unscored(self) -> None:
        self.requeued += 1


@dataclass
class FakePort:
    """Sends leases into ``store``. On lease ``die_on`` (counted over its life) it sends
    ``before_death`` of the calls and dies; on lease ``quota_on`` it sends one call and
    reports a quota error; on ``refused_on`` one call meets a refused key."""

    store: FakeStore
    sent: list[str] = field(default_factory=list)  # every call that reached "the provider"
    leases: int = 0
    sizes: list[int] = field(default_factory=list)
    holding: int = 0
    most_holding: int = 0
    die_on: int | None = None
    before_death: int = 0
    quota_on: int | None = None
    refused_on: int | None = None
    fail_on: int | None = None
    take_only: int | None = None  # sends this many of each lease and gives the rest back
    never_runs: set[str] = field(default_factory=set)  # "sent" but never run (an expiry)
    # Online: attempt 0 answers unparseable and attempt 1 ends in an error (pending again)
    errs_after_one: set[str] = field(default_factory=set)
    resumed: int = 0
    collected: int = 0
    stopped_at: int | None = None  # the lease that stopped it
    after_stop: int = 0  # leases handed after it had reported the stop
    tokens: tuple[int, int] = (0, 0)  # input and output tokens each answer reports

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        self.leases += 1
        number = self.leases
        self.after_stop += self.stopped_at is not None
        self.sizes.append(len(calls))
        self.holding += len(calls)
        self.most_holding = max(self.most_holding, self.holding)
        try:
            await asyncio.sleep(0)  # let the feeder hand what it would
            return self._outcome(number, calls)
        finally:
            self.holding -= len(calls)

    def _outcome(self, number: int, calls: list[Pending]) -> Outcome:
        if number == self.fail_on:
            raise RunnerError("the store refused a write")
        if number == self.die_on:
            self._send(calls[: self.before_death])
            raise WorkerLost("actor died")
        if number in (self.quota_on, self.refused_on):
            self.stopped_at = number
            quota = number == self.quota_on
            if quota:
                self._send(calls[:1])
            back = tuple(calls[1:])
            if quota:
                return Outcome(_answered(1), stop=_SPENT, given_back=back)
            return Outcome(Tally(finished=1, attempts=1), stop=_REFUSED, given_back=back)
        taken = calls[: self.take_only] if self.take_only is not None else calls
        ran = [c for c in taken if c.qid not in self.never_runs]
        self._send(ran)
        n = len(ran)
        tally = _answered(n, n * self.tokens[0], n * self.tokens[1], self.tokens[0] if n else 0)
        return Outcome(tally, given_back=tuple(calls[len(taken) :]))

    async def collect_open(self) -> Outcome:
        self.collected += 1
        return Outcome.nothing()

    async def resume_after_quota(self) -> None:
        self.resumed += 1
        self.stopped_at = None

    def _send(self, calls: Sequence[Pending]) -> None:
        for p in calls:
            self.sent.append(p.qid)
            if p.qid in self.errs_after_one:
                self.store.next_attempt[p.qid] = p.next_attempt + 1
            else:
                self.store.done.add(p.qid)


def _answered(n: int, inputs: int = 0, outputs: int = 0, most: int = 0) -> Tally:
    """``n`` requests each answered at its first attempt, billed these tokens."""
    return Tally(
        finished=n, attempts=n, answered=n, input_tokens=inputs, output_tokens=outputs,
        max_input_tokens=most,
    )  # fmt: skip


def _feed(port: FakePort, shape: Shape = ONLINE, spares: Sequence[FakePort] = ()) -> Feed:
    """A feed whose restart hands out the next of ``spares`` (fresh, healthy ports)."""
    left = list(spares)

    async def restart() -> FakePort:
        return left.pop(0)

    return Feed("b", ("m",), port, restart, shape)


async def _no_wait(_: float) -> None:
    return None


TWO_RESTARTS = FeedPolicy(max_restarts=2)


def _drive(
    store: FakeStore, feed: Feed, policy: FeedPolicy = TWO_RESTARTS,
    cap: SpendCap | None = None,
) -> list[str]:  # fmt: skip
    lines: list[str] = []
    asyncio.run(Feeder(store, policy, lines.append, _no_wait, cap=cap).drive(feed))
    return lines


@MODES
def test_every_call_is_sent_once_and_the_port_never_holds_more_than_its_shape(
    shape: Shape,
) -> None:
    store = FakeStore(_calls(37))
    port = FakePort(store)
    feed = _feed(port, shape)
    _drive(store, feed)
    assert sorted(port.sent) == [p.qid for p in store.calls]  # each once
    assert port.most_holding == shape.holds and max(port.sizes) == shape.lease
    assert feed.tally.finished == 37 and feed.restarts == 0 and port.collected == 1
    assert store.asked == 2  # the calls, then once more: nothing was left


@MODES
@pytest.mark.parametrize("die_on", [1, 2, 5])
@pytest.mark.parametrize("before_death", [0, 1])
def test_a_worker_dying_on_lease_k_costs_no_call_twice_and_loses_none(
    shape: Shape, die_on: int, before_death: int
) -> None:
    store = FakeStore(_calls(37))
    dying = FakePort(store, die_on=die_on, before_death=before_death)
    fresh = FakePort(store)
    feed = _feed(dying, shape, [fresh])
    lines = _drive(store, feed)
    sent = dying.sent + fresh.sent
    assert sorted(sent) == [p.qid for p in store.calls]  # every call once: none lost, none twice
    assert feed.restarts == 1 and feed.port is fresh and fresh.collected == 1
    assert len(fresh.sent) == 37 - len(dying.sent)  # the new worker gets only what is left
    assert lines[0].startswith("backend b: actor restarted; ") and lines[0].endswith(" re-sent")
    again = int(lines[0].split("; ")[1].split()[0])
    assert again <= shape.holds  # what the dead worker held, less what landed


def test_a_worker_that_keeps_dying_fails_the_run_after_the_restarts_allowed() -> None:
    store = FakeStore(_calls(20))
    ports = [FakePort(store, die_on=1, before_death=1) for _ in range(4)]
    feed = _feed(ports[0], ONLINE, ports[1:])
    with pytest.raises(RunFailed, match="backend b: its actor died 3 times"):
        _drive(store, feed)
    assert feed.restarts == 3 and ports[3].leases == 0  # no fourth worker is fed
    sent = [q for p in ports for q in p.sent]
    assert len(sent) == len(set(sent)) == len(store.done)  # what landed stays; none twice


@MODES
def test_quota_stops_the_backend_and_no_lease_is_handed_after_it(shape: Shape) -> None:
    store = FakeStore(_calls(40))
    port = FakePort(store, quota_on=3)
    feed = _feed(port, shape)
    lines = _drive(store, feed)
    assert feed.stop == _SPENT and port.after_stop == 0
    assert len(port.sent) < 40 and len(port.sent) == len(set(port.sent))
    assert lines == ["backend b: quota exhausted, stopped: insufficient_quota"]


@MODES
def test_after_the_quota_wait_the_backend_resumes_with_what_is_pending(shape: Shape) -> None:
    store = FakeStore(_calls(40))
    port = FakePort(store, quota_on=3)
    feed = _feed(port, shape)
    lines = _drive(store, feed, FeedPolicy(wait_on_quota_s=30.0, max_quota_waits=1))
    assert port.resumed == 1 and feed.stop is None
    assert sorted(port.sent) == [p.qid for p in store.calls]  # the rest, each once
    assert lines == ["backend b: quota exhausted; trying again in 30 s"]


@MODES
def test_a_refused_key_stops_the_backend_at_once_with_no_wait(shape: Shape) -> None:
    store = FakeStore(_calls(40))
    port = FakePort(store, refused_on=2)
    feed = _feed(port, shape)
    waited = FeedPolicy(wait_on_quota_s=30.0, max_quota_waits=3)  # not for a key
    lines = _drive(store, feed, waited)
    assert feed.stop == _REFUSED
    assert port.after_stop == 0 and port.resumed == 0 and len(store.done) < 40
    assert lines == ["backend b: stopped, no call of it can succeed: fatal (HTTP 401): no"]


@MODES
def test_calls_given_back_are_handed_again_and_each_is_sent_once(shape: Shape) -> None:
    store = FakeStore(_calls(30))
    port = FakePort(store, take_only=1)  # a batch with room for one line only
    feed = _feed(port, shape)
    _drive(store, feed)
    assert sorted(port.sent) == [p.qid for p in store.calls]


def test_an_attempt_a_batch_never_ran_goes_again_as_often_as_resends_allow() -> None:
    store = FakeStore(_calls(10))
    port = FakePort(store, never_runs={"q003"})
    _drive(store, _feed(port, BATCH))
    assert port.sizes.count(1) == BATCH.resends  # q003 alone, handed again twice
    assert sorted(port.sent) == [f"q{i:03d}" for i in range(10) if i != 3]


def test_online_an_attempt_that_ended_in_an_error_waits_for_the_next_run() -> None:
    store = FakeStore(_calls(10))
    port = FakePort(store, never_runs={"q003"})
    _drive(store, _feed(port, ONLINE))
    assert port.leases == 10 and "q003" not in store.done  # handed once, not again this run


def test_online_a_later_attempt_that_ended_in_an_error_waits_for_the_next_run_too() -> None:
    # Attempt 0 answered unparseable, attempt 1 errored: the request is pending from attempt 1,
    # which this run already sent (resent now, its error row would be replaced unseen).
    store = FakeStore(_calls(10))
    port = FakePort(store, errs_after_one={"q003"})
    _drive(store, _feed(port, ONLINE))
    assert port.sent.count("q003") == 1 and port.leases == 10
    assert store.next_attempt == {"q003": 1} and "q003" not in store.done


def test_an_error_of_the_worker_ends_the_drive_as_itself() -> None:
    store = FakeStore(_calls(40))
    port = FakePort(store, fail_on=2)
    with pytest.raises(RunnerError, match="the store refused a write"):
        _drive(store, _feed(port, ONLINE))


# -- the spending cap ----------------------------------------------------------------------------

DOLLAR_PER_KTOK = 1e-3  # a dollar for a thousand tokens, input or output


def _dollars(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens + output_tokens) * DOLLAR_PER_KTOK


def _capped_feed(
    port: FakePort, shape: Shape, estimated_input: int, max_output: int, name: str = "b"
) -> Feed:
    worst = WorstCase(_dollars, 4 * estimated_input, {"m": max_output}, {"m": 1}, True)
    return Feed(name, ("m",), port, _no_restart, shape, cost=_dollars, worst=worst)


async def _no_restart() -> FakePort:
    raise AssertionError("no worker dies here")


@MODES
@pytest.mark.parametrize("wrong", [1 / 3, 1.0, 3.0], ids=["3x-low", "right", "3x-high"])
def test_the_cap_is_never_passed_whatever_the_estimate(shape: Shape, wrong: float) -> None:
    # Each answer: 300 tokens in, 500 out (max_tokens 1000): $0.80; its worst case is bounded
    # by the estimate of its input (`wrong` times the truth) and max_tokens.
    store = FakeStore(_calls(200))
    port = FakePort(store, tokens=(300, 500))
    feed = _capped_feed(port, shape, round(300 * wrong), 1000)
    cap = SpendCap(20.0)
    lines = _drive(store, feed, cap=cap)
    assert _capped(feed) and cap.reserved == 0 and cap.holding == 0
    # The feed prices its tokens once, the cap adds each lease's dollars: equal but for rounding.
    assert feed.spent == pytest.approx(cap.spent) == pytest.approx(0.8 * len(port.sent))
    assert cap.spent <= 20.0
    # It stops only when the next call's worst case no longer fits: within a worst case of it.
    assert 20.0 - feed.worst_case(store.calls[0]) <= cap.spent
    assert lines[0].startswith(f"spending cap reached: ${cap.spent:,.2f} of $20.00 spent")


def test_an_input_above_its_bound_raises_the_bound_for_the_next_calls() -> None:
    store = FakeStore(_calls(50))
    port = FakePort(store, tokens=(5000, 10))  # 50 times the estimated input
    feed = _capped_feed(port, ONLINE, 100, 10)
    _drive(store, feed, cap=SpendCap(1000.0))
    assert feed.worst is not None and feed.worst.input_bound == 5000


def test_backends_share_the_cap_and_none_is_stopped_while_another_holds_money_back() -> None:
    # Backend a's worst case is many times its real cost: its leases hold back money they
    # will not spend. Backend b must wait for it, not stop with nothing sent.
    cap = SpendCap(40.0)
    runs = []
    for name, max_output in (("a", 9000), ("b", 1000)):
        store = FakeStore(_calls(200))
        port = FakePort(store, tokens=(300, 500))
        runs.append((store, port, _capped_feed(port, ONLINE, 300, max_output, name)))
    lines: list[str] = []

    async def both() -> None:
        await asyncio.gather(
            *(Feeder(s, FeedPolicy(), lines.append, cap=cap).drive(f) for s, _, f in runs)
        )

    asyncio.run(both())
    assert all(p.sent for _, p, _ in runs) and all(_capped(f) for _, _, f in runs)
    assert cap.spent == pytest.approx(0.8 * sum(len(p.sent) for _, p, _ in runs))
    assert cap.spent <= 40.0
    assert cap.reserved == 0 and all(line.startswith("spending cap reached") for line in lines)


@given(
    limit=st.floats(0.5, 60.0),
    calls=st.integers(1, 120),
    wrong=st.sampled_from([1 / 3, 0.5, 1.0, 2.0, 3.0]),
    online=st.booleans(),
    backends=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_whatever_the_costs_and_estimates_the_spend_never_passes_the_cap(
    limit: float, calls: int, wrong: float, online: bool, backends: int, seed: int
) -> None:
    """The law of the cap: every answer costs at most its worst case, so what is spent never
    passes the cap, however wrong the estimate, however many backends share it."""
    rng = random.Random(seed)
    cap = SpendCap(limit)
    runs = []
    for b in range(backends):
        store = FakeStore(_calls(calls))
        port = VaryingPort(store, rng=rng, input_tokens=300, max_output=rng.randint(1, 2000))
        shape = ONLINE if online else BATCH
        feed = _capped_feed(port, shape, max(1, round(300 * wrong)), port.max_output, f"b{b}")
        runs.append((store, feed))

    async def all_of_them() -> None:
        await asyncio.gather(
            *(Feeder(s, FeedPolicy(), lambda _: None, cap=cap).drive(f) for s, f in runs)
        )

    asyncio.run(all_of_them())
    assert cap.spent <= limit and cap.reserved == 0 and cap.holding == 0


@dataclass
class VaryingPort(FakePort):
    """Each answer reports up to ``input_tokens`` in and up to ``max_output`` out."""

    rng: random.Random = field(default_factory=random.Random)
    input_tokens: int = 0
    max_output: int = 1

    def _outcome(self, number: int, calls: list[Pending]) -> Outcome:
        self._send(calls)
        inputs = [self.rng.randint(1, self.input_tokens) for _ in calls]
        outputs = [self.rng.randint(0, self.max_output) for _ in calls]
        return Outcome(_answered(len(calls), sum(inputs), sum(outputs), max(inputs)))


def test_a_lease_lost_with_its_worker_is_counted_at_its_worst_case() -> None:
    """The dead worker sent one call of its lease, billed and never told: the cap counts the
    lease at what it reserved, so it holds whatever that call cost (issue 56)."""
    store = FakeStore(_calls(20))
    dying = FakePort(store, die_on=2, before_death=1, tokens=(300, 500))
    fresh = FakePort(store, tokens=(300, 500))
    feed = _capped_feed(dying, ONLINE, 300, 1000)
    spares = [fresh]

    async def restart() -> FakePort:
        return spares.pop(0)

    feed.restart = restart
    cap = SpendCap(1_000.0)
    _drive(store, feed, cap=cap)
    lost = feed.worst_case(store.calls[0])  # one call a lease online, at its worst case
    assert feed.restarts == 1 and cap.reserved == 0
    assert cap.spent == pytest.approx(feed.spent + lost)  # the told, and the lost lease
    assert cap.spent >= _dollars(300, 500) * len(dying.sent + fresh.sent)  # every call sent


def test_a_free_backend_is_never_stopped_by_the_cap() -> None:
    store = FakeStore(_calls(20))
    port = FakePort(store, tokens=(1000, 1000))
    feed = _feed(port)  # no prices: every call costs nothing
    assert _drive(store, feed, cap=SpendCap(0.0)) == []
    assert len(port.sent) == 20 and not _capped(feed)


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


# -- the real worker, dying after part of a lease has landed -------------------------------------


class DiesMidLease:
    """A real worker that, on lease ``die_on``, sends only the first ``sent`` calls of it and
    then dies — their records are stored, the rest of the lease is lost with the worker."""

    def __init__(self, worker: BackendWorker, die_on: int, sent: int) -> None:
        self.worker, self.die_on, self.sent, self.leases = worker, die_on, sent, 0

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        self.leases += 1
        if self.leases == self.die_on:
            await self.worker.lease(calls[: self.sent])
            raise WorkerLost("actor died")
        return await self.worker.lease(calls)

    async def collect_open(self) -> Outcome:
        return await self.worker.collect_open()

    async def resume_after_quota(self) -> None:
        await self.worker.resume_after_quota()


@pytest.mark.parametrize("die_on", [1, 6])
def test_a_real_worker_dying_mid_chunk_is_resumed_with_no_call_paid_twice(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path, die_on: int
) -> None:
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    requests = len(store.repository.pending())
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
                    BackendWorker(_setup(_configuration(url), small_root.images, tmp_path / "v"),
                                  small_cohort, write, lambda _: ApiKey("sk-test"))
                )  # fmt: skip
                return workers[-1]

            async def restart() -> BackendWorker:
                return worker()

            first = worker()
            feed = Feed("qwen", (_configuration(url).name,), DiesMidLease(first, die_on, 1),
                        restart, first.shape)  # fmt: skip
            try:
                await Feeder(StorePort.local(store), FeedPolicy(), lambda _: None).drive(feed)
            finally:
                for w in workers:
                    await w.close()
            return feed

    feed = asyncio.run(main())
    assert feed.restarts == 1 and store.repository.pending() == []
    _, ((answers, keys),) = store.repository.query(
        "SELECT count(*), count(DISTINCT (configuration, condition, budget, qid)) FROM responses"
    )
    assert answers == keys == requests  # every request answered once
    assert sum(simulator.stats.statuses.values()) == requests  # and paid for once


_LOST = Stop(kind="driver", why="the driver's connection failed ([Errno 104] reset by peer)")


@dataclass
class LostPort:
    """A worker whose lifeline to the driver broke: each lease comes back unsent, with the
    stop that says why."""

    leases: int = 0

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        self.leases += 1
        return replace(Outcome.nothing(calls), stop=_LOST)

    async def collect_open(self) -> Outcome:
        return Outcome.nothing()

    async def resume_after_quota(self) -> None:
        raise AssertionError("no wait mends a broken lifeline")


def test_a_broken_lifeline_stops_the_backend_and_the_run_says_why() -> None:
    """Every call given back and nothing said was read as "nothing more to do": the run
    ended with requests left and no reason (issue 56)."""
    store = FakeStore(_calls(10))
    port = LostPort()

    async def no_restart() -> LostPort:
        raise AssertionError("the worker did not die")

    feed = Feed("b", ("m",), port, no_restart, ONLINE)
    lines = _drive(store, feed, FeedPolicy(wait_on_quota_s=30.0))
    assert feed.stop == _LOST and port.leases <= ONLINE.holds and store.done == set()
    assert lines == [
        "backend b: stopped, its lifeline to the driver broke: the driver's connection failed "
        "([Errno 104] reset by peer)"
    ]
