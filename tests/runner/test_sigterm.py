"""SIGTERM taken as Ctrl-C while a run's driver runs (the run itself: tests/runner/distributed/
test_run.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator

import pytest

from runner._sigterm import sigterm_as_ctrl_c, terminated


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C as a terminal's Python takes it, whatever the suite was started under."""
    earlier = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, earlier)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_sigterm_cancels_an_asyncio_run_as_ctrl_c_does_and_the_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    cleaned: list[str] = []

    async def run() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cleaned.append("cancelled")  # asyncio's Ctrl-C: the main task is cancelled
            raise
        finally:
            cleaned.append("finally")

    with pytest.raises(KeyboardInterrupt), sigterm_as_ctrl_c():
        asyncio.run(run())
    assert cleaned == ["cancelled", "finally"]
    assert terminated()
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_stops_even_where_ctrl_c_is_ignored() -> None:
    earlier = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job of a script
    try:
        with pytest.raises(KeyboardInterrupt), sigterm_as_ctrl_c():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1_000_000):  # the handler runs between two instructions: raised here
                pass
    finally:
        signal.signal(signal.SIGINT, earlier)
    assert terminated()


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_is_not_taken_for_sigterm() -> None:
    with pytest.raises(KeyboardInterrupt), sigterm_as_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1_000_000):  # the handler runs between two instructions: raised here
            pass
    assert not terminated()


def test_off_the_main_thread_it_changes_nothing() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def inside() -> None:
        with sigterm_as_ctrl_c():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join()
    assert seen == [before]
