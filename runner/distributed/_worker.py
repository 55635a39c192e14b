"""One backend's share of the run: build each request, make its attempts, store every record.

:class:`BackendWorker` is what a backend actor runs, and is tested without Ray. It serves the
configurations of one account through one rate limiter and one HTTP session, made lazily on
the event loop that sends. Every attempt record is stored before the worker that made it sends
another call, so a crash loses at most the calls in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from conditions import (
    Builder,
    Configuration,
    Questions,
    Transport,
    VariantCache,
    task_of,
)
from runner._port import Outcome, Shape, Stop, Tally, online_shape
from runner.backends import (
    Account,
    ApiKey,
    AttemptRecord,
    CallError,
    Client,
    LimiterStats,
    RateLimiter,
    ask,
)
from runner.batch import OpenBatch
from runner.distributed._group_commit import GroupCommit
from runner.distributed._lifeline import SILENCE_S, Lifeline, LifelineAddress
from runner.store import Pending, ResponseRow, response_row

# Enough blobs for every variant of the questions that the workers hold at once: calls come
# question by question (a question's calls of one configuration are 13 conditions × 6
# budgets at most, over 3 variants), so 64 calls in flight span a few questions and an image
# is read and encoded once per variant. Each blob is ~200 KB of base64.
VARIANT_MEMORY = 96

# How long the first record of a batch waits for others. Each store write has a fixed cost
# (an actor call, a transaction); a call to a hosted model takes seconds, so 20 ms is nothing.
WRITE_LINGER_S = 0.02

_FINISHED = Tally(finished=1)  # a request whose attempts ended

KeySource = Callable[[Configuration], ApiKey | None]  # None: a server that takes no key
Clock = Callable[[], float]
Write = Callable[[list[ResponseRow]], Awaitable[object]]


class DriverGone(CallError):
    """The worker's driver is gone (its connection ended: killed, ended, cut): no record it
    makes could reach a store, so nothing more is sent. Never stored: it ends only calls not
    sent; the worker reports it as a ``driver`` :class:`Stop`. (A driver only silent is
    waited for, never gone: :mod:`runner.distributed._lifeline`.)"""

    kind = "fatal"
    retryable = False
    stops = True
    stopped_because = "its driver is gone"


@dataclass
class WorkerStats:
    """The worker as the progress view reads it: its tally since it started, and its state."""

    tally: Tally = field(default_factory=Tally)  # its running total (the outcomes' sum)
    in_flight: int = 0
    ceiling: int = 0  # the most calls the limiter admits in flight now (AIMD lowers it)
    limiter: LimiterStats = field(default_factory=LimiterStats)
    stop: Stop | None = None  # what stopped the backend (spent quota, a refusal), if anything did
    batch: bool = False  # a batch-mode backend's (runner.batch): no HTTP rates, open batches
    batches: tuple[OpenBatch, ...] = ()  # its batches open now


@dataclass(frozen=True)
class BackendSetup:
    """What a backend's worker serves, online or in batches: the backend's own transport (its
    limits: one for every configuration on it, so they are read here and never from a
    configuration), its configurations, and where their images and image variants are."""

    transport: Transport
    configurations: tuple[Configuration, ...]
    images: Path
    cache: Path  # the image variants, shared by the run's workers

    def __post_init__(self) -> None:
        if not self.configurations:
            raise ValueError("a backend's worker needs at least one configuration")

    @property
    def max_concurrency(self) -> int:
        """The backend's limit on calls in flight (and connections open)."""
        return self.transport.max_concurrency

    def builder(self, questions: Questions) -> Builder:
        """The requests of ``questions``, their image variants held :data:`VARIANT_MEMORY` at
        a time (online or in batches, a backend's worker builds them question by question)."""
        variants = VariantCache(self.cache, memory=VARIANT_MEMORY)
        return task_of(questions).builder(self.images, variants)


