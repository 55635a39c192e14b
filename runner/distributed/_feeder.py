"""The run's policy: which calls go to which backend, when, and what happens when one fails.

Plain asyncio, no Ray. The driver hands :class:`Feeder` one :class:`CallPort` per backend (an
online worker or a batch-mode one, an actor or in-process) and the store's port; tests hand it
in-process workers and fakes that die. Online and batch mode are driven by the same rules,
each written once, here:

- **leases**: a port holds at most ``shape.holds`` calls, handed ``shape.lease`` at a time
  and topped up as leases end — never 120,000 futures, and never more than a worker may send
  now and a little, so a worker whose driver is gone has almost nothing it could still send;
- **rounds**: the store's pending calls are handed out; when every lease has ended the store
  is asked again, for what was given back or is left to do (a batch's next attempts, the
  lines a batch never ran). A call is handed at most ``1 + shape.resends`` times a run:
  online, a request whose attempt ended in an error waits for the next run (whichever of its
  attempts it was); in batch mode an attempt goes again as often as a batch never ran it;
- **a dead worker**: every lease it held is lost from this feed, not from the run; a new
  worker is started (at most ``max_restarts`` times), collects what the dead one left open,
  and is handed what the store still has pending — a call whose record landed is never resent;
- **quota**: a backend that reports a quota error gets no further lease; after an optional
  wait it resumes with what the store then has pending, else it stops and the others go on;
- **a refused key or model** (401, 403, 404): the backend gets no further lease and stops at
  once, with no wait (no wait mends a key); the others go on;
- **a lost lifeline**: a worker whose connection to the driver ended while the driver runs
  (a reset) sends nothing more; its backend stops as for a refusal, saying why, and the
  others go on (a driver only paused is waited for by its workers, and is no stop);
- **the spending cap** (:class:`SpendCap`): a lease is handed out only as far as the worst
  case of its calls fits in the money left beside the worst case of every lease in flight;
  when not one more call fits, every backend stops once its leases end;
- **scoring rounds**: when the scorers finish with answers still unscored (one died holding
  them), the answers are queued again and a fresh scorer replaces each dead one.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from conditions import RequestKey
from runner._errors import RunnerError
from runner._port import CallPort, Cost, Outcome, Shape, Stop, StopKind, Tally
from runner.distributed._spend import SpendCap, WorstCase
from runner.store import Pending

Echo = Callable[[str], None]
Sleep = Callable[[float], Awaitable[None]]


class RunFailed(RunnerError):
    """The run could not go on (an actor kept dying, the store failed)."""


class WorkerLost(RunnerError):
    """A backend's or scorer's worker died (its process, its node) with work in hand."""


class PendingSource(Protocol):
    """The store, as the feeder asks it (:class:`~runner.distributed.StorePort`)."""

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        """The calls of ``configurations`` with no finished record yet."""
        ...

    async def unscored(self) -> int:
        """Stored answers without a score."""
        ...

    async def requeue_unscored(self) -> None:
        """Hand answers a scorer took but never scored to the next scorer that asks."""
        ...


@dataclass(frozen=True)
class FeedPolicy:
    max_restarts: int = 3  # per backend and run
    wait_on_quota_s: float | None = None  # wait this long after a quota error, then go on
    max_quota_waits: int = 1
    max_scoring_rounds: int = 3


@dataclass
class Feed:
    """One backend as the feeder drives it, and what became of it."""

    name: str
    configurations: tuple[str, ...]
    port: CallPort
    restart: Callable[[], Awaitable[CallPort]]  # a new worker for this backend
    shape: Shape
    cost: Cost = lambda _input, _output: 0.0  # dollars of tokens, at the price of its mode
    worst: WorstCase | None = None  # the most one call can cost (None: calls cost nothing)
    stop: Stop | None = None  # what stopped it (spent quota, a refusal, the cap), if anything did
    restarts: int = 0
    # What its workers did this run: the sum of their outcomes (a worker that dies takes what
    # it did since its last outcome with it)
    tally: Tally = field(default_factory=Tally)
    learnt_per_minute: float | None = None  # the limit its 429s taught, as last reported
    # Times each call was handed this run (see turn); what the worker given it left open is
    # collected before anything else (set again when a new worker replaces a dead one).
    handed: Counter[Pending | RequestKey] = field(default_factory=Counter)
    collect_due: bool = True

    def turn(self, call: Pending) -> Pending | RequestKey:
        """What counts as handed again. Online, the request: a worker makes all of a request's
        attempts in one lease, so a request pending again in the same run ended in an error,
        whatever attempt it stopped at (its next attempt is another ``Pending``, not another
        call). In batch mode, the attempt: a line is one attempt, and an unparseable answer's
        next attempt goes in a later batch of the same run."""
        return call if self.shape.one_attempt else call.request

    def worst_case(self, call: Pending) -> float:
        return self.worst(call) if self.worst is not None else 0.0

    @property
    def input_bound(self) -> int | None:
        """The input per call its leases reserve (None: no cap, so no reservation)."""
        return self.worst.input_bound if self.worst is not None else None

    @property
    def spent(self) -> float:
        """Dollars this run, from the tokens its workers were billed."""
        return self.tally.spent(self.cost)


@dataclass(frozen=True)
class _Lease:
    calls: list[Pending]
    reserved: float  # dollars the cap holds for it
    collect: bool = False  # the batches an earlier worker left open, not calls handed


@dataclass
class _Fed:
    """How one round of handing a backend its calls ended."""

    stop: Stop | None = None  # what stopped it: spent quota, a refusal, the spending cap
    lost: list[Pending] = field(default_factory=list)  # the calls its dead worker held
    died: bool = False  # its worker died
    next_worst: float = 0.0  # when capped: the most the next call could have cost
    progressed: bool = False  # a lease took a call, stored a record or freed a batch's lines

    @property
    def stopped(self) -> bool:
        return self.stop is not None or self.died


_FINAL: tuple[StopKind, ...] = ("refused", "driver")  # stops no wait mends


def _graver(held: Stop | None, met: Stop | None) -> Stop | None:
    """Of the stops a round met, the one that decides what follows: a refusal or a lost
    lifeline, which no wait mends, over spent quota; else the first met.

    >>> quota, key = Stop(kind="quota", why="spent"), Stop(kind="refused", why="401")
    >>> _graver(quota, key) == _graver(key, quota) == key, _graver(None, quota) == quota
    (True, True)
    >>> lost = Stop(kind="driver", why="reset")
    >>> _graver(quota, lost) == lost, _graver(key, lost) == key
    (True, True)
    """
    if held is None or (met is not None and met.kind in _FINAL and held.kind not in _FINAL):
        return met
    return held


class Feeder:
    """Feeds each backend its pending calls under a :class:`FeedPolicy`."""

    def __init__(
        self,
        store: PendingSource,
        policy: FeedPolicy = FeedPolicy(),
        echo: Echo = print,
        sleep: Sleep = asyncio.sleep,
        cap: SpendCap | None = None,
    ) -> None:
        self._store = store
        self._policy = policy
        self._echo = echo
        self._sleep = sleep
        self._cap = cap
        self._cap_said = False

    async def drive(self, feed: Feed) -> None:
        """Send every pending call of ``feed``'s configurations, through restarts and quota.

        Raises
        ------
        RunFailed
            The backend's worker died more often than the policy allows.
        """
        if self._cap is None:
            await self._drive(feed)
            return
        self._cap.sharing += 1
        try:
            await self._drive(feed)
        finally:
            self._cap.sharing -= 1

    async def _drive(self, feed: Feed) -> None:
        waits = 0
        while True:
            calls = self._handable(feed, await self._store.pending(feed.configurations))
            if not calls and not feed.collect_due:
                return
            fed = await self._feed(feed, calls)
            if fed.died:
                await self._after_death(feed, fed.lost)
                continue
            stop = fed.stop
            if stop is not None and stop.kind == "quota":
                if not await self._waited_out(feed, stop, waits):
                    return
                waits += 1
                continue
            if stop is not None:  # the cap, a refusal or a lost lifeline: no wait mends any
                feed.stop = stop
                if stop.kind == "capped":
                    self._say_capped(feed, fed.next_worst)
                else:
                    self._echo(f"backend {feed.name}: stopped, {stop.said}: {stop.why}")
                return
            if not fed.progressed:  # every call came back unsent: nothing more to do now
                return

    def _handable(self, feed: Feed, calls: Iterable[Pending]) -> list[Pending]:
        """The calls whose attempt may be handed (again) this run."""
        return [c for c in calls if feed.handed[feed.turn(c)] <= feed.shape.resends]

    async def _waited_out(self, feed: Feed, quota: Stop, waits: int) -> bool:
        """After a quota error: whether the backend goes on (the policy's wait, once more)."""
        feed.stop = quota
        wait = self._policy.wait_on_quota_s
        if wait is None or waits >= self._policy.max_quota_waits:
            self._echo(f"backend {feed.name}: quota exhausted, stopped: {quota.why}")
            return False
        self._echo(f"backend {feed.name}: quota exhausted; trying again in {wait:g} s")
        await self._sleep(wait)
        await feed.port.resume_after_quota()
        feed.stop = None
        feed.handed.clear()  # what the quota ended goes again: the quota has been waited out
        return True

    async def _after_death(self, feed: Feed, lost: list[Pending]) -> None:
        """A new worker for ``feed``, which collects first what the dead one left open."""
        feed.restarts += 1
        if feed.restarts > self._policy.max_restarts:
            raise RunFailed(f"backend {feed.name}: its actor died {feed.restarts} times")
        feed.port = await feed.restart()
        feed.collect_due = True
        # Only what the store still lacks is handed again: a call whose record landed before
        # the worker died was paid for, and is not sent again.
        keys = {p.request for p in lost}
        now = await self._store.pending(feed.configurations)
        again = sum(p.request in keys for p in self._handable(feed, now))
        self._echo(f"backend {feed.name}: actor restarted; {again} calls re-sent")

    def _say_capped(self, feed: Feed, next_worst: float) -> None:
        cap = self._cap
        assert cap is not None
        if self._cap_said:  # one line for the run, not one per backend
            return
        self._cap_said = True
        self._echo(
            f"spending cap reached: ${cap.spent:,.2f} of ${cap.limit:,.2f} spent so far this run, "
            f"and the next call of backend {feed.name} could cost up to ${next_worst:,.2f} (every "
            "attempt it may still make, at max_output_tokens); no further call is sent: raise "
            "--max-spend, or lower its configurations' decoding.max_output_tokens, to send it"
        )

    def _next_lease(self, feed: Feed, left: list[Pending], room: int) -> _Lease:
        """The next lease of ``left`` (removed from it): at most ``shape.lease`` calls and
        ``room``, and no more than the spending cap pays for at their worst case."""
        size = min(feed.shape.lease, room, len(left))
        if self._cap is None:
            calls, reserved = left[:size], 0.0
        else:
            taken, reserved = self._cap.take([feed.worst_case(c) for c in left[:size]])
            calls = left[:taken]
        del left[: len(calls)]
        for c in calls:
            feed.handed[feed.turn(c)] += 1
        return _Lease(calls, reserved)

    def _settle(self, feed: Feed, lease: _Lease, outcome: Outcome, fed: _Fed) -> None:
        feed.tally += outcome.tally
        if outcome.learnt_per_minute is not None or not lease.collect:
            feed.learnt_per_minute = outcome.learnt_per_minute
        spent = outcome.tally.spent(feed.cost)
        if feed.worst is not None:
            feed.worst.learn(outcome.tally.max_input_tokens)
        if self._cap is not None and lease.calls:
            self._cap.settle(lease.reserved, spent)
        elif self._cap is not None:  # collected, not handed: nothing was reserved for it
            self._cap.count(spent)
        for c in outcome.given_back:  # never sent: it may be handed again
            feed.handed[feed.turn(c)] -= 1
        fed.stop = _graver(fed.stop, outcome.stop)
        # Progress: the port took a call (each is handed a bounded number of times a run), stored
        # a record, or had a batch's lines end unrun (the store has them pending again); a round
        # that only had calls given back would go round for ever.
        took = len(outcome.given_back) < len(lease.calls)
        stored = outcome.tally.attempts > 0
        fed.progressed = fed.progressed or took or stored or outcome.unrun > 0

    def _lost(self, feed: Feed, lease: _Lease, fed: _Fed) -> None:
        if self._cap is not None and lease.calls:
            # What the dead worker was billed for it and never told is not known: counted at
            # its worst case, so the cap holds (its records, stored, are the store's spend).
            self._cap.settle(lease.reserved, lease.reserved)
        for c in lease.calls:  # whatever of it the store lacks is handed to the next worker
            feed.handed[feed.turn(c)] -= 1
        fed.lost.extend(lease.calls)
        fed.died = True

    async def _feed(self, feed: Feed, calls: Sequence[Pending]) -> _Fed:
        """Hand ``calls`` to the port a lease at a time, holding at most ``shape.holds`` at
        once, until they are done, the backend stops (quota, a refusal), its worker dies (the
        calls it held are lost) or the spending cap pays for no more."""
        left = list(calls)
        running: dict[asyncio.Task[Outcome], _Lease] = {}
        fed = _Fed()
        if feed.collect_due:
            feed.collect_due = False
            running[asyncio.ensure_future(feed.port.collect_open())] = _Lease([], 0.0, True)
        try:
            while left or running:
                self._top_up(feed, left, running, fed)
                if not running:
                    # Calls left, none running, no stop: the cap pays for none of them now.
                    if left and not fed.stopped and self._cap is not None and self._cap.holding:
                        await self._cap.next_settled()  # another backend may give some back
                        continue
                    if left and not fed.stopped:
                        fed.next_worst = feed.worst_case(left[0])
                        why = f"the next call could cost up to ${fed.next_worst:,.2f}"
                        fed.stop = Stop(kind="capped", why=why)
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    self._ended(feed, running.pop(task), task, fed)
                if fed.stopped:  # nothing more goes to a stopped backend or a dead worker
                    left = []
        finally:
            forget(running)  # interrupted: nobody will read these any more
        return fed

    def _top_up(
        self,
        feed: Feed,
        left: list[Pending],
        running: dict[asyncio.Task[Outcome], _Lease],
        fed: _Fed,
    ) -> None:
        """Hand out leases while the port has room and the cap pays."""
        held = sum(len(lease.calls) for lease in running.values())
        while left and held < feed.shape.holds and not fed.stopped:
            lease = self._next_lease(feed, left, feed.shape.holds - held)
            if not lease.calls:
                return  # the cap: what is running may still free a reservation
            leased = feed.port.lease(lease.calls, feed.input_bound)
            running[asyncio.ensure_future(leased)] = lease
            held += len(lease.calls)

    def _ended(self, feed: Feed, lease: _Lease, task: asyncio.Task[Outcome], fed: _Fed) -> None:
        try:
            outcome = task.result()
        except WorkerLost:
            self._lost(feed, lease, fed)
            return
        except BaseException:
            if self._cap is not None and lease.calls:
                self._cap.settle(lease.reserved, 0.0)
            raise
        self._settle(feed, lease, outcome, fed)


async def score_to_the_end(
    store: PendingSource,
    runs: Sequence[Awaitable[None]],
    again: Callable[[int, bool], Awaitable[None]],
    rounds: int = FeedPolicy.max_scoring_rounds,
) -> int:
    """Wait for the scorers' runs until every stored answer has a score; the answers still
    unscored after ``rounds`` rounds.

    ``again(i, lost)`` is scorer ``i``'s next run: on a fresh scorer when ``lost`` (it died),
    else on the same one. A scorer's error other than dying is raised.
    """
    current = list(runs)
    for round_ in range(1, rounds + 1):
        results = await asyncio.gather(*current, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, WorkerLost):
                raise r
        left = await store.unscored()
        if left == 0 or round_ == rounds:
            return left
        # A scorer died holding answers: queue them again and score what is left.
        await store.requeue_unscored()
        current = [again(i, isinstance(r, WorkerLost)) for i, r in enumerate(results)]
    return await store.unscored()  # rounds < 1: nothing awaited


def forget(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel what still runs and read what ended, so asyncio logs no "exception never
    retrieved" for work nobody will look at any more."""
    for task in tasks:
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()


__all__ = [
    "Feed",
    "FeedPolicy",
    "Feeder",
    "PendingSource",
    "RunFailed",
    "WorkerLost",
    "forget",
    "score_to_the_end",
]
