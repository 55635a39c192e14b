"""The run's policy: which calls go to which backend, when, and what happens when one fails.

Plain asyncio, no Ray. The driver hands :class:`Feeder` small ports over its actors (a backend
that runs a chunk of calls, the store that says what is pending); tests hand it in-process
workers and fakes that die. The rules that decide whether a paid call is lost or sent twice all
live here:

- **back-pressure**: a backend holds at most ``chunks_in_flight`` chunks of ``chunk`` calls
  (one running, one queued), never 120,000 futures;
- **a dead worker**: the chunks it held and every chunk not yet fed are lost *from this feed*,
  not from the run; a new worker is started (at most ``max_restarts`` times) and fed only those
  of the lost calls the store still has pending — a call whose record landed is never resent;
- **quota**: a backend that reports a quota error gets no further chunk; after an optional wait
  it resumes with what the store then has pending, else it stops and the others go on;
- **a refused key or model** (401, 403, 404): the backend gets no further chunk and stops at
  once, with no wait (no wait mends a key); the others go on;
- **a spending cap** (:class:`SpendCap`): a chunk is handed out only as large as the money
  left pays for, at the backend's estimated cost per call; when not one more call is paid for,
  every backend stops once its calls in flight end;
- **scoring rounds**: when the scorers finish with answers still unscored (one died holding
  them), the answers are queued again and a fresh scorer replaces each dead one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner._errors import RunnerError
from runner.distributed._spend import SpendCap, per_call
from runner.distributed._worker import ChunkOutcome, Traffic
from runner.store import Pending

Echo = Callable[[str], None]
Sleep = Callable[[float], Awaitable[None]]


class RunFailed(RunnerError):
    """The run could not go on (an actor kept dying, the store failed)."""


class WorkerLost(RunnerError):
    """A backend's or scorer's worker died (its process, its node) with work in hand."""


class BackendPort(Protocol):
    """One backend's worker, wherever it runs."""

    async def run(self, chunk: list[Pending]) -> ChunkOutcome:
        """Make the chunk's calls; :class:`WorkerLost` if the worker dies meanwhile."""
        ...

    async def resume_after_quota(self) -> None:
        """Accept calls again after a quota error."""
        ...


class PendingSource(Protocol):
    """The store, as the feeder asks it."""

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        """The calls of ``configurations`` with no finished record yet."""
        ...

    async def unscored(self) -> int:
        """Stored answers without a score."""
        ...

    async def requeue_unscored(self) -> None:
        """Hand answers a scorer took but never scored to the next scorer that asks."""
        ...


class Limited:
    """The store's pending calls, only those of ``allowed`` requests (``run --limit``): the
    rest of the grid stays pending for a later run."""

    def __init__(self, store: PendingSource, allowed: frozenset[tuple[str, str, int, str]]) -> None:
        self._store = store
        self._allowed = allowed

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        calls = await self._store.pending(configurations)
        return [p for p in calls if _key(p) in self._allowed]

    async def unscored(self) -> int:
        return await self._store.unscored()

    async def requeue_unscored(self) -> None:
        await self._store.requeue_unscored()


@dataclass(frozen=True)
class FeedPolicy:
    chunk: int = 512  # calls per chunk handed to a backend's worker
    chunks_in_flight: int = 2  # per backend: one running, one queued behind it
    max_restarts: int = 3  # per backend and run
    wait_on_quota_s: float | None = None  # wait this long after a quota error, then go on
    max_quota_waits: int = 1
    max_scoring_rounds: int = 3


@dataclass
class Feed:
    """One backend as the feeder drives it, and what became of it."""

    name: str
    configurations: tuple[str, ...]
    port: BackendPort
    restart: Callable[[], Awaitable[BackendPort]]  # a new worker for this backend
    quota: str | None = None  # the quota error that stopped it, if one did
    refused: str | None = None  # the refusal of its key or model that stopped it, if one did
    restarts: int = 0
    finished: int = 0  # requests whose attempts finished
    answered: int = 0  # attempts that got an answer
    transient_ended: int = 0  # attempts that a transient failure ended
    # HTTP calls sent and failures retried: the latest totals of the worker serving it now,
    # and those of the workers that died before it
    worker_traffic: Traffic = field(default_factory=Traffic)
    earlier_traffic: Traffic = field(default_factory=Traffic)
    cost: Callable[[int, int], float] = lambda _input, _output: 0.0  # dollars of tokens
    call_cost: float = 0.0  # dollars a call is expected to cost before any is measured
    spent: float = 0.0  # dollars this run, from the tokens of its answers
    input_tokens: int = 0
    output_tokens: int = 0
    capped: bool = False  # stopped by the run's spending cap
    learnt_per_minute: float | None = None  # the limit its 429s taught, as last reported

    def next_call_cost(self) -> float:
        return per_call(self.spent, self.finished, self.call_cost)

    @property
    def traffic(self) -> Traffic:
        """HTTP calls sent and failures retried, as far as this feed's workers reported them
        (a worker that dies takes the calls it made after its last finished chunk with it)."""
        return self.earlier_traffic + self.worker_traffic


