"""Run timer-bound asyncio code in virtual time: exact, instant, and blind to a busy machine.

The loop's clock stands still while callbacks run and jumps straight to the next timer when
every task is waiting on one, so ``asyncio.sleep(60)`` takes no real time and a limiter's
schedule is observed exactly. Real I/O still works (a ready socket is served before time
moves), but a test that waits on a real server should not use it: the clock would race ahead
of the server.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class _WarpingSelector(selectors.DefaultSelector):
    """A selector that, instead of sleeping until the next timer, moves the clock to it."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout is None:  # I/O to serve, or nothing scheduled: wait for real I/O
            return ready or super().select(None)
        self.now += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose :meth:`time` is virtual (it starts at 0)."""

    def __init__(self) -> None:
        self._warping = _WarpingSelector()
        super().__init__(self._warping)

    def time(self) -> float:
        return self._warping.now


def run_virtual(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main()`` to completion on a fresh :class:`VirtualTimeLoop`.

    Inside, ``asyncio.get_running_loop().time`` is the virtual clock to hand to code under test.
    """
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def virtual_clock() -> Callable[[], float]:
    """The running loop's clock (virtual under :func:`run_virtual`)."""
    return asyncio.get_running_loop().time
