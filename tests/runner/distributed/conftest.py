"""Ray tests: one local Ray for the session, simulators on loopback, experiment files."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray

from conditions import Cohort, DataRoot, VariantCache, write_cohort
from runner.simulator import SimSpec, Simulator, serving

KEY_ENV = "GB_TEST_KEY"
KEY = "sk-groundbench-test-0123456789abcdef"


@pytest.fixture(scope="session")
def local_ray() -> Iterator[str]:
    """A local Ray for every test that needs one; yields its address for other drivers.

    The key variable is set before Ray starts, so its workers inherit it as a cluster's
    nodes would have it.
    """
    os.environ[KEY_ENV] = KEY
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


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
