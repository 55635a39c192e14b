"""The limit a backend's 429s teach (issue 38): measured over a window, never from one pause,
and probed back up.

A throttle says the server is at its limit now, and when it will admit again. What it admitted
before that is the measure of its limit, and the measure must span a window at least as long as
the server's, or it reads the backend's own pauses instead of the server: the rule that fell to
9–15% of a limit told 4× too high measured from the end of the last pause, over one pause.

- **The window**: the calls admitted in the minute that ends when the server admits again,
  where every call of that minute is known. A sliding or a fixed window server admits exactly
  its limit there; a token bucket its rate, plus what its burst held at the start.
- **Between two throttles**: at both the server was at its limit, so the calls it admitted
  between them, over that time, are its rate, a bucket's burst left out. Taken where the waits
  are exact and a bucket's (a fraction of a second), or the throttles half a window apart.
- **Younger than a window**: the rate since calls were last wanted after an idle spell (time the
  backend did not ask is no time the server refused). It reads high; once a limit is learnt,
  such a measure lowers it by :data:`SHORT_MEASURE_FLOOR` at most, as its span is mostly the
  backend's own pauses, each a ``Retry-After`` rounded up to the second.

The lower of the window and the pair where both are taken, 1% below; never below what the
server admitted in the last window while refusing calls, nor below a limit that held a whole
window when a rise above it is refused. Each window without a throttle, a learnt limit rises by
:data:`PROBE_STEP_SHARE` of the configured one (half the way to a pace refused in the last
:data:`MAX_PROBE_WINDOWS` windows, a bisection), and a refused rise doubles the windows before
the next: a limit learnt too low is back within minutes, and one learnt right is tried again
ever more rarely.

Plain state on one clock, no asyncio: :class:`~runner.backends._limits.RateLimiter` owns one.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable

MINUTE_S = 60.0
LEARNT_SHARE = 0.99  # a learnt limit keeps 1% below the rate measured, for the measure's error
MIN_LIMIT_SHARE = 1 / 64  # a learnt limit never falls below 1/64 of the configured one
# Two throttles measure a rate between them once they are this share of a window apart, when
# their waits are known only to the second.
PAIR_SPAN_SHARE = 0.5
# Measured over less than a window, a limit already learnt is lowered to this share at most.
SHORT_MEASURE_FLOOR = 0.95
PROBE_STEP_SHARE = 1 / 16  # a learnt limit rises by this share of the configured one a window
MAX_PROBE_WINDOWS = 16  # a refused rise doubles the windows before the next, up to this many
HISTORY_S = 3 * MINUTE_S  # how far back the calls sent are kept, for the measures


class LearntLimit:
    """The requests a minute a backend's 429s taught (``value``; infinite: none), with the
    log of the calls sent that it is measured on."""

    def __init__(self, configured: float) -> None:
        self.configured = configured
        self.value = math.inf
        self.sent: deque[float] = deque()  # when the calls of the last HISTORY_S left
        self.refused: deque[float] = deque()  # ... and those the server throttled
        self.known_from = math.inf  # every call sent on the account since then is known
        self.busy_since = -math.inf  # calls have been wanted without a break since then
        # (sent, when the server said it would admit again) of each throttle
        self._saturated: deque[tuple[float, float]] = deque()
        self._quiet_since = -math.inf  # the end of the last throttle's pause
        self._probe_windows = 1  # windows without a throttle before a learnt limit rises
        self._probing = False  # the learnt limit is a rise not yet held for a window
        self._held = 0.0  # the limit a rise started from: it held a whole window
        self._refused_pace = math.inf  # the limit in force at the last decrease: too high
        self._refused_pace_at = -math.inf

    # -- the log ---------------------------------------------------------------------------

    def add_sent(self, now: float) -> None:
        self.sent.append(now)
        self.known_from = min(self.known_from, now)
        self._forget_before(now - HISTORY_S)

    def add_known(
        self, sent: Iterable[float], refused: Iterable[float], known_from: float | None
    ) -> None:
        """Calls sent elsewhere on the account (at these times on this clock)."""
        self.sent = deque(sorted([*self.sent, *sent]))
        self.refused = deque(sorted([*self.refused, *refused]))
        if known_from is None and self.sent:
            known_from = self.sent[0]  # it does not say: from its first call
        if known_from is not None:
            self.known_from = min(self.known_from, known_from)

    def taught(self, value: float, now: float) -> None:
        """A limit learnt elsewhere on the account: kept where it is lower."""
        if value < self.value:
            self.value = max(self.configured * MIN_LIMIT_SHARE, value)
            self._quiet_since = now

    def _count(self, start: float, before: float) -> int:
        """The calls sent from ``start`` up to ``before`` that the server admitted."""
        sent = sum(1 for t in self.sent if start <= t < before)
        return sent - sum(1 for t in self.refused if start <= t < before)

    def _forget_before(self, when: float) -> None:
        for times in (self.sent, self.refused):
            while times and times[0] < when:
                times.popleft()
        while self._saturated and self._saturated[0][1] < when:
            self._saturated.popleft()

    # -- a throttle ------------------------------------------------------------------------

    def throttled(self, sent: float, again: float, pause_end: float) -> None:
        """A call sent at ``sent`` was throttled: the server admits again at ``again``, and
        the backend waits until ``pause_end``."""
        self.refused.append(sent)
        self._saturated.append((sent, again))
        self._quiet_since = max(self._quiet_since, pause_end)

    def learn(
        self, sent: float, again: float, exact: bool, in_force: float, ceiling: float, now: float
    ) -> None:
        """Learn from a call sent at ``sent`` that was throttled (call before
        :meth:`throttled`), the server admitting again at ``again`` (``exact``: a wait to the
        millisecond, a bucket's), while ``in_force`` was the limit kept to; ``ceiling``: the
        limit it may not pass (configured or stated)."""
        self._refused_pace, self._refused_pace_at = in_force, now
        measured = self._measure(sent, again, exact)
        if measured is None:
            return
        shown = self._count(max(again - MINUTE_S, self._refusing_since(again)), sent)
        learnt = max(measured * LEARNT_SHARE, float(shown))
        if self._probing:  # the rise was refused: back to the limit that held, and wait
            learnt = max(learnt, self._held)  # longer before the next
            self._probe_windows = min(MAX_PROBE_WINDOWS, 2 * self._probe_windows)
        self._probing = False
        self.value = (
            max(self.configured * MIN_LIMIT_SHARE, learnt) if learnt < ceiling else math.inf
        )

    def _refusing_since(self, again: float) -> float:
        """When the server began refusing, this time: the first of the throttles that came
        less than a window apart, up to the one that admits again at ``again``."""
        since = again
        for _, then in reversed(self._saturated):
            if since - then >= MINUTE_S:
                break
            since = then
        return since

    def _measure(self, sent: float, again: float, exact: bool) -> float | None:
        """The rate (per minute) the server admits (see the module docstring; ``None``:
        nothing to measure on)."""
        measures = []
        start = again - MINUTE_S
        if self.known_from <= start + 1.0:  # a second's slack: a wait said to the second
            measures.append(float(self._count(start, sent)))
        between = self._between(sent, again, exact)
        if between is not None:
            measures.append(between)
        if measures:
            return min(measures)
        start = max(self.known_from, self.busy_since)
        span = again - start
        admitted = self._count(start, sent)
        if admitted <= 0 or span <= 0:
            return None
        measured = admitted / span * MINUTE_S
        if self.value < math.inf:
            measured = max(measured, self.value * SHORT_MEASURE_FLOOR)
        return measured

    def _between(self, sent: float, again: float, exact: bool) -> float | None:
        """The rate between an earlier throttle and this one (see the module docstring).

        Waits known to the second: the latest throttle half a window back or more. Exact waits
        (a bucket's): the higher of the rates from the latest throttle and from the earliest of
        the last window since calls were last wanted after an idle spell (the longest span).
        Between two such throttles a bucket admits at most its rate, and less only where the
        backend did not press it (a busy machine's stall lets its tokens overflow): each is a
        floor, and the longest span dilutes a stall between the last two. Measured between the
        two throttles around one stall alone, a run on a loaded machine learnt 47% of a bucket's
        rate, and kept to it."""
        pairs = [
            (before, then)
            for before, then in self._saturated
            if before < sent and again - then > 0
            and (again - then >= PAIR_SPAN_SHARE * MINUTE_S
                 or (exact and sent - before < MINUTE_S and then >= self.busy_since))
        ]  # fmt: skip
        if not pairs:
            return None
        ends = [pairs[0][1], pairs[-1][1]] if exact else [pairs[-1][1]]
        rates = [self._count(then, sent) / (again - then) * MINUTE_S for then in ends]
        return max(rates) if max(rates) > 0 else None

    # -- probing back up -------------------------------------------------------------------

    def probe(self, now: float, ceiling: float) -> None:
        """Raise a learnt limit after each window without a throttle (more windows after a
        rise was refused), so a limit learnt too low, or raised since by the provider, is found
        again; ``ceiling``: the limit it may not pass."""
        if self.value == math.inf or now - self._quiet_since < MINUTE_S * self._probe_windows:
            return
        if self._probing:  # the last rise held a whole window
            self._probe_windows = 1
        self._held = self.value
        raised = self.value + self._probe_step(now)
        self.value = math.inf if raised >= ceiling else raised
        self._probing = self.value < math.inf
        self._quiet_since = now

    def _probe_step(self, now: float) -> float:
        """A share of the configured limit, or half the way to a pace the server refused in the
        last :data:`MAX_PROBE_WINDOWS` windows, a call a minute at least."""
        step = self.configured * PROBE_STEP_SHARE
        if now - self._refused_pace_at < MAX_PROBE_WINDOWS * MINUTE_S:
            step = min(step, max(1.0, (self._refused_pace - self.value) / 2))
        return step
