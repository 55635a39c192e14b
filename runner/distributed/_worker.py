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
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from conditions import Builder, Configuration, Questions, RequestKey, VariantCache, task_of
from runner.backends import (
    ApiKey,
    AttemptRecord,
    Backend,
    CallError,
    LimiterStats,
    QuotaExhausted,
    RateLimiter,
    ask,
)
from runner.batch import OpenBatch
from runner.distributed._batcher import CommitBatcher
from runner.store import Pending, ResponseRow, response_row

# Enough blobs for every variant of the questions that the workers hold at once: calls come
# question by question (a question's calls of one configuration are 13 conditions × 6
# budgets at most, over 3 variants), so 64 calls in flight span a few questions and an image
# is read and encoded once per variant. Each blob is ~200 KB of base64.
VARIANT_MEMORY = 96

# How long the first record of a batch waits for others. Each store write has a fixed cost
# (an actor call, a transaction); a call to a hosted model takes seconds, so 20 ms is nothing.
WRITE_LINGER_S = 0.02

KeySource = Callable[[Configuration], ApiKey]
Write = Callable[[list[ResponseRow]], Awaitable[object]]


@dataclass(frozen=True)
class Traffic:
    """What a worker's backends put on the wire since the worker started: running totals.

    An attempt is one or more HTTP calls: the first, and one more for each failure retried
    within it (a transient one, or a throttle).
    """

    http_calls: int = 0  # POSTs sent, every try of every attempt
    transient_retried: int = 0  # 5xx, resets, timeouts, broken bodies: tried again
    throttles_retried: int = 0  # 429s: tried again after the pause

    @classmethod
    def of(cls, backends: Iterable[Backend]) -> Traffic:
        """The totals of ``backends`` (one limiter's configurations)."""
        calls = transient = throttles = 0
        for b in backends:
            calls += b.calls_sent
            transient += b.retried["transient"]
            throttles += b.retried["rate-limited"]
        return cls(calls, transient, throttles)

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(
            self.http_calls + other.http_calls,
            self.transient_retried + other.transient_retried,
            self.throttles_retried + other.throttles_retried,
        )

    def latest(self, other: Traffic) -> Traffic:
        """The later of two readings of one worker's totals (each only grows), whichever
        order they arrive in."""
        return Traffic(
            max(self.http_calls, other.http_calls),
            max(self.transient_retried, other.transient_retried),
            max(self.throttles_retried, other.throttles_retried),
        )


@dataclass(frozen=True)
class ChunkOutcome:
    """What became of one chunk of calls."""

    calls: int  # requests whose attempts finished (a call not sent once stopped is not one)
    attempts: int  # records stored (answers and errors)
    answered: int
    errored: int
    transient: int = 0  # of the errored: attempts that a transient failure ended
    quota: str | None = None  # the quota error that stopped the backend, if one did
    refused: str | None = None  # the refusal of its key or model that stopped it, if one did
    input_tokens: int = 0  # of its answers: what the provider bills
    output_tokens: int = 0  # reasoning included, as both wires report it
    # The worker's running totals as the chunk ended, not the chunk's own: chunks run at once
    # and share the backends, so a call is never told to one chunk.
    traffic: Traffic = Traffic()
    learnt_per_minute: float | None = None  # the limit its 429s taught the backend, if any


@dataclass
class WorkerStats:
    """Counters since the worker started, for the progress view."""

    requests: int = 0  # whose attempts ended (a call not sent once stopped is not one)
    attempts: int = 0
    answered: int = 0
    errored: int = 0
    traffic: Traffic = Traffic()  # HTTP calls sent and failures retried
    input_tokens: int = 0
    output_tokens: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # errored attempts by class
    in_flight: int = 0
    ceiling: int = 0  # the most calls the limiter admits in flight now (AIMD lowers it)
    limiter: LimiterStats = field(default_factory=LimiterStats)
    quota: str | None = None
    refused: str | None = None
    batch: bool = False  # a batch-mode backend's (runner.batch): no HTTP rates, open batches
    batches: tuple[OpenBatch, ...] = ()  # its batches open now


def request_builder(questions: Questions, images: Path, cache: Path) -> Builder:
    """The requests of ``questions``, their image variants held :data:`VARIANT_MEMORY` at a
    time (online or in batches, a backend's worker builds them question by question)."""
    return task_of(questions).builder(images, VariantCache(cache, memory=VARIANT_MEMORY))


