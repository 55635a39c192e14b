"""One rate limiter per backend: requests per minute, tokens per minute, calls in flight.

Every request of a backend passes through its :class:`RateLimiter` before it is sent, one at a
time and in arrival order (an :class:`asyncio.Lock` is FIFO), so a queue of thousands of
requests wakes no thundering herd. A request is admitted when

- the backend is not paused (a 429's retry-after, or a ``x-ratelimit-remaining-*`` of 0);
- the request-rate schedule allows it (GCRA: evenly spaced at the configured rate, or the
  server's stated limit when lower, which additive-increase / multiplicative-decrease lowers
  on a throttle and restores over time);
- the token bucket holds its estimated tokens, when a tokens-per-minute limit is set (the
  estimate is corrected from the usage the provider reports, see :meth:`Slot.settle`);
- fewer calls are in flight than the ceiling, itself lowered on a throttle and then recovered
  additively (AIMD, as TCP does).

All of it is plain asyncio on one event loop: the Ray actor of the next layer owns one limiter.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

Clock = Callable[[], float]

MIN_RATE_FACTOR = 1 / 64  # a throttled backend never slows below 1/64 of its configured rate
MAX_BACKOFF_S = 60.0  # pause after repeated throttles that named no retry-after
RATE_RECOVERY = 0.05  # share of the configured rate regained per second without a throttle


@dataclass
class LimiterStats:
    """What the limiter did, for the progress view and the benchmarks."""

    admitted: int = 0
    throttles: int = 0
    decreases: int = 0
    header_pauses: int = 0
    paused_s: float = 0.0


@dataclass
class Slot:
    """One admitted call: its token estimate, corrected by :meth:`settle` once usage is known."""

    limiter: RateLimiter
    estimate: int
    number: int  # this backend's admissions so far, this one included
    settled: bool = field(default=False)

    def settle(self, actual_tokens: int | None) -> None:
        """Replace the estimate by the tokens the provider reported (``None``: keep it)."""
        if self.settled or actual_tokens is None:
            return
        self.settled = True
        self.limiter._correct(actual_tokens - self.estimate)


class RateLimiter:
    """Admission control for all requests of one backend.

    Parameters
    ----------
    requests_per_minute
        The provider's request-rate limit for this account and model.
    max_concurrency
        The most calls in flight at once; the ceiling starts here and returns here.
    tokens_per_minute
        The provider's token-rate limit, or ``None`` where it sets none.
    burst
        How many requests may start back to back after an idle spell (1: evenly spaced).
    """

    def __init__(
        self,
        requests_per_minute: float,
        max_concurrency: int,
        tokens_per_minute: float | None = None,
        *,
        burst: int = 1,
        clock: Clock = time.monotonic,
    ) -> None:
        self.interval = 60.0 / requests_per_minute
        self.max_concurrency = max_concurrency
        self.burst = burst
        self.clock = clock
        self.ceiling = float(max_concurrency)
        self.rate_factor = 1.0
        self.in_flight = 0
        self.stats = LimiterStats()
        self._tat = -math.inf  # GCRA's theoretical arrival time of the next request
        self._paused_until = -math.inf
        self._admitted_at_decrease = 0  # calls admitted up to the last decrease
        self._throttle_streak = 0
        self._rate_checked = clock()
        self._server_interval = 0.0  # from x-ratelimit-limit-requests, when a server sends it
        self._tokens = _TokenBucket(tokens_per_minute, clock) if tokens_per_minute else None
        self._admission = asyncio.Lock()
        self._freed = asyncio.Event()

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[Slot]:
        """Wait for admission, hold a slot for the call, and free it however the call ends."""
        slot = await self._admit(tokens)
        try:
            yield slot
        finally:
            self.in_flight -= 1
            self._freed.set()

    async def _admit(self, tokens: int) -> Slot:
        async with self._admission:
            while True:
                now = self.clock()
                wait = max(self._paused_until - now, self._rate_delay(now))
                if self._tokens is not None:
                    wait = max(wait, self._tokens.delay(tokens, now))
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                if self.in_flight >= max(1, math.floor(self.ceiling)):
                    self._freed.clear()
                    await self._freed.wait()
                    continue
                self._take(tokens, now)
                return Slot(self, tokens, self.stats.admitted)

    def _rate_delay(self, now: float) -> float:
        return self._tat - (self.burst - 1) * self._spacing - now

    @property
    def _spacing(self) -> float:
        return max(self.interval, self._server_interval) / self.rate_factor

    def _take(self, tokens: int, now: float) -> None:
        # Keep to the schedule when the admitter woke a little late (timer slack), so the
        # slack does not add up over a long run; after an idle spell, start afresh from now.
        late = now - self._tat
        self._tat = (
            self._tat if 0 <= late < self._spacing else max(self._tat, now)
        ) + self._spacing
        if self._tokens is not None:
            self._tokens.take(tokens, now)
        self.in_flight += 1
        self.stats.admitted += 1

    def _correct(self, tokens: int) -> None:
        if self._tokens is not None:
            self._tokens.take(tokens, self.clock())

    # -- what the server said ------------------------------------------------------------

    def succeeded(self) -> None:
        """A call went through: grow the ceiling and the rate back additively.

        The ceiling grows by one per ceiling's worth of successes (one per window, as TCP's
        congestion window does); the rate by :data:`RATE_RECOVERY` of the configured rate per
        second without a throttle.
        """
        self._throttle_streak = 0
        if self.ceiling < self.max_concurrency:
            self.ceiling = min(float(self.max_concurrency), self.ceiling + 1.0 / self.ceiling)
        now = self.clock()
        if self.rate_factor < 1.0:
            recovered = RATE_RECOVERY * (now - self._rate_checked)
            self.rate_factor = min(1.0, self.rate_factor + recovered)
        self._rate_checked = now

    def throttled(self, slot: Slot, retry_after: float | None) -> float:
        """A 429: pause the whole backend and halve ceiling and rate; returns the pause (s).

        Calls admitted before the last decrease were sent under the old settings, so their
        throttles do not halve again (one decrease per window, as TCP counts one loss). They
        are told apart by admission count, not time, which ties on a coarse clock.
        """
        self.stats.throttles += 1
        self._throttle_streak += 1
        if slot.number > self._admitted_at_decrease:
            self._admitted_at_decrease = self.stats.admitted
            self.stats.decreases += 1
            self.ceiling = max(1.0, self.ceiling / 2)
            self.rate_factor = max(MIN_RATE_FACTOR, self.rate_factor / 2)
        if retry_after is None:
            retry_after = min(MAX_BACKOFF_S, 0.5 * 2 ** (self._throttle_streak - 1))
        self.pause(retry_after)
        return retry_after

    def pause(self, seconds: float) -> None:
        """Admit nothing for ``seconds`` from now (a pause already longer stands)."""
        until = self.clock() + max(0.0, seconds)
        if until > self._paused_until:
            self.stats.paused_s += until - max(self._paused_until, self.clock())
            self._paused_until = until

    def observe(self, headers: Mapping[str, str]) -> None:
        """Honour ``x-ratelimit-*``: never schedule faster than the limit the server states,
        and when nothing remains, wait for the reset."""
        limit = _number(headers.get("x-ratelimit-limit-requests"))
        if limit is not None and limit > 0:
            self._server_interval = 60.0 / limit
        for kind in ("requests", "tokens"):
            remaining = _number(headers.get(f"x-ratelimit-remaining-{kind}"))
            if remaining is not None and remaining <= 0:
                reset = parse_reset(headers.get(f"x-ratelimit-reset-{kind}"))
                if reset is not None:
                    self.stats.header_pauses += 1
                    self.pause(reset)


class _TokenBucket:
    """Tokens per minute: a bucket of one minute's tokens, refilled continuously."""

    def __init__(self, per_minute: float, clock: Clock) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute
        self.clock = clock
        self.updated = clock()

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def delay(self, tokens: int, now: float) -> float:
        self._refill(now)
        need = min(float(tokens), self.capacity)  # a call larger than the bucket waits for it full
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, tokens: int, now: float) -> None:
        self._refill(now)
        self.level -= tokens


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_reset(value: str | None, now_epoch: float | None = None) -> float | None:
    """Seconds until a rate-limit window resets, from a ``x-ratelimit-reset-*`` header.

    Providers write it as seconds (``"1.5"``), a Go duration (``"6m0s"``, ``"20ms"``) or a
    Unix time (``"1767225600"``).

    >>> parse_reset("6m0s"), parse_reset("20ms"), parse_reset("1.5")
    (360.0, 0.02, 1.5)
    >>> parse_reset("1767225610", now_epoch=1767225600.0)
    10.0
    """
    if value is None:
        return None
    value = value.strip()
    number = _number(value)
    if number is not None:
        if number > 1e9:  # a Unix time, not a duration
            now = time.time() if now_epoch is None else now_epoch
            return max(0.0, number - now)
        return max(0.0, number)
    parts = _DURATION.findall(value)
    if not parts or "".join(a + u for a, u in parts) != value:
        return None
    return sum(float(amount) * _UNIT_S[unit] for amount, unit in parts)


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
