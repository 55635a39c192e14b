"""A worker sends nothing while it does not hear its driver, and stops once the driver is gone.

Every paid call a backend's worker sends after its driver died is money spent on an answer
nobody will store. Ray notices a dead owner only after seconds, so the driver also holds one
TCP connection to each worker, plain asyncio and no Ray: :class:`LifelineServer` in the
driver's loop writes a byte every ``beat_s``; :class:`Lifeline` in the worker reads them.

- **the driver ends or is killed**: the kernel closes a process's sockets even on SIGKILL, so
  the worker reads EOF (or a reset) within a round trip, and calls ``on_gone``: it stops for
  good, and says why in what it reports;
- **the driver is silent** for ``silence_s`` (paused: Ctrl-Z, a VM stall, heavy swap; or its
  node lost, power or network): the connection is open but no beat comes. The worker is
  *suspended* (``on_silent``): it sends no call until a beat comes again (``on_heard``), and
  :meth:`Lifeline.heard` holds whoever would. A paused driver goes on where it was; a lost
  node's workers spend nothing while Ray notices their owner is gone and ends them;
- **anyone else connects**: a connection must present the run's token as its first line within
  ``hello_s``; a wrong token, garbage or an endless line is just closed, and nothing another
  process sends can raise in the driver's loop.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

from runner._errors import RunnerError

CONNECT_S = 10.0  # a worker's connection and first beat, across nodes
SILENCE_S = 15.0  # 15 beats missed (no busy loop misses that many): a worker suspends
_LINE_LIMIT = 256  # the token line is 33 bytes; a longer first line is no lifeline of ours

log = logging.getLogger("groundbench.lifeline")


class LifelineError(RunnerError):
    """A worker cannot hear its driver, so it must not start sending."""


@dataclass(frozen=True)
class LifelineAddress:
    """Where a worker finds its driver's lifeline; handed to the actors (it pickles)."""

    host: str
    port: int
    token: str