class BackendWorker:
    """Runs chunks of calls for the configurations of one backend."""

    def __init__(
        self,
        configurations: Sequence[Configuration],
        questions: Questions,
        images: Path,
        cache: Path,
        write: Write,
        key_for: KeySource,
    ) -> None:
        if not configurations:
            raise ValueError("a backend worker needs at least one configuration")
        self.configurations = {c.name: c for c in configurations}
        first = configurations[0]
        transport = first.transport
        self.concurrency = transport.max_concurrency
        self._transport = transport
        self._builder = request_builder(questions, images, cache)
        self._batcher: CommitBatcher[ResponseRow] = CommitBatcher(write, linger_s=WRITE_LINGER_S)
        self._key_for = key_for
        self._backends: dict[str, Backend] = {}
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
        limiter = RateLimiter.for_transport(self._transport)
        self._backends = {
            name: Backend(c, self._key_for(c), limiter=limiter)
            for name, c in self.configurations.items()
        }

    async def _ensure_open(self) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self.concurrency)
            self._session = aiohttp.ClientSession(connector=connector)
            for backend in self._backends.values():
                backend.open(self._session)

    async def close(self) -> None:
        for backend in self._backends.values():
            await backend.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def run(self, calls: Sequence[Pending]) -> ChunkOutcome:
        """Make the attempts of ``calls``, ``concurrency`` at a time, storing every record.

        Stops taking calls once a terminal error stops the backend (spent quota, a refused key
        or model): the calls already sent finish and are stored, the rest stay pending.
        """
        await self._ensure_open()
        slots = self._slots
        assert slots is not None
        queue = iter(calls)
        counts = dict.fromkeys(
            ("calls", "attempts", "answered", "errored", "transient", "input_tokens",
             "output_tokens"),
            0,
        )  # fmt: skip

        async def counted(record: AttemptRecord) -> None:
            counts["attempts"] += 1
            counts["answered" if record.outcome == "answer" else "errored"] += 1
            counts["transient"] += record.outcome == "transient"
            if record.outcome == "answer":
                counts["input_tokens"] += record.input_tokens or 0
                counts["output_tokens"] += record.output_tokens or 0
            await self._store(record)

        def finished() -> None:
            counts["calls"] += 1
            self._stats.requests += 1

        async def take() -> None:
            for call in queue:
                if self._stopped is not None:
                    return
                try:
                    # One slot from taking a call to storing its last record, shared by every
                    # chunk the actor runs: at most `concurrency` paid calls are ever unstored.
                    async with slots:
                        await self._ask(call, counted)
                except CallError as exc:  # ask raises only what stops the backend
                    self._stop(exc)
                    if exc.sent:  # its attempts ended with the error that stopped the backend
                        finished()
                    return
                finished()

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.concurrency, len(calls))):
                    group.create_task(take())
        except ExceptionGroup as failed:  # the first failure, as itself (a missing image, ...)
            raise failed.exceptions[0] from None
        stats = self._stats
        return ChunkOutcome(
            **counts, quota=stats.quota, refused=stats.refused, traffic=self.traffic(),
            learnt_per_minute=self._limiter.learnt,
        )  # fmt: skip

    async def _ask(
        self, call: Pending, sink: Callable[[AttemptRecord], Awaitable[None]]
    ) -> list[AttemptRecord]:
        key = RequestKey(call.configuration, call.condition, call.qid, call.budget)
        request = self._builder.build(key, self.configurations[call.configuration])
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
        await self._batcher.put(response_row(record))

    def _stop(self, exc: CallError) -> None:
        if self._stopped is not None:
            return
        if not exc.sent:  # a call refused once stopped: the error that stopped it says why
            stopped = (b.stopped for b in self._backends.values() if b.stopped is not None)
            exc = next(stopped, exc)
        self._stopped = exc
        if isinstance(exc, QuotaExhausted):
            self._stats.quota = exc.message
        else:  # with its status and code: what a user looks up
            self._stats.refused = str(exc)

    async def resume_after_quota(self) -> None:
        """Forget a spent quota (after a wait): fresh backends, the same limits."""
        with contextlib.suppress(Exception):
            await self.close()
        self._stopped = None
        self._stats.quota = self._stats.refused = None
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
