"""A run's spending cap (``run --max-spend``): calls are handed out only as far as the money
left pays for them.

Plain Python, no Ray. The feeder asks :meth:`SpendCap.affordable` before each chunk and
reserves the chunk's estimated cost; when the chunk ends its real cost (from the tokens the
provider reported and the configured prices) replaces the reservation. So the run stops
sending before the cap, not after it: what it can overshoot by is the difference between the
estimate and the real cost of the calls in flight, never a chunk's worth of calls sent after
the money ran out.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

# How many calls' worth of the prior a backend's measured cost per call is weighed against:
# the first few answers (one long reasoning trace) must not swing a chunk's size.
PRIOR_WEIGHT = 8


@dataclass
class SpendCap:
    """US dollars this run may spend, and what it has spent and holds reserved.

    The backends share what is left: while ``sharing`` of them are being fed, one may reserve
    at most its share of the room (at least one call, where the room pays for one), so the
    first to ask does not hold the whole cap on an estimate while the others wait.
    """

    limit: float
    spent: float = 0.0
    reserved: float = 0.0
    holding: int = 0  # chunks running with a reservation
    sharing: int = 0  # backends being fed (the feeder counts them in and out)
    _settled: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def affordable(self, per_call: float, wanted: int) -> int:
        """How many of ``wanted`` calls, at ``per_call`` dollars each, this backend's share of
        the money left pays for (all of them when a call costs nothing)."""
        if per_call <= 0:
            return wanted
        room = self.limit - self.spent - self.reserved
        if room < per_call:
            return 0
        share = math.floor(room / max(self.sharing, 1) / per_call)
        return min(wanted, max(share, 1))

    def reserve(self, dollars: float) -> None:
        self.reserved += dollars
        self.holding += 1

    def settle(self, reserved: float, spent: float) -> None:
        """A chunk ended: its reservation is released and its real cost counted."""
        self.holding -= 1
        # Counted, not summed to zero: float sums leave crumbs that would read as money held.
        self.reserved = max(0.0, self.reserved - reserved) if self.holding else 0.0
        self.spent += spent
        self._settled.set()  # wakes whoever waits for room
        self._settled = asyncio.Event()

    async def next_settled(self) -> None:
        """Wait until a chunk running elsewhere ends (and may give back some of its
        reservation)."""
        await self._settled.wait()


def per_call(spent: float, calls: int, prior: float) -> float:
    """The cost of a backend's next call: its measured mean, shrunk towards ``prior`` while
    few calls are measured.

    >>> per_call(0.0, 0, 0.01)
    0.01
    >>> round(per_call(0.16, 8, 0.01), 4)  # 8 calls at 0.02 against a prior of 0.01
    0.015
    """
    return (spent + prior * PRIOR_WEIGHT) / (calls + PRIOR_WEIGHT)
