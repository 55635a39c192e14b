"""SIGTERM taken as Ctrl-C while a run's driver runs.

A ``kill``, a scheduler's stop or a container's shutdown sends SIGTERM. Ray's core worker takes
it in the driver with a handler of its own (installed at ``ray.init``, over Python's): it printed
a C++ stack dump and aborted, exit status -6, no word of what was kept or how to go on (issue
39). Installed once Ray is joined, :func:`sigterm_as_ctrl_c` hands SIGTERM to whatever takes
Ctrl-C in the main thread (asyncio's runner cancels the run, which ends as on Ctrl-C: every
answer stored is kept and the command prints how to resume); :func:`terminated` then says the
run was ended by SIGTERM, for its exit status (128 + 15).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

TERMINATED_STATUS = 128 + signal.SIGTERM  # a process ended by SIGTERM, as shells report it
_received: list[int] = []  # one entry per SIGTERM since the last install


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While the block runs, SIGTERM is Ctrl-C; the earlier handler is back after it. Only the
    main thread may set a handler: called on another, it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    earlier = signal.signal(signal.SIGTERM, _as_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, earlier)


def terminated() -> bool:
    """Whether SIGTERM came while :func:`sigterm_as_ctrl_c` held (since it last began)."""
    return bool(_received)


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    interrupt = signal.getsignal(signal.SIGINT)
    if callable(interrupt):  # Python's default (raises KeyboardInterrupt) or asyncio's runner's
        interrupt(signal.SIGINT, frame)
    else:  # Ctrl-C ignored (a background job of a script) or left to the system: stop all the same
        raise KeyboardInterrupt
