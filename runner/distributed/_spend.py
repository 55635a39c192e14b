"""A run's spending cap (``run --max-spend``): a call is handed out only while the worst case of
everything in flight fits in the money left.

Plain Python, no Ray. The worst case of a call (:class:`WorstCase`) is every attempt it may
still make at its input bound and its ``max_output_tokens``, at the configured prices: no
estimate of the mean enters it, so an estimate 3× low cannot make the run overshoot, and one
3× high only stops it a little sooner. The feeder reserves a lease's worst case before
handing it out (:meth:`SpendCap.take`); when the lease ends, the reservation is released and
what the worker was billed since its last outcome is counted (:meth:`SpendCap.settle`: that
may hold calls of leases still running, counted then beside their reservation, so the sum errs
high, never low); a lease lost with its worker is counted at its reservation. So what is spent
plus what is reserved never passes the cap, and what is spent is at most that. A count a server
sends that is no count is taken at its worst case (runner.backends._usage).

The input bound is the estimated input per call times :data:`INPUT_MARGIN`, raised to the
largest input any attempt of the backend was counted at; a provider that counts more than that
(a server that bills beyond ``max_tokens``) is the one way past the cap, and the run then
stops handing out calls at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from conditions import Configuration
from runner._port import Cost
from runner.backends import INPUT_MARGIN
from runner.estimate import input_bound
from runner.store import Pending

# The cap is compared with sums of floats: this much of it is never handed out, so rounding
# cannot carry the spend a fraction of a cent past it.
ROUNDING = 1e-9


@dataclass
class WorstCase:
    """The most one call of a backend can cost.

    ``attempts`` is how many attempts a request of each configuration may make (one, where
    a lease's call is one attempt: a batch line); ``max_output`` its ``max_output_tokens``.
    """

    cost: Cost
    input_bound: int
    max_output: Mapping[str, int]
    attempts: Mapping[str, int]
    one_attempt: bool = False

    def __call__(self, call: Pending) -> float:
        attempts = 1 if self.one_attempt else self.attempts[call.configuration] - call.next_attempt
        one = self.cost(self.input_bound, self.max_output[call.configuration])
        return max(attempts, 1) * one

    def learn(self, max_input_tokens: int) -> None:
        """An attempt was counted at ``max_input_tokens`` of input: no call is assumed to take
        less."""
        self.input_bound = max(self.input_bound, max_input_tokens)


def worst_case(
    cost: Cost,
    configurations: Sequence[Configuration],
    attempts: Mapping[str, int],
    estimated_input: float,
    one_attempt: bool,
) -> WorstCase:
    """The worst case of a backend's calls: ``max_output_tokens`` is what its providers bill
    at most for an answer (reasoning included: OpenAI's ``max_completion_tokens`` and Gemini's
    ``maxOutputTokens`` count it)."""
    max_output = {c.name: c.decoding.max_output_tokens for c in configurations}
    return WorstCase(cost, input_bound(estimated_input), max_output, attempts, one_attempt)


@dataclass
class SpendCap:
    """US dollars this run may spend, what it has spent, and the worst case of what is in
    flight.

    The backends share what is left: while ``sharing`` of them are being fed, one lease may
    hold at most its backend's share of the room (at least one call, where the room pays for
    one), so the first to ask does not hold the whole cap while the others wait.
    """

    limit: float
    spent: float = 0.0
    reserved: float = 0.0  # the worst case of every lease in flight
    holding: int = 0  # leases in flight with a reservation
    sharing: int = 0  # backends being fed (the feeder counts them in and out)
    _settled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def room(self) -> float:
        """Dollars no call in flight could claim."""
        return self.limit * (1 - ROUNDING) - self.spent - self.reserved

    def take(self, worst: Sequence[float]) -> tuple[int, float]:
        """How many of the calls whose worst cases are ``worst`` (in order) this backend's
        share of the room pays for, and the dollars reserved for them (held until
        :meth:`settle`)."""
        room = self.room
        share = room / max(self.sharing, 1)
        taken, held = 0, 0.0
        for w in worst:
            # Its share, except that one call may take all the room: near the cap the last
            # calls go one at a time rather than not at all.
            if held + w > share and not (taken == 0 and w <= room):
                break
            taken, held = taken + 1, held + w
        if taken:
            self.reserved += held
            self.holding += 1
        return taken, held

    def settle(self, reserved: float, spent: float) -> None:
        """A lease ended: its reservation is released and its real cost counted."""
        self.holding -= 1
        # Counted, not summed to zero: float sums leave crumbs that would read as money held.
        self.reserved = max(0.0, self.reserved - reserved) if self.holding else 0.0
        self.spent += spent
        self._settled.set()  # wakes whoever waits for room
        self._settled = asyncio.Event()

    def count(self, spent: float) -> None:
        """Dollars spent with nothing reserved for them (batches an earlier run left open,
        collected now: that run's cap let them be made)."""
        self.spent += spent
        self._settled.set()
        self._settled = asyncio.Event()

    async def next_settled(self) -> None:
        """Wait until a lease running elsewhere ends (and may give back some of its
        reservation)."""
        await self._settled.wait()


__all__ = ["INPUT_MARGIN", "SpendCap", "WorstCase", "input_bound", "worst_case"]
