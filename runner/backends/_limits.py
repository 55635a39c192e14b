"""One rate limiter per backend: requests per minute (and per second), tokens per minute, calls
in flight.

Every request of a backend passes through its :class:`RateLimiter` before it is sent, one at a
time and in arrival order (an :class:`asyncio.Lock` is FIFO), so a queue of thousands of
requests wakes no thundering herd. A request is admitted when

- the backend is not paused (a 429's retry-after, or a ``x-ratelimit-remaining-*`` of 0);
- the request windows allow it: never more than the limit in any 60 s (and, where a
  per-second limit is set, any 1 s), counted on a log of the calls sent, so that a strict
  sliding-window server at the same limit never throttles, from the first call on. The windows
  are kept :data:`JITTER_SHARE` longer than the server's, as a call reaches the server a little
  after it leaves;
- the calls are evenly spaced at that limit (no burst to trip a token bucket);
- the token bucket holds its estimated tokens, when a tokens-per-minute limit is set (the
  estimate is corrected from the usage the provider reports, see :meth:`Slot.settle`);
- fewer calls are in flight than the ceiling, itself lowered on a throttle and then recovered
  additively (AIMD, as TCP does).

The limit is the lowest of the configured one, the one the server states
(``x-ratelimit-limit-requests``), and the one learnt from its 429s (:meth:`RateLimiter.throttled`):
the rate the server admitted, counted over a window at least as long as the server's, never
from one pause, and probed back up each window without a throttle (:mod:`._learning`; the
README's "Rate limits learnt" gives the rule and the evidence).

What the limiter knows of the calls sent is its :class:`Account`; a backend's limiter in another
process (the run's pre-flight, then the backend's actor) takes it over with
:meth:`RateLimiter.inherit`, so a server's window and the client's agree from the first call.

All of it is plain asyncio on one event loop: the Ray actor of the next layer owns one limiter.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime

from conditions import Transport
from runner.backends._learning import HISTORY_S, MINUTE_S, LearntLimit
from runner.backends._retry import MAX_THROTTLE_PAUSE_S

Clock = Callable[[], float]

JITTER_SHARE = 0.005  # windows 0.5% longer than the server's: 0.3 s a minute for a call's way
IDLE_S = 1.0  # no call in flight or waiting for longer than this: the backend was idle
# Waits shorter than this are none: a float's crumbs (1e-17 s) would be slept on for ever where
# the clock cannot move by them.
TIME_TOLERANCE_S = 1e-6


@dataclass(frozen=True)
class Account:
    """What a limiter knows of the calls sent on its account, in Unix time, so that a limiter
    of the same account in another process goes on from it (:meth:`RateLimiter.inherit`)."""

    sent: tuple[float, ...] = ()  # when each call left, the refused ones included
    refused: tuple[float, ...] = ()  # when the calls the server throttled left
    paused_until: float = 0.0  # no call before this (0: no pause)
    learnt: float | None = None  # a limit (per minute) learnt from 429s, if one was
    known_from: float | None = None  # every call sent since this is in ``sent``


class Stopped(Exception):
    """The caller gave up waiting for a slot (its backend stopped): nothing was sent."""


@dataclass
class LimiterStats:
    """What the limiter did, for the progress view and the benchmarks."""

    admitted: int = 0  # calls let through to be sent
    throttles: int = 0
    decreases: int = 0  # throttles that lowered the limit (one per window of calls)
    header_pauses: int = 0
    paused_s: float = 0.0
    released_unsent: int = 0  # calls waiting for a slot when their backend stopped


@dataclass
class Slot:
    """One admitted call: its token estimate, corrected by :meth:`settle` once usage is known."""

    limiter: RateLimiter
    estimate: int
    number: int  # this backend's admissions so far, this one included
    sent_at: float = 0.0
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
    requests_per_second
        A per-second request limit, where the provider sets one as well (``None``: none).
    """

    def __init__(
        self,
        requests_per_minute: float,
        max_concurrency: int,
        tokens_per_minute: float | None = None,
        requests_per_second: float | None = None,
        *,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
    ) -> None:
        self.configured = requests_per_minute
        self.max_concurrency = max_concurrency
        self.clock = clock
        self.wall = wall  # Unix time, for an account handed to another process
        self.ceiling = float(max_concurrency)
        self.in_flight = 0
        self.stats = LimiterStats()
        self.per_second = requests_per_second
        self._minute = _Window(MINUTE_S)
        self._second = _Window(1.0) if requests_per_second else None
        self._stated = math.inf  # from x-ratelimit-limit-requests, when a server sends it
        self._learnt = LearntLimit(requests_per_minute)  # from the server's 429s
        self._tat = -math.inf  # the earliest time of the next call, for even spacing
        self._paused_until = -math.inf
        self._waiting = 0  # calls waiting for admission
        self._idle_from = -math.inf  # nothing in flight or waiting since then
        self._admitted_at_decrease = 0  # calls admitted up to the last decrease
        self._throttle_streak = 0
        self._tokens = _TokenBucket(tokens_per_minute, clock) if tokens_per_minute else None
        self._admission = asyncio.Lock()
        self._freed = asyncio.Event()
        self.halted: BaseException | None = None  # what stopped every call of the account
        self.suspended = False  # admit nothing for now: the calls waiting stay waiting

    @classmethod
    def for_transport(
        cls, transport: Transport, *, clock: Clock = time.monotonic, wall: Clock = time.time
    ) -> RateLimiter:
        """The limiter of a backend configured with ``transport``."""
        return cls(
            transport.requests_per_minute,
            transport.max_concurrency,
            transport.tokens_per_minute,
            transport.requests_per_second,
            clock=clock,
            wall=wall,
        )

    def account(self) -> Account:
        """What this limiter knows of the calls sent, to hand to another limiter of the
        account (in Unix time)."""
        offset = self.wall() - self.clock()
        log = self._learnt
        known = log.known_from + offset if log.known_from < math.inf else None
        paused = self._paused_until + offset if self._paused_until > -math.inf else 0.0
        return Account(
            tuple(t + offset for t in log.sent),
            tuple(t + offset for t in log.refused),
            max(0.0, paused),
            self.learnt,
            known,
        )

    def inherit(self, account: Account) -> None:
        """Go on from the calls ``account`` records: they count in the windows, the spacing
        and the measures as this limiter's own. A time ahead of now is taken as now, and a
        pause is kept for a minute at most: an account from elsewhere delays, never stops."""
        now = self.clock()
        offset = now - self.wall()
        recent = now - HISTORY_S
        sent = sorted(min(now, t + offset) for t in account.sent if t + offset > recent)
        refused = [min(now, t + offset) for t in account.refused if t + offset > recent]
        known = account.known_from + offset if account.known_from is not None else None
        self._learnt.add_known(sent, refused, known)
        self._minute.merge(sent)
        if self._second is not None:
            self._second.merge(sent)
        if sent:
            self._tat = max(self._tat, sent[-1] + self._spacing())
        if account.paused_until > 0:
            self._paused_until = max(
                self._paused_until, min(account.paused_until + offset, now + MINUTE_S)
            )
        if account.learnt is not None:
            self._learnt.taught(account.learnt, now)

    @property
    def learnt(self) -> float | None:
        """The limit (per minute) a throttle taught and the limiter keeps to, if one did."""
        value = self._learnt.value
        return value if value < self.configured else None

    @property
    def limit(self) -> float:
        """Requests per minute in force: the lowest of configured, stated and learnt."""
        return min(self.configured, self._stated, self._learnt.value)

    @asynccontextmanager
    async def slot(
        self, tokens: int = 0, *, given_up: Callable[[], bool] = lambda: False
    ) -> AsyncIterator[Slot]:
        """Wait for admission, hold a slot for the call, and free it however the call ends.

        Raises
        ------
        Stopped
            ``given_up()`` became true, or the limiter was halted, while the call waited: it
            leaves unsent, and takes neither a place in the windows nor a slot.
        """
        slot = await self._admit(tokens, given_up)
        try:
            yield slot
        finally:
            self.in_flight -= 1
            if self.in_flight == 0 and self._waiting == 0:
                self._idle_from = self.clock()
            self._freed.set()

    def wake(self) -> None:
        """Wake the call waiting for admission, to look again at whether it is given up."""
        self._freed.set()

    def halt(self, why: BaseException) -> None:
        """Admit nothing more, for any configuration on this limiter (its account's quota is
        spent): every call waiting leaves unsent."""
        self.halted = why
        self.wake()

    def suspend(self) -> None:
        """Admit nothing until :meth:`resume` (the worker's driver is silent, and may be
        heard again): the calls waiting stay waiting, unsent, and keep their place."""
        self.suspended = True

    def resume(self) -> None:
        """Admit again after :meth:`suspend`, by the windows as before."""
        self.suspended = False
        self.wake()

    async def _admit(self, tokens: int, given_up: Callable[[], bool]) -> Slot:
        now = self.clock()
        if self.in_flight == 0 and self._waiting == 0 and now - self._idle_from > IDLE_S:
            self._learnt.busy_since = now  # calls wanted again after an idle spell
        self._waiting += 1
        try:
            return await self._admitted(tokens, given_up)
        finally:
            self._waiting -= 1

    async def _admitted(self, tokens: int, given_up: Callable[[], bool]) -> Slot:
        async with self._admission:
            while True:
                if given_up() or self.halted is not None:
                    self.stats.released_unsent += 1
                    raise Stopped
                now = self.clock()
                wait = math.inf if self.suspended else self._delay(tokens, now)
                if wait <= TIME_TOLERANCE_S and self.in_flight < max(1, math.floor(self.ceiling)):
                    return self._take(tokens, now)
                # A slot freed, a wake() or the time the windows name: whichever comes first
                # (suspended: a wake() only).
                self._freed.clear()
                timeout = wait if TIME_TOLERANCE_S < wait < math.inf else None
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._freed.wait(), timeout)

    def _delay(self, tokens: int, now: float) -> float:
        self._learnt.probe(now, min(self.configured, self._stated))
        limit = self.limit
        waits = [
            self._paused_until - now,
            self._tat - now,
            self._minute.delay(limit, now),
        ]
        if self._second is not None and self.per_second is not None:
            waits.append(self._second.delay(self.per_second, now))
        if self._tokens is not None:
            waits.append(self._tokens.delay(tokens, now))
        return max(waits)

    def _spacing(self) -> float:
        spacing = self._minute.span / self.limit
        if self._second is not None and self.per_second is not None:
            spacing = max(spacing, self._second.span / self.per_second)
        return spacing

    def _take(self, tokens: int, now: float) -> Slot:
        # Keep to the schedule when the admitter woke a little late (timer slack: a tenth of
        # the spacing at most), so the slack does not add up over a long run; after a pause or
        # a wait for a slot, start afresh from now, with no catching up that a bucket refuses.
        spacing = self._spacing()
        late = now - self._tat
        self._tat = (self._tat if 0 <= late < spacing / 10 else max(self._tat, now)) + spacing
        self._minute.add(now)
        if self._second is not None:
            self._second.add(now)
        if self._tokens is not None:
            self._tokens.take(tokens, now)
        self._learnt.add_sent(now)
        self.in_flight += 1
        self.stats.admitted += 1
        return Slot(self, tokens, self.stats.admitted, sent_at=now)

    def _correct(self, tokens: int) -> None:
        if self._tokens is not None:
            self._tokens.take(tokens, self.clock())

    # -- what the server said ------------------------------------------------------------

    def succeeded(self) -> None:
        """A call went through: grow the ceiling back additively, one per ceiling's worth of
        successes (one per window, as TCP's congestion window does)."""
        self._throttle_streak = 0
        if self.ceiling < self.max_concurrency:
            self.ceiling = min(float(self.max_concurrency), self.ceiling + 1.0 / self.ceiling)

    def throttled(self, slot: Slot, retry_after: float | None) -> float:
        """A 429: pause the whole backend, halve the ceiling and learn the server's limit;
        returns the pause (s).

        The limit learnt (:class:`LearntLimit`) is measured over a window at least as long as
        the server's, never from one pause. Calls admitted before the last decrease were sent
        under the old limit, so their throttles do not lower it again (one decrease per window
        of calls, as TCP counts one loss). They are told apart by admission count, not time,
        which ties on a coarse clock.
        """
        self.stats.throttles += 1
        self._throttle_streak += 1
        if retry_after is None:
            retry_after = min(MAX_THROTTLE_PAUSE_S, 0.5 * 2 ** (self._throttle_streak - 1))
        again = slot.sent_at + _expected(retry_after)  # when the server will admit again
        if slot.number > self._admitted_at_decrease:
            self._admitted_at_decrease = self.stats.admitted
            self.stats.decreases += 1
            self.ceiling = max(1.0, self.ceiling / 2)
            exact = not _integral(retry_after) and self._bucket_like(retry_after)
            ceiling = min(self.configured, self._stated)
            self._learnt.learn(slot.sent_at, again, exact, self.limit, ceiling, self.clock())
        self.pause(retry_after)
        self._learnt.throttled(slot.sent_at, again, self._paused_until)
        return retry_after

    def _bucket_like(self, retry_after: float) -> bool:
        """Whether a retry-after is a token bucket's: about the time one call's token takes to
        grow (a window's is the time its oldest call takes to leave it)."""
        return retry_after <= max(1.0, 2 * MINUTE_S / self.limit)

    def pause(self, seconds: float) -> None:
        """Admit nothing for ``seconds`` from now (a pause already longer stands)."""
        until = self.clock() + max(0.0, seconds)
        if until > self._paused_until:
            self.stats.paused_s += until - max(self._paused_until, self.clock())
            self._paused_until = until

    def observe(self, headers: Mapping[str, str]) -> None:
        """Honour ``x-ratelimit-*``: never schedule faster than the limits the server states
        (requests and tokens a minute), and when nothing remains, wait.

        Anthropic's ``anthropic-ratelimit-*`` headers are read as the same (:func:`anthropic_as_x`).
        ``x-ratelimit-reset-*`` is the time until the whole allowance is back. Where the
        server states its limit, the window log and the token bucket keep to it already, and
        nothing remaining needs only the wait for one call: the reset over the limit (a
        bucket holding what the server says remains waits the tokens' own time). Where it
        states none, the whole reset is waited.
        """
        headers = _WithAnthropic(headers)
        requests = _positive(headers.get("x-ratelimit-limit-requests"))
        if requests is not None:
            self._stated = requests
        tokens = _positive(headers.get("x-ratelimit-limit-tokens"))
        if tokens is not None:
            self._state_tokens(tokens, _number(headers.get("x-ratelimit-remaining-tokens")))
        for kind, stated in (("requests", requests), ("tokens", tokens)):
            remaining = _number(headers.get(f"x-ratelimit-remaining-{kind}"))
            if remaining is None or remaining > 0 or (kind == "tokens" and stated):
                continue
            reset = parse_reset(headers.get(f"x-ratelimit-reset-{kind}"))
            if reset is not None:
                self.stats.header_pauses += 1
                self.pause(reset / stated if stated else reset)

    def _state_tokens(self, per_minute: float, remaining: float | None) -> None:
        """A tokens-a-minute limit the server states, where it is lower than the one kept (or
        none was configured): a bucket at it, holding what the server says remains."""
        now = self.clock()
        if self._tokens is not None and self._tokens.capacity <= per_minute:
            return
        level = per_minute if remaining is None else remaining
        if self._tokens is not None:
            level = min(level, self._tokens.level_at(now))
        self._tokens = _TokenBucket(per_minute, self.clock, level=level)


