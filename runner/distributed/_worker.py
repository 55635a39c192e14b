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
from runner._port import Outcome, Shape, Stop, Traffic, online_shape
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
from runner.distributed._lifeline import Lifeline, LifelineAddress
from runner.store import Pending, ResponseRow, response_row

# Enough blobs for every variant of the questions that the workers hold at once: calls come
# question by question (a question's calls of one configuration are 13 conditions × 6
# budgets at most, over 3 variants), so 64 calls in flight span a few questions and an image
# is read and encoded once per variant. Each blob is ~200 KB of base64.
VARIANT_MEMORY = 96

# How long the first record of a batch waits for others. Each store write has a fixed cost
# (an actor call, a transaction); a call to a hosted model takes seconds, so 20 ms is nothing.
WRITE_LINGER_S = 0.02

KeySource = Callable[[Configuration], ApiKey | None]  # None: a server that takes no key
Clock = Callable[[], float]
Write = Callable[[list[ResponseRow]], Awaitable[object]]


class DriverGone(CallError):
    """The worker's driver is gone (killed, ended, out of reach): no record it makes could
    reach a store, so nothing more is sent. Never stored: it ends only calls not sent."""

    kind = "fatal"
    retryable = False
    stops = True
    stopped_because = "its driver is gone"


@dataclass
class WorkerStats:
    """Counters since the worker started, for the progress view."""

    requests: int = 0  # whose attempts ended (a call not sent once stopped is not one)
    attempts: int = 0
    answered: int = 0
    errored: int = 0
    traffic: Traffic = field(default_factory=Traffic)  # HTTP calls sent and failures retried
    input_tokens: int = 0
    output_tokens: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # errored attempts by class
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
    ) -> None:
        # Nothing is sent once the driver is no longer heard (None: an in-process run).
        self._lifeline = Lifeline(lifeline, self.driver_gone)
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
        self._traffic_before = Traffic()  # of the backends a quota wait replaced
        # The backends are made now (a missing key or an unmappable setting fails at once),
        # but their session only on the loop that sends.
        self._make_backends()

    def _make_backends(self) -> None:
        self._traffic_before = self.traffic()
        limiter = RateLimiter.for_transport(self._transport, clock=self._clock, wall=self._wall)
        if self._backends:  # fresh backends on the same account: its calls still count
            limiter.inherit(self._limiter.account())
        self._backends = {
            name: Client(c, self._key_for(c), limiter=limiter, clock=self._clock)
            for name, c in self.configurations.items()
        }

    def inherit(self, account: Account, traffic: Traffic | None = None) -> None:
        """Count the calls ``account`` records as this backend's own (a check and the run's
        pre-flight made them on the same account): the server's window and the limiter's
        agree. ``traffic``: the pre-flight's HTTP calls, counted with this backend's."""
        self._limiter.inherit(account)
        if traffic is not None:
            self._traffic_before = self._traffic_before + traffic

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

    async def lease(self, calls: Sequence[Pending]) -> Outcome:
        """Make the attempts of ``calls``, ``concurrency`` at a time (with every other lease
        it holds), storing every record.

        Stops taking calls once a terminal error stops the backend (spent quota, a refused key
        or model) or its driver is gone: the calls already sent finish and are stored, the
        rest come back unsent in ``given_back`` and stay pending.
        """
        await self._ensure_open()
        slots = self._slots
        assert slots is not None
        queue = iter(calls)
        given_back: list[Pending] = []
        counts = dict.fromkeys(
            ("calls", "attempts", "answered", "errored", "transient", "input_tokens",
             "output_tokens", "max_input_tokens"),
            0,
        )  # fmt: skip

        async def counted(record: AttemptRecord) -> None:
            counts["attempts"] += 1
            counts["answered" if record.outcome == "answer" else "errored"] += 1
            counts["transient"] += record.outcome == "transient"
            if record.outcome == "answer":
                counts["input_tokens"] += record.input_tokens or 0
                counts["output_tokens"] += record.output_tokens or 0
                counts["max_input_tokens"] = max(
                    counts["max_input_tokens"], record.input_tokens or 0
                )
            await self._store(record)

        def finished() -> None:
            counts["calls"] += 1
            self._stats.requests += 1

        async def take() -> None:
            for call in queue:
                if self._stopped is not None:
                    given_back.append(call)
                    return
                try:
                    # One slot from taking a call to storing its last record, shared by every
                    # lease the actor runs: at most `concurrency` paid calls are ever unstored.
                    async with slots:
                        await self._ask(call, counted)
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
            **counts, stop=self._stats.stop, given_back=tuple(given_back),
            traffic=self.traffic(), learnt_per_minute=self._limiter.learnt,
        )  # fmt: skip

    async def collect_open(self) -> Outcome:
        """Nothing: an online call is never left open by a run that ended."""
        return Outcome.nothing()

    async def _ask(
        self, call: Pending, sink: Callable[[AttemptRecord], Awaitable[None]]
    ) -> list[AttemptRecord]:
        request = self._builder.build(call.request, self.configurations[call.configuration])
        backend = self._backends[call.configuration]
        return await ask(backend, request, sink, first=call.next_attempt)

    async def _store(self, record: AttemptRecord) -> None:
        stats = self._stats
        stats.attempts += 1
        if record.outcome == "answer":
            stats.answered += 1
            stats.input_tokens += record.input_tokens or 0
            # Both wires count reasoning in the output tokens (OpenAI's completion_tokens,
            # Gemini's candidates plus thoughts, see the wire formats): added once.
            stats.output_tokens += record.output_tokens or 0
        else:
            stats.errored += 1
            stats.errors[record.outcome] = stats.errors.get(record.outcome, 0) + 1
        await self._group_commit.put(response_row(record))

    def driver_gone(self, why: str) -> None:
        """Send nothing more: calls not taken stay unsent, and those waiting for a rate slot
        (or a retry) leave it unsent now; the calls on the wire end as they will."""
        if isinstance(self._stopped, DriverGone):
            return
        gone = DriverGone(f"not sent: {why}", sent=False)
        self._stopped = gone
        self._limiter.halt(gone)

    def _stop(self, exc: CallError) -> None:
        if self._stopped is not None:
            return
        if isinstance(exc, DriverGone):
            self._stopped = exc
            return
        if not exc.sent:  # a call refused once stopped: the error that stopped it says why
            stopped = (b.stopped for b in self._backends.values() if b.stopped is not None)
            exc = next(stopped, exc)
        self._stopped = exc
        self._stats.stop = Stop.of(exc)

    async def resume_after_quota(self) -> None:
        """Forget a spent quota (after a wait): fresh backends, the same limits."""
        with contextlib.suppress(Exception):
            await self._close_session()
        self._stopped = None
        self._stats.stop = None
        self._make_backends()

    def traffic(self) -> Traffic:
        """HTTP calls sent and failures retried since the worker started."""
        return self._traffic_before + Traffic.of(self._backends.values())

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
        self._stats.traffic = self.traffic()
        return self._stats