@dataclass
class _Fed:
    """How handing a backend its calls ended."""

    quota: str | None = None  # the quota error that stopped it
    refused: str | None = None  # the refusal that stopped it
    lost: list[Pending] = field(default_factory=list)  # the calls its dead worker held
    capped: bool = False  # the spending cap paid for no more calls


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
        calls = await self._store.pending(feed.configurations)
        waits = 0
        while calls:
            fed = await self._feed(feed, calls)
            quota, refused = fed.quota, fed.refused
            if fed.lost:
                calls = await self._after_death(feed, fed.lost)
                continue
            if fed.capped:
                feed.capped = True
                self._say_capped()
                return
            if refused is not None:
                feed.refused = refused
                self._echo(f"backend {feed.name}: stopped, no call of it can succeed: {refused}")
                return
            if quota is None:
                return
            feed.quota = quota
            wait = self._policy.wait_on_quota_s
            if wait is None or waits >= self._policy.max_quota_waits:
                self._echo(f"backend {feed.name}: quota exhausted, stopped: {quota}")
                return
            waits += 1
            self._echo(f"backend {feed.name}: quota exhausted; trying again in {wait:g} s")
            await self._sleep(wait)
            await feed.port.resume_after_quota()
            feed.quota = None
            calls = await self._store.pending(feed.configurations)

    async def _after_death(self, feed: Feed, lost: list[Pending]) -> list[Pending]:
        """A new worker for ``feed``; the lost calls the store still has pending."""
        feed.restarts += 1
        if feed.restarts > self._policy.max_restarts:
            raise RunFailed(f"backend {feed.name}: its actor died {feed.restarts} times")
        feed.port = await feed.restart()
        feed.earlier_traffic, feed.worker_traffic = feed.traffic, Traffic()
        # Only what the store still lacks: a call whose record landed before the worker died
        # was paid for, and is not sent again.
        keys = {_key(p) for p in lost}
        now = await self._store.pending(feed.configurations)
        calls = [p for p in now if _key(p) in keys]
        self._echo(f"backend {feed.name}: actor restarted; {len(calls)} calls re-sent")
        return calls

    def _say_capped(self) -> None:
        cap = self._cap
        assert cap is not None
        if self._cap_said:  # one line for the run, not one per backend
            return
        self._cap_said = True
        self._echo(
            f"spending cap reached: ${cap.spent:,.2f} of ${cap.limit:,.2f} spent this run; "
            "no further call is sent (the calls in flight end)"
        )

    def _next_chunk(self, feed: Feed, calls: list[Pending]) -> tuple[list[Pending], float]:
        """The next chunk of ``calls`` (removed from it) and the dollars reserved for it: at
        most ``chunk`` calls, and no more than the spending cap pays for."""
        size = self._policy.chunk
        if self._cap is None:
            chunk = calls[:size]
            del calls[:size]
            return chunk, 0.0
        cost = feed.next_call_cost()
        size = self._cap.affordable(cost, min(size, len(calls)))
        chunk = calls[:size]
        del calls[:size]
        if chunk:
            self._cap.reserve(cost * size)
        return chunk, cost * size

    def _settle(self, feed: Feed, outcome: ChunkOutcome, reserved: float) -> None:
        feed.finished += outcome.calls
        feed.answered += outcome.answered
        feed.transient_ended += outcome.transient
        feed.worker_traffic = feed.worker_traffic.latest(outcome.traffic)
        feed.learnt_per_minute = outcome.learnt_per_minute
        feed.input_tokens += outcome.input_tokens
        feed.output_tokens += outcome.output_tokens
        spent = feed.cost(outcome.input_tokens, outcome.output_tokens)
        feed.spent += spent
        if self._cap is not None:
            self._cap.settle(reserved, spent)

    async def _feed(self, feed: Feed, calls: Sequence[Pending]) -> _Fed:
        """Hand ``calls`` to the worker a chunk at a time, at most ``chunks_in_flight`` at
        once, until they are done, the backend stops (quota, a refusal), its worker dies (the
        calls it held are lost) or the spending cap pays for no more."""
        left = list(calls)
        running: dict[asyncio.Task[ChunkOutcome], tuple[list[Pending], float]] = {}
        fed = _Fed()
        try:
            while left or running:
                while left and len(running) < self._policy.chunks_in_flight:
                    if fed.quota is not None or fed.refused is not None or fed.lost:
                        break
                    chunk, reserved = self._next_chunk(feed, left)
                    if not chunk:
                        break  # the cap: what is running may still free a reservation
                    running[asyncio.ensure_future(feed.port.run(chunk))] = (chunk, reserved)
                if not running:
                    # Calls left, none running, no stop: the cap pays for none of them now.
                    stopped = fed.quota or fed.refused or fed.lost
                    if left and not stopped and self._cap is not None and self._cap.holding:
                        await self._cap.next_settled()  # another backend may give some back
                        continue
                    fed.capped = bool(left) and not stopped
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    chunk, reserved = running.pop(task)
                    try:
                        outcome = task.result()
                    except WorkerLost:
                        if self._cap is not None:
                            self._cap.settle(reserved, 0.0)
                        fed.lost.extend(chunk)
                        continue
                    self._settle(feed, outcome, reserved)
                    fed.quota = fed.quota or outcome.quota
                    fed.refused = fed.refused or outcome.refused
                if fed.lost:  # nothing more goes to a dead worker
                    fed.lost.extend(left)
                    left = []
        finally:
            forget(running)  # interrupted: nobody will read these any more
        return fed


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


def _key(p: Pending) -> tuple[str, str, int, str]:
    return (p.configuration, p.condition, p.budget, p.qid)
