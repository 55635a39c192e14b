"""A driver's lifeline that a test can pause, resume and hang up: a paused driver (Ctrl-Z, a VM
stall) keeps its connection open and sends no beat; a driver that ends closes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

from runner.distributed._lifeline import Lifeline, LifelineAddress

BEAT_S = 0.01  # far below any silence a test allows, so only a pause is ever silence
GUARD_S = 30.0  # a hang guard, never the time a test expects to take


@dataclass
class PausableDriver:
    """The driver's side: beats while ``beating`` is set; ``hang_up`` closes the connection."""

    address: LifelineAddress
    beating: asyncio.Event
    hung_up: asyncio.Event

    def pause(self) -> None:
        self.beating.clear()

    def resume(self) -> None:
        self.beating.set()

    def hang_up(self) -> None:
        self.hung_up.set()


@asynccontextmanager
async def pausable_driver() -> AsyncIterator[PausableDriver]:
    """A lifeline server on loopback, port 0, beating from the start; any token is let in."""
    beating, hung_up = asyncio.Event(), asyncio.Event()
    beating.set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()  # the token
            while not hung_up.is_set():
                if beating.is_set():
                    writer.write(b".")
                    await writer.drain()
                await asyncio.sleep(BEAT_S)
        except OSError:
            pass  # the worker closed first
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    driver = PausableDriver(LifelineAddress("127.0.0.1", port, "t"), beating, hung_up)
    try:
        yield driver
    finally:
        driver.hang_up()
        server.close()
        with suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), GUARD_S)


class Heard:
    """A lifeline's callbacks: each one counted, and awaitable by the count."""

    def __init__(self) -> None:
        self.gone: list[str] = []
        self.silent: list[str] = []
        self.heard = 0
        self._changed = asyncio.Event()

    def lifeline(self, address: LifelineAddress | None, silence_s: float) -> Lifeline:
        return Lifeline(
            address, self._gone, silence_s, on_silent=self._silent, on_heard=self._heard
        )

    def _gone(self, reason: str) -> None:
        self.gone.append(reason)
        self._changed.set()

    def _silent(self, reason: str) -> None:
        self.silent.append(reason)
        self._changed.set()

    def _heard(self) -> None:
        self.heard += 1
        self._changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait for ``condition``, looking again at each callback (a hang guard only)."""
        async with asyncio.timeout(GUARD_S):
            while not condition():
                self._changed.clear()
                await self._changed.wait()