def _integral(seconds: float) -> bool:
    return seconds >= 1 and float(seconds).is_integer()


def _expected(retry_after: float) -> float:
    """The wait a retry-after stands for: ``Retry-After`` is whole seconds, rounded up, so a
    whole number stands for half a second less."""
    return retry_after - 0.5 if _integral(retry_after) else retry_after


class _Window:
    """A limit's calls in any ``span`` seconds: a log of the times of the calls sent within
    the last span."""

    def __init__(self, server_span: float) -> None:
        self.span = server_span * (1 + JITTER_SHARE)
        self.times: deque[float] = deque()

    def delay(self, limit: float, now: float) -> float:
        """Seconds until one more call fits (0: now)."""
        while self.times and self.times[0] <= now - self.span:
            self.times.popleft()
        allowed = max(1, math.floor(limit))
        if len(self.times) < allowed:
            return 0.0
        return self.times[-allowed] + self.span - now

    def add(self, now: float) -> None:
        self.times.append(now)

    def merge(self, times: list[float]) -> None:
        """Calls sent elsewhere on the account, at ``times`` (sorted)."""
        self.times = deque(sorted([*self.times, *times]))


class _TokenBucket:
    """Tokens per minute: a bucket of one minute's tokens, refilled continuously."""

    def __init__(self, per_minute: float, clock: Clock, *, level: float | None = None) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute if level is None else min(level, per_minute)
        self.clock = clock
        self.updated = clock()

    def level_at(self, now: float) -> float:
        self._refill(now)
        return self.level

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


