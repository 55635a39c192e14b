"""The three request limiters providers use, as the simulator's server applies them.

- a **sliding window**: at most ``limit`` calls admitted in any ``span`` seconds (the strictest:
  a client must count its own calls the same way to never be refused);
- a **token bucket**: ``limit`` tokens a span, refilled continuously, holding at most
  ``burst``; a call takes one;
- a **fixed window**: at most ``limit`` calls in each span that starts on a multiple of the
  span (a calendar minute: the count resets on the minute).

Each is a pure function of the times it is asked at: :meth:`admit` says whether a call arriving
``now`` is admitted and, when not, how long until one would be. Throttled calls take nothing.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Literal, Protocol

LimiterKind = Literal["token-bucket", "sliding-window", "fixed-window"]


@dataclass(frozen=True)
class Verdict:
    """A call's fate: admitted (``wait_s`` 0) or the seconds until one would be; and what the
    ``x-ratelimit-*`` headers say of the per-minute limit after it."""

    wait_s: float
    limit: float
    remaining: int  # calls still admitted now
    reset_s: float  # seconds until the allowance is full again

    @property
    def admitted(self) -> bool:
        return self.wait_s <= 0


class Limiter(Protocol):
    limit: float  # calls a span

    def wait(self, now: float) -> float:
        """Seconds until a call would be admitted (0: now); takes nothing."""
        ...

    def take(self, now: float) -> None: ...

    def remaining(self, now: float) -> int: ...

    def reset(self, now: float) -> float: ...


class SlidingWindow:
    """At most ``limit`` calls in any ``span`` seconds, counted on arrival."""

    def __init__(self, limit: float, span: float) -> None:
        self.limit, self.span = limit, span
        self._allowed = max(1, math.floor(limit))
        self._times: deque[float] = deque()

    def _expire(self, now: float) -> None:
        while self._times and self._times[0] <= now - self.span:
            self._times.popleft()

    def wait(self, now: float) -> float:
        self._expire(now)
        if len(self._times) < self._allowed:
            return 0.0
        return self._times[-self._allowed] + self.span - now

    def take(self, now: float) -> None:
        self._times.append(now)

    def remaining(self, now: float) -> int:
        self._expire(now)
        return max(0, self._allowed - len(self._times))

    def reset(self, now: float) -> float:
        self._expire(now)
        return self._times[-1] + self.span - now if self._times else 0.0


class TokenBucket:
    """``limit`` tokens a ``span``, refilled continuously; at most ``burst`` held (it starts
    full)."""

    def __init__(self, limit: float, span: float, burst: float) -> None:
        self.limit, self.span = limit, span
        self.rate = limit / span
        self.capacity = max(1.0, burst)
        self._level = self.capacity
        self._updated: float | None = None

    def _refill(self, now: float) -> None:
        if self._updated is not None and now > self._updated:
            self._level = min(self.capacity, self._level + (now - self._updated) * self.rate)
        self._updated = now if self._updated is None else max(self._updated, now)

    def wait(self, now: float) -> float:
        self._refill(now)
        return 0.0 if self._level >= 1.0 else (1.0 - self._level) / self.rate

    def take(self, now: float) -> None:
        self._refill(now)
        self._level -= 1.0

    def remaining(self, now: float) -> int:
        self._refill(now)
        return max(0, math.floor(self._level))

    def reset(self, now: float) -> float:
        self._refill(now)
        return (self.capacity - self._level) / self.rate


class FixedWindow:
    """At most ``limit`` calls in each ``span`` that starts on a multiple of ``span``."""

    def __init__(self, limit: float, span: float) -> None:
        self.limit, self.span = limit, span
        self._allowed = max(1, math.floor(limit))
        self._window = -math.inf
        self._count = 0

    def _roll(self, now: float) -> None:
        window = math.floor(now / self.span)
        if window > self._window:
            self._window, self._count = window, 0

    def wait(self, now: float) -> float:
        self._roll(now)
        return 0.0 if self._count < self._allowed else self.reset(now)

    def take(self, now: float) -> None:
        self._roll(now)
        self._count += 1

    def remaining(self, now: float) -> int:
        self._roll(now)
        return max(0, self._allowed - self._count)

    def reset(self, now: float) -> float:
        return (math.floor(now / self.span) + 1) * self.span - now


def make_limiter(kind: LimiterKind, limit: float, span: float, burst: float | None) -> Limiter:
    """A limiter of ``kind`` at ``limit`` calls a ``span``; a token bucket holds ``burst``
    (default: one second's calls, at least one)."""
    if kind == "sliding-window":
        return SlidingWindow(limit, span)
    if kind == "fixed-window":
        return FixedWindow(limit, span)
    return TokenBucket(limit, span, burst if burst is not None else math.floor(limit / span))


class Limits:
    """Every limit of a server at once (per minute, then per second): a call is admitted by
    all of them, or taken by none."""

    def __init__(self, limiters: list[Limiter]) -> None:
        if not limiters:
            raise ValueError("Limits needs at least one limiter")
        self.limiters = limiters

    def admit(self, now: float) -> Verdict:
        """Take a call arriving at ``now`` if every limiter admits it; the headers' figures
        are the first (per-minute) limiter's."""
        wait = max(lim.wait(now) for lim in self.limiters)
        if wait <= 0:
            for lim in self.limiters:
                lim.take(now)
        first = self.limiters[0]
        return Verdict(wait, first.limit, first.remaining(now), first.reset(now))