class LifelineServer:
    """The driver's side: a beat to every worker that presents the token, until closed."""

    address: LifelineAddress  # once listening: the port is the kernel's pick

    def __init__(self, token: str, beat_s: float, hello_s: float) -> None:
        self._token = token.encode()
        self._beat_s = beat_s
        self._hello_s = hello_s
        self._server: asyncio.Server | None = None
        self._closing = asyncio.Event()
        self._serving: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @classmethod
    @asynccontextmanager
    async def start(
        cls, host: str, beat_s: float = 1.0, hello_s: float = 5.0
    ) -> AsyncIterator[LifelineServer]:
        """Listen on ``host`` (the driver's node IP), a free port, for as long as the block runs.

        A connection has ``hello_s`` to present the token, then gets a beat every ``beat_s``.
        """
        server = cls(secrets.token_hex(16), beat_s, hello_s)
        await server._listen(host)
        try:
            yield server
        finally:
            await server.close()

    async def _listen(self, host: str) -> None:
        # One IP, one socket: a wildcard host would listen on a port per family, each its own.
        self._server = await asyncio.start_server(self._serve, host, 0, limit=_LINE_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        self.address = LifelineAddress(host, port, self._token.decode())

    async def close(self) -> None:
        """Stop listening and close every worker's connection: each worker stops sending.

        The connections are closed, not their tasks cancelled: Python 3.11's streams report a
        cancelled connection task to the loop's exception handler as an error.
        """
        self._closing.set()
        if self._server is not None:
            self._server.close()
        for writer in self._serving.values():
            writer.close()  # the reader sees its end: a greeting or a beat ends at once
        if self._serving:
            await asyncio.wait(self._serving)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._serving[task] = writer
        try:
            if not self._closing.is_set() and await self._admitted(reader):
                await self._beat(writer)
        except (OSError, ValueError, TimeoutError):
            pass  # a client's doing (reset, an endless line, silence): only its connection ends
        finally:
            del self._serving[task]
            writer.close()

    async def _admitted(self, reader: asyncio.StreamReader) -> bool:
        async with asyncio.timeout(self._hello_s):
            line = await reader.readline()  # ValueError past _LINE_LIMIT
        return hmac.compare_digest(line, self._token + b"\n")

    async def _beat(self, writer: asyncio.StreamWriter) -> None:
        while not self._closing.is_set():
            writer.write(b".")
            await writer.drain()  # ConnectionResetError once the worker is gone
            with suppress(TimeoutError):
                async with asyncio.timeout(self._beat_s):
                    await self._closing.wait()


class Lifeline:
    """The worker's side: ``on_gone(reason)`` once, when the driver's connection ends; while
    the driver is silent (``silence_s`` without a beat), ``on_silent(reason)`` as the silence
    begins and ``on_heard()`` at the next beat, and :meth:`heard` waits.

    The callbacks run in the worker's loop and should only stop or hold the sending (set a
    flag, cancel or hold the calls waiting). With no address (no driver to hear, as in-process
    tests run a worker) it is always heard.
    """

    def __init__(
        self,
        address: LifelineAddress | None,
        on_gone: Callable[[str], None],
        silence_s: float = SILENCE_S,
        *,
        on_silent: Callable[[str], None] = lambda _reason: None,
        on_heard: Callable[[], None] = lambda: None,
    ) -> None:
        self._address = address
        self._on_gone = on_gone
        self._on_silent, self._on_heard = on_silent, on_heard
        self._silence_s = silence_s
        self._gone = False
        self._not_silent = asyncio.Event()  # clear only while the driver is silent
        self._not_silent.set()
        self._silent_since = 0.0  # when the last beat before the silence came, for the log
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None

    @property
    def alive(self) -> bool:
        """Whether the driver's connection is open (silent or not)."""
        return not self._gone

    @property
    def silent(self) -> bool:
        """Whether the worker waits for the driver's next beat."""
        return not self._not_silent.is_set()

    async def heard(self) -> None:
        """Return once the driver is heard: at once unless it is silent, else at its next beat,
        or when its connection ends (``on_gone`` has stopped the worker by then)."""
        await self._not_silent.wait()

    async def start(self) -> None:
        """Connect and hear the first beat; :class:`LifelineError` if the driver can't be heard."""
        a = self._address
        if a is None:
            return
        where = f"the driver's lifeline at {a.host}:{a.port}"
        try:
            async with asyncio.timeout(CONNECT_S):
                reader, self._writer = await asyncio.open_connection(a.host, a.port)
                self._writer.write(a.token.encode() + b"\n")
                first = await reader.read(1)  # the server beats at once for a good token
        except (OSError, TimeoutError) as exc:
            await self.close()
            raise LifelineError(
                f"cannot reach {where} ({str(exc) or 'timed out'}); the driver's node must be "
                "reachable from the workers' nodes on that port"
            ) from exc
        if not first:
            await self.close()
            raise LifelineError(f"{where} refused this worker (a wrong token: another run?)")
        self._task = asyncio.create_task(self._listen(reader))

    async def close(self) -> None:
        """Stop listening, quietly: the worker is ending of its own accord."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task})
        if self._writer is not None:
            self._writer.close()

    async def _listen(self, reader: asyncio.StreamReader) -> None:
        reason = await self._beats(reader)
        self._gone = True
        if self._writer is not None:
            self._writer.close()
        self._on_gone(reason)
        self._not_silent.set()  # whoever waits for a beat finds the worker stopped

    async def _beats(self, reader: asyncio.StreamReader) -> str:
        """Read beats until the connection ends; why it ended. A silence suspends the worker
        until the next beat: a paused driver is no lost one (issue 56)."""
        while True:
            try:
                async with asyncio.timeout(None if self.silent else self._silence_s):
                    beats = await reader.read(64)
            except TimeoutError:
                self._fall_silent()
                continue
            except OSError as exc:
                return f"the driver's connection failed ({exc})"
            if not beats:
                return "the driver's connection closed (it ended or was killed)"
            if self.silent:
                self._hear_again()

    def _fall_silent(self) -> None:
        reason = f"no word from the driver for {self._silence_s:g} s"
        log.warning("%s: no call is sent until it is heard again", reason)
        self._silent_since = time.monotonic() - self._silence_s
        self._not_silent.clear()
        self._on_silent(reason)

    def _hear_again(self) -> None:
        silent_s = time.monotonic() - self._silent_since
        log.warning("the driver is heard again after %.0f s of silence: sending resumes", silent_s)
        self._not_silent.set()
        self._on_heard()
