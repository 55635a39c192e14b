"""Ray tests: one local Ray for the session, simulators on loopback, experiment files."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from conditions import Cohort, DataRoot, VariantCache, write_cohort
from runner.simulator import SimSpec, Simulator, serving
from tests.conftest import KEY as KEY  # the Ray tests import the key from here
from tests.conftest import KEY_ENV as KEY_ENV

RAY = Path(sys.executable).with_name("ray")


@pytest.fixture
def experiment_store(tmp_path: Path, small_cohort: Cohort) -> Path:
    """A store that already holds the small cohort (so runs need not build one)."""
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    return path


@dataclass(frozen=True)
class RunSetup:
    """What a run test needs: the session's Ray, a store holding the small cohort, its data."""

    ray_address: str
    store: Path
    root: DataRoot
    cohort: Cohort
    tmp: Path


@pytest.fixture
def run(
    local_ray: str,
    experiment_store: Path,
    small_root: DataRoot,
    small_cohort: Cohort,
    tmp_path: Path,
) -> RunSetup:
    return RunSetup(local_ray, experiment_store, small_root, small_cohort, tmp_path)


@contextmanager
def simulator_thread(
    cohort: Cohort, root: DataRoot, cache: Path, spec: SimSpec
) -> Iterator[tuple[str, Simulator]]:
    """A simulator on loopback in a thread of its own, for runs in this or another process."""
    simulator = Simulator(cohort, root.images, VariantCache(cache), spec)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    url: list[str] = []
    stop: list[asyncio.Event] = []

    async def serve() -> None:
        stop.append(asyncio.Event())
        async with serving(simulator) as address:
            url.append(address)
            ready.set()
            await stop[0].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the simulator did not start")
    try:
        yield url[0], simulator
    finally:
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(30)
        loop.close()


def write_experiment(
    path: Path,
    store: Path,
    root: DataRoot,
    backends: dict[str, dict[str, object]],
    configurations: list[dict[str, object]],
    extra: str = "",
    scorers: int = 2,
) -> Path:
    """An experiment file with the given backends and configurations (TOML by hand)."""
    lines = [
        f'store = "{store}"',
        f'images = "{root.images}"',
        "budgets = [8, 16]",
        f"scorers = {scorers}",
        extra,
    ]
    for name, settings in backends.items():
        lines.append(f"[backends.{name}]")
        lines += [f"{k} = {_toml(v)}" for k, v in settings.items()]
    for c in configurations:
        lines.append("[[configurations]]")
        lines += [f"{k} = {_toml(v)}" for k, v in c.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return str(value)


@contextmanager
def ray_head(home: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """A one-node Ray cluster of its own (``ray start --head``) beside any other on the
    machine; yields its address. ``env`` is added to its environment (``RAY_AUTH_MODE=token``
    and a token: a cluster that asks every client for one)."""
    port = free_port()
    # A Ray directory of its own: `ray start` notes its address in <dir>/ray_current_cluster
    # (else /tmp/ray's), where a later ray.init() on this machine (the suite's local Ray) would
    # find it and try to join it. Short, for Ray's socket paths.
    ray_dir = Path(tempfile.mkdtemp(prefix="gb-ray-", dir="/tmp"))
    # Its workers import this checkout, as the suite's do.
    root = str(Path(__file__).resolve().parents[3])
    full = {**os.environ, "HOME": str(home), "PYTHONPATH": root, **(env or {})}
    command = [str(RAY), "start", "--head", f"--port={port}", "--num-cpus=1", "--block"]
    command += ["--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={ray_dir}"]
    head = subprocess.Popen(
        command, env=full, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):  # up to a minute, however slow the machine; counted, not timed
            if _listening(port) or head.poll() is not None:
                break
            time.sleep(0.1)
        assert _listening(port), f"the Ray head never listened on {port}"
        yield f"127.0.0.1:{port}"
    finally:
        # The whole session (gcs, raylet, their workers) at once: a graceful stop waits 30 s.
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(60)
        shutil.rmtree(ray_dir, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
