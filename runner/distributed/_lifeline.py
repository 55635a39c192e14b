"""A worker sends nothing once it stops hearing from its driver.

Every paid call a backend's worker sends after its driver died is money spent on an answer
nobody will store. Ray notices a dead owner only after seconds, so the driver also holds one
TCP connection to each worker, plain asyncio and no Ray: :class:`LifelineServer` in the
driver's loop writes a byte every ``beat_s``; :class:`Lifeline` in the worker reads them and
calls ``on_gone`` the moment they stop.

- **the driver ends or is killed**: the kernel closes a process's sockets even on SIGKILL, so
  the worker reads EOF (or a reset) within a round trip;
- **the driver's node is lost** (power, network): nothing closes the socket, but no beat comes
  either; after ``silence_s`` without one the worker gives up on its driver all the same;
- **anyone else connects**: a connection must present the run's token as its first line within
  ``hello_s``; a wrong token, garbage or an endless line is just closed, and nothing another
  process sends can raise in the driver's loop.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

from runner._errors import RunnerError

CONNECT_S = 10.0  # a worker's connection and first beat, across nodes
_LINE_LIMIT = 256  # the token line is 33 bytes; a longer first line is no lifeline of ours


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
    """The worker's side: calls ``on_gone(reason)`` once, when the driver's beats stop.

    ``on_gone`` runs in the worker's loop and should only stop the sending (set a flag, cancel
    the calls in flight). With no address (no driver to hear, as in-process tests run a
    worker) it is always alive.
    """

    def __init__(
        self,
        address: LifelineAddress | None,
        on_gone: Callable[[str], None],
        silence_s: float = 15.0,
    ) -> None:
        self._address = address
        self._on_gone = on_gone
        self._silence_s = silence_s
        self._gone = False
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None

    @property
    def alive(self) -> bool:
        return not self._gone

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
        reason = await self._silence(reader)
        self._gone = True
        if self._writer is not None:
            self._writer.close()
        self._on_gone(reason)

    async def _silence(self, reader: asyncio.StreamReader) -> str:
        """Read beats until they stop; why they stopped."""
        while True:
            try:
                async with asyncio.timeout(self._silence_s):
                    beats = await reader.read(64)
            except TimeoutError:
                return f"no word from the driver for {self._silence_s:g} s"
            except OSError as exc:
                return f"the driver's connection failed ({exc})"
            if not beats:
                return "the driver's connection closed (it ended or was killed)"