class BackendWorker:
    """Runs chunks of calls for the configurations of one backend."""

    def __init__(
        self,
        setup: BackendSetup,
        questions: Questions,
        write: Write,
        key_for: KeySource,
        lifeline: LifelineAddress | None = None,
        *,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        silence_s: float = SILENCE_S,
    ) -> None:
        # Nothing is sent while the driver is not heard (None: an in-process run).
        self._lifeline = Lifeline(
            lifeline, self.driver_gone, silence_s,
            on_silent=self.driver_silent, on_heard=self.driver_heard,
        )  # fmt: skip
        self._opening = asyncio.Lock()
        self.configurations = {c.name: c for c in setup.configurations}
        self.concurrency = setup.max_concurrency
        self._transport = setup.transport
        self._builder = setup.builder(questions)
        self._group_commit: GroupCommit[ResponseRow] = GroupCommit(write, linger_s=WRITE_LINGER_S)
        self._key_for = key_for
        self._clock, self._wall = clock, wall
        self._backends: dict[str, Client] = {}
        self._session: aiohttp.ClientSession | None = None
        self._slots: asyncio.Semaphore | None = None
        self._stopped: CallError | None = None  # the terminal error that stopped the backend
        self._stats = WorkerStats()
        self._stored = Tally()  # its records and finished requests since it started
        self._traffic_before = Tally()  # the HTTP calls of the backends a quota wait replaced
        self._emitted = Tally()  # its running total as its last outcome left it
        # The backends are made now (a missing key or an unmappable setting fails at once),
        # but their session only on the loop that sends.
        self._make_backends()

    def _make_backends(self) -> None:
        self._traffic_before = self.traffic()
        limiter = RateLimiter.for_transport(self._transport, clock=self._clock, wall=self._wall)
        if self._backends:  # fresh backends on the same account: its calls still count
            limiter.inherit(self._limiter.account())
        if self._lifeline.silent:  # made while the driver is silent: they wait as the old did
            limiter.suspend()
        self._backends = {
            name: Client(c, self._key_for(c), limiter=limiter, clock=self._clock)
            for name, c in self.configurations.items()
        }

    def inherit(self, account: Account, before: Tally | None = None) -> None:
        """Count the calls ``account`` records as this backend's own (a check and the run's
        pre-flight made them on the same account): the server's window and the limiter's
        agree. ``before``: what the pre-flight did on it, which the live view shows with the
        worker's own; its outcomes leave it out (the run counts the pre-flight apart)."""
        self._limiter.inherit(account)
        if before is not None:
            self._traffic_before += before
            self._emitted += before

    async def _ensure_open(self) -> None:
        """The lifeline to the driver, then the session: on the loop that sends, once."""
        async with self._opening:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.concurrency)
                await self._lifeline.start()  # a driver it cannot hear gets no call sent
            if self._session is None:
                connector = aiohttp.TCPConnector(limit=self.concurrency)
                self._session = aiohttp.ClientSession(connector=connector)
                for backend in self._backends.values():
                    backend.open(self._session)

    async def close(self) -> None:
        await self._close_session()
        await self._lifeline.close()

    async def _close_session(self) -> None:
        for backend in self._backends.values():
            await backend.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def shape(self) -> Shape:
        """How the feeder leases it calls: its concurrency and a small buffer."""
        return online_shape(self.concurrency)

    async def lease(self, calls: Sequence[Pending], input_bound: int | None = None) -> Outcome:
        """Make the attempts of ``calls``, ``concurrency`` at a time (with every other lease
        it holds), storing every record. ``input_bound``: the input per call the spending cap
        reserved (a call whose usage is unknown is counted at it: ``Client.send``).

        Stops taking calls once a terminal error stops the backend (spent quota, a refused key
        or model) or its driver is gone: the calls already sent finish and are stored, the
        rest come back unsent in ``given_back`` and stay pending.
        """
        await self._ensure_open()
        slots = self._slots
        assert slots is not None
        queue = iter(calls)
        given_back: list[Pending] = []

        def finished() -> None:
            self._stored += _FINISHED

        async def take() -> None:
            for call in queue:
                await self._lifeline.heard()  # a silent driver: the call waits, not taken
                if self._stopped is not None:
                    given_back.append(call)
                    return
                try:
                    # One slot from taking a call to storing its last record, shared by every
                    # lease the actor runs: at most `concurrency` paid calls are ever unstored.
                    async with slots:
                        await self._ask(call, input_bound)
                except CallError as exc:  # ask raises only what stops the backend
                    self._stop(exc)
                    if exc.sent:  # its attempts ended with the error that stopped the backend
                        finished()
                    else:
                        given_back.append(call)
                    return
                finished()

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.concurrency, len(calls))):
                    group.create_task(take())
        except ExceptionGroup as failed:  # the first failure, as itself (a missing image, ...)
            raise failed.exceptions[0] from None
        given_back.extend(queue)  # not reached once every taker stopped
        return Outcome(
            self._emit(), self._stats.stop, tuple(given_back),
            learnt_per_minute=self._limiter.learnt,
        )  # fmt: skip

    def _emit(self) -> Tally:
        """What the worker did since its last outcome: its running total's growth."""
        now = self.total()
        delta, self._emitted = now.since(self._emitted), now
        return delta

    async def collect_open(self) -> Outcome:
        """Nothing: an online call is never left open by a run that ended."""
        return Outcome.nothing()

    async def _ask(self, call: Pending, input_bound: int | None) -> list[AttemptRecord]:
        request = self._builder.build(call.request, self.configurations[call.configuration])
        backend = self._backends[call.configuration]
        return await ask(
            backend, request, self._store, first=call.next_attempt, input_bound=input_bound
        )

    async def _store(self, record: AttemptRecord) -> None:
        self._stored += Tally.of(record)
        await self._group_commit.put(response_row(record))

    def driver_gone(self, why: str) -> None:
        """Send nothing more: calls not taken stay unsent, and those waiting for a rate slot
        (or a retry) leave it unsent now; the calls on the wire end as they will. Reported
        as a ``driver`` stop, over spent quota: no wait in this run mends it."""
        if isinstance(self._stopped, DriverGone):
            return
        gone = DriverGone(f"not sent: {why}", sent=False)
        self._stopped = gone
        if self._stats.stop is None or self._stats.stop.kind == "quota":
            self._stats.stop = Stop(kind="driver", why=why)
        self._limiter.halt(gone)

    def driver_silent(self, _why: str) -> None:
        """Send nothing until the driver is heard again: calls waiting for a rate slot (or a
        retry) keep waiting, and no call is taken (``lease``); the calls on the wire end and
        are stored as usual."""
        self._limiter.suspend()

    def driver_heard(self) -> None:
        """The driver is heard again after a silence: sending resumes where it was."""
        self._limiter.resume()

    def _stop(self, exc: CallError) -> None:
        if self._stopped is not None:
            return
        if isinstance(exc, DriverGone):  # driver_gone's stop (a quota wait keeps it)
            self._stopped = exc
            self._stats.stop = self._stats.stop or Stop(kind="driver", why=exc.message)
            return
        if not exc.sent:  # a call refused once stopped: the error that stopped it says why
            stopped = (b.stopped for b in self._backends.values() if b.stopped is not None)
            exc = next(stopped, exc)
        self._stopped = exc
        self._stats.stop = Stop.of(exc)

    async def resume_after_quota(self) -> None:
        """Forget a spent quota (after a wait): fresh backends, the same limits. A driver gone
        meanwhile is not forgotten: nothing resumes, and its stop stays said."""
        if isinstance(self._stopped, DriverGone):
            return
        with contextlib.suppress(Exception):
            await self._close_session()
        self._stopped = None
        self._stats.stop = None
        self._make_backends()

    def traffic(self) -> Tally:
        """HTTP calls sent and failures retried since the worker started."""
        return self._traffic_before + Tally.of_traffic(self._backends.values())

    def total(self) -> Tally:
        """Everything it did since it started: its records, its requests and its calls."""
        return self._stored + self.traffic()

    @property
    def _limiter(self) -> RateLimiter:
        """The one limiter the backends share (one account)."""
        return next(iter(self._backends.values())).limiter

    def stats(self) -> WorkerStats:
        limiter = self._limiter
        self._stats.limiter = limiter.stats
        self._stats.in_flight = limiter.in_flight
        # Whole calls, as admission counts them (RateLimiter._admit): AIMD's 8.49 admits 8.
        self._stats.ceiling = max(1, math.floor(limiter.ceiling))
        self._stats.tally = self.total()
        return self._stats