# Anthropic's names for the x-ratelimit-* headers. Its ``tokens-*`` state the most restrictive
# of its input- and output-token limits, the one a tokens-a-minute bucket keeps to; its
# ``input-tokens-*`` / ``output-tokens-*`` are left to that one.
_ANTHROPIC_NAMES = {
    f"anthropic-ratelimit-{kind}-{part}": f"x-ratelimit-{part}-{kind}"
    for kind in ("requests", "tokens")
    for part in ("limit", "remaining", "reset")
}


def anthropic_as_x(headers: Mapping[str, str]) -> dict[str, str]:
    """Anthropic's ``anthropic-ratelimit-*`` headers under the ``x-ratelimit-*`` names.

    >>> anthropic_as_x({"anthropic-ratelimit-requests-limit": "50"})
    {'x-ratelimit-limit-requests': '50'}
    """
    return {x: headers[a] for a, x in _ANTHROPIC_NAMES.items() if headers.get(a) is not None}


class _WithAnthropic(Mapping[str, str]):
    """``headers`` (aiohttp's, case-insensitive) with Anthropic's names read as well."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._headers = headers
        self._anthropic = anthropic_as_x(headers)

    def __getitem__(self, name: str) -> str:
        value = self._headers.get(name)
        return self._anthropic[name] if value is None else value

    def __iter__(self) -> Iterator[str]:
        return iter({*self._headers, *self._anthropic})

    def __len__(self) -> int:
        return len({*self._headers, *self._anthropic})


def parse_reset(value: str | None, now_epoch: float | None = None) -> float | None:
    """Seconds until a rate-limit window resets, from a ``x-ratelimit-reset-*`` header.

    Providers write it as seconds (``"1.5"``), a Go duration (``"6m0s"``, ``"20ms"``), a
    Unix time (``"1767225600"``) or an RFC 3339 time (Anthropic's ``"2026-01-01T00:00:10Z"``).

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
        return _until(value, now_epoch)
    return sum(float(amount) * _UNIT_S[unit] for amount, unit in parts)


def _until(value: str, now_epoch: float | None) -> float | None:
    """Seconds from now until an RFC 3339 time, or ``None`` if ``value`` is not one."""
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    now = time.time() if now_epoch is None else now_epoch
    return max(0.0, when.timestamp() - now)


def _positive(value: str | None) -> float | None:
    number = _number(value)
    return number if number is not None and number > 0 else None


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
