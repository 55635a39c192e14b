"""The lifeline on loopback: a worker stops the moment its driver ends or is killed, and waits
while its driver is silent (paused), going on when it is heard again.

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
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from runner._errors import RunnerError
from runner.distributed._lifeline import Lifeline, LifelineAddress, LifelineError, LifelineServer
from tests.runner.distributed.pausable import Heard, pausable_driver

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


def test_a_silent_driver_suspends_the_worker_and_is_never_given_up_for_it() -> None:
    """No beat for the silence: the worker waits, as long as the connection is open; once it
    closes, the driver is gone, and whoever waited is let go to find the worker stopped."""

    async def main() -> None:
        calls = Heard()
        async with LifelineServer.start("127.0.0.1", beat_s=60) as server:
            lifeline = calls.lifeline(server.address, silence_s=0.2)
            await lifeline.start()  # hears the first beat, then none for a minute
            await calls.until(lambda: bool(calls.silent))
            assert calls.silent == ["no word from the driver for 0.2 s"] and calls.gone == []
            assert (lifeline.silent, lifeline.alive) == (True, True)
            waiting = asyncio.create_task(lifeline.heard())
        await calls.until(lambda: bool(calls.gone))  # the server closed: the driver ended
        await asyncio.wait_for(waiting, GUARD_S)
        assert "connection closed" in calls.gone[0] and not lifeline.alive
        assert (len(calls.silent), len(calls.gone), calls.heard) == (1, 1, 0)
        await lifeline.close()

    _run(main)


def test_a_paused_driver_is_heard_again_and_the_worker_goes_on_each_time() -> None:
    async def main() -> None:
        calls = Heard()
        async with pausable_driver() as driver:
            lifeline = calls.lifeline(driver.address, silence_s=0.5)
            await lifeline.start()
            for n in (1, 2):  # a second pause is a second silence, heard again as the first
                driver.pause()
                await calls.until(lambda: len(calls.silent) == n)  # noqa: B023
                assert lifeline.silent and calls.heard == n - 1
                waiting = asyncio.create_task(lifeline.heard())
                await asyncio.sleep(0.05)
                assert not waiting.done()  # held while no beat comes
                driver.resume()
                await calls.until(lambda: calls.heard == n)  # noqa: B023
                await asyncio.wait_for(waiting, GUARD_S)
                assert not lifeline.silent
            await lifeline.heard()  # heard: at once
            await lifeline.close()
        assert calls.gone == [] and lifeline.alive

    _run(main)


def test_a_driver_ending_while_silent_stops_the_worker_once() -> None:
    async def main() -> None:
        calls = Heard()
        async with pausable_driver() as driver:
            lifeline = calls.lifeline(driver.address, silence_s=0.2)
            await lifeline.start()
            driver.pause()
            await calls.until(lambda: bool(calls.silent))
            waiting = asyncio.create_task(lifeline.heard())
            driver.hang_up()
            await calls.until(lambda: bool(calls.gone))
            await asyncio.wait_for(waiting, GUARD_S)  # let go, to find the worker stopped
        assert calls.gone == ["the driver's connection closed (it ended or was killed)"]
        assert calls.heard == 0 and not lifeline.alive
        await lifeline.close()

    _run(main)


def test_a_paused_driver_process_is_waited_for_and_heard_again() -> None:
    """The real case: the driver is another process, SIGSTOPped (Ctrl-Z), then SIGCONTed."""

    async def main() -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        fast = DRIVER.replace('start("127.0.0.1")', 'start("127.0.0.1", beat_s=0.05)')
        driver = await asyncio.create_subprocess_exec(
            sys.executable, "-c", fast, env=env, stdout=asyncio.subprocess.PIPE
        )
        try:
            line = await asyncio.wait_for(driver.stdout.readline(), GUARD_S)  # type: ignore[union-attr]
            calls = Heard()
            lifeline = calls.lifeline(LifelineAddress(**json.loads(line)), silence_s=0.5)
            await lifeline.start()
            driver.send_signal(signal.SIGSTOP)
            await calls.until(lambda: bool(calls.silent))
            driver.send_signal(signal.SIGCONT)
            await calls.until(lambda: calls.heard == 1)
            assert calls.gone == [] and not lifeline.silent
            driver.kill()
            await calls.until(lambda: bool(calls.gone))
            assert "connection closed" in calls.gone[0] and len(calls.silent) == 1
        finally:
            if driver.returncode is None:
                driver.kill()
            await driver.wait()

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
