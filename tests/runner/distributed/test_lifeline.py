"""The lifeline on loopback: a worker stops the moment its driver ends, is killed or goes quiet.

Counted, not timed: every wait is on an event or a closed connection, with a generous bound
only as a guard against a hang. Each test runs in a loop whose exception handler collects, and
asserts it saw nothing: no client of the server can raise in the driver's loop.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import pickle
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from runner._errors import RunnerError
from runner.distributed._lifeline import Lifeline, LifelineAddress, LifelineError, LifelineServer

ROOT = Path(__file__).resolve().parents[3]
GUARD_S = 30.0  # a hang guard, never the time a test expects to take

DRIVER = """
import asyncio, json
from dataclasses import asdict
from runner.distributed._lifeline import LifelineServer

async def main():
    async with LifelineServer.start("127.0.0.1") as server:
        print(json.dumps(asdict(server.address)), flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


def _run(main: Callable[[], Awaitable[None]]) -> None:
    """Run ``main`` in a fresh loop and fail if anything reached the loop's exception handler."""
    seen: list[dict[str, Any]] = []

    async def watched() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: seen.append(ctx))
        await main()
        gc.collect()  # a task that died unawaited reports itself when collected
        await asyncio.sleep(0)

    asyncio.run(watched())
    assert seen == []


class Gone:
    """An ``on_gone`` that counts its calls and can be awaited."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.event = asyncio.Event()

    def __call__(self, reason: str) -> None:
        self.reasons.append(reason)
        self.event.set()

    async def wait(self) -> str:
        await asyncio.wait_for(self.event.wait(), GUARD_S)
        return self.reasons[0]


async def _beats(address: LifelineAddress, n: int) -> None:
    """Connect as a worker would and read ``n`` beats."""
    reader, writer = await asyncio.open_connection(address.host, address.port)
    writer.write(address.token.encode() + b"\n")
    try:
        assert await asyncio.wait_for(reader.readexactly(n), GUARD_S) == b"." * n
    finally:
        writer.close()


def test_a_worker_hearing_beats_stays_alive_and_closing_it_is_quiet() -> None:
    async def main() -> None:
        async with LifelineServer.start("127.0.0.1", beat_s=0.01) as server:
            gone = Gone()
            lifeline = Lifeline(server.address, gone, silence_s=1.0)
            await lifeline.start()
            # 250 beats take at least 2.5 s, past the silence a worker hearing none would allow
            await _beats(server.address, 250)
            assert lifeline.alive
            await lifeline.close()
        assert gone.reasons == [] and lifeline.alive

    _run(main)


def test_the_driver_ending_tells_the_worker_once() -> None:
    async def main() -> None:
        gone = Gone()
        async with LifelineServer.start("127.0.0.1") as server:
            lifeline = Lifeline(server.address, gone)
            await lifeline.start()
        reason = await gone.wait()
        assert "connection closed" in reason and not lifeline.alive
        await lifeline.close()
        assert len(gone.reasons) == 1

    _run(main)


def test_a_killed_driver_is_noticed_through_its_socket() -> None:
    """The real case: the driver is another process, SIGKILLed; its kernel closes the socket."""

    async def main() -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        driver = await asyncio.create_subprocess_exec(
            sys.executable, "-c", DRIVER, env=env, stdout=asyncio.subprocess.PIPE
        )
        try:
            line = await asyncio.wait_for(driver.stdout.readline(), GUARD_S)  # type: ignore[union-attr]
            gone = Gone()
            lifeline = Lifeline(LifelineAddress(**json.loads(line)), gone)  # 15 s of silence
            await lifeline.start()
            driver.kill()
            assert "connection closed" in await gone.wait()
            assert gone.reasons[1:] == []
        finally:
            if driver.returncode is None:
                driver.kill()
            await driver.wait()

    _run(main)


def test_a_silent_driver_is_given_up_after_the_silence() -> None:
    async def main() -> None:
        async with LifelineServer.start("127.0.0.1", beat_s=60) as server:
            gone = Gone()
            lifeline = Lifeline(server.address, gone, silence_s=0.2)
            await lifeline.start()  # hears the first beat, then none for a minute
            assert await gone.wait() == "no word from the driver for 0.2 s"
            assert not lifeline.alive

    _run(main)


async def _closed_by_server(reader: asyncio.StreamReader) -> None:
    """Read until the server closes the connection (an end, or a reset of unread bytes)."""
    try:
        while await asyncio.wait_for(reader.read(4096), GUARD_S):
            pass
    except ConnectionResetError:
        pass


async def _hostile(address: LifelineAddress, sends: bytes, then_close: bool) -> None:
    reader, writer = await asyncio.open_connection(address.host, address.port)
    try:
        writer.write(sends)
        if then_close:
            writer.write_eof()
        await _closed_by_server(reader)
    finally:
        writer.close()


HOSTILE = {
    "a wrong token": (b"0" * 32 + b"\n", False),
    "garbage": (b"\x00\xff GET / HTTP/1.1\r\n\r\n", False),
    "the token with no newline": (None, True),
    "a 1 MB line": (b"x" * 1_000_000 + b"\n", False),
    "nothing, then closing": (b"", True),
    "nothing, and staying": (b"", False),  # closed after the server's hello_s
}


@pytest.mark.parametrize("client", list(HOSTILE))
def test_a_hostile_client_is_closed_and_the_server_serves_on(client: str) -> None:
    async def main() -> None:
        async with LifelineServer.start("127.0.0.1", beat_s=0.01, hello_s=0.2) as server:
            sends, then_close = HOSTILE[client]
            token = server.address.token.encode()
            await _hostile(server.address, token if sends is None else sends, then_close)
            gone = Gone()
            lifeline = Lifeline(server.address, gone)
            await lifeline.start()
            await _beats(server.address, 2)
            assert lifeline.alive
            await lifeline.close()
        assert gone.reasons == []

    _run(main)


def test_a_worker_with_another_runs_token_is_refused_at_start() -> None:
    async def main() -> None:
        async with LifelineServer.start("127.0.0.1") as server:
            wrong = replace(server.address, token="0" * 32)
            with pytest.raises(LifelineError, match="refused"):
                await Lifeline(wrong, Gone()).start()

    _run(main)


def test_no_driver_listening_is_one_clear_error() -> None:
    async def main() -> None:
        # bound and never listening: the port is ours, and a connection to it is refused
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
            with pytest.raises(LifelineError) as raised:
                await Lifeline(LifelineAddress("127.0.0.1", port, "t"), Gone()).start()
        message = str(raised.value)
        assert f"127.0.0.1:{port}" in message and "reachable" in message
        assert "\n" not in message and isinstance(raised.value, RunnerError)

    _run(main)


def test_no_address_means_no_lifeline_and_always_alive() -> None:
    async def main() -> None:
        lifeline = Lifeline(None, Gone())
        await lifeline.start()
        assert lifeline.alive
        await lifeline.close()

    _run(main)


def test_the_address_travels_to_the_actors() -> None:
    address = LifelineAddress("10.0.0.7", 4242, "ab" * 16)
    assert pickle.loads(pickle.dumps(address)) == address
    assert LifelineAddress(**json.loads(json.dumps(asdict(address)))) == address
