"""The actor classes as plain objects: what a caller sees around a run's start and end."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from conditions import PAPER_CONFIGURATIONS, Cohort, Configuration, DataRoot, Transport
from runner._errors import ConfigError
from runner.batch import BatchSettings
from runner.distributed._actors import BackendActor, BatchBackendActor
from runner.distributed._batch_worker import BatchSpec
from runner.distributed._store_actor import StoreActor, StoreClosed
from runner.distributed._worker import BackendSetup


def test_a_store_actor_serves_only_while_open(tmp_path: Path) -> None:
    actor = StoreActor(tmp_path / "exp.duckdb")
    with pytest.raises(StoreClosed, match="closed"):
        actor.progress()  # not opened yet
    actor.open()
    assert actor.progress() == []
    assert actor.query("SELECT 1 AS one", 30.0, "t") == (["one"], [(1,)])
    assert not actor.cancel("t")  # it ended: nothing to stop
    actor.close()
    with pytest.raises(StoreClosed):  # a watcher asking as the run ends is told it has
        actor.cells()


def test_an_actors_process_imports_none_of_the_drivers_modules() -> None:
    """Every actor's Ray process imports ``_actors`` (and so its package) before the run's first
    call can go: the driver's modules — the pre-flight, the grid, the spending cap, the live
    view, the simulator's server — would cost each of them CPU the first call waits for."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, runner.distributed._actors; print(*sys.modules)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    drivers = {
        "runner.preflight", "runner.plan", "runner.distributed._driver",
        "runner.distributed._spend", "runner.monitor", "runner.simulator._server", "rich",
    }  # fmt: skip
    assert drivers.isdisjoint(loaded), drivers.intersection(loaded)


# A key, and a model name holding 12 of its characters: a backend refuses a model that would
# write a piece of its key into every record and log line.
SHARED_KEY = "gb-0f3c9e2a7b414d8e9a6f"
QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")


def _refused(variable: str) -> Configuration:
    transport = Transport(base_url="http://127.0.0.1:9/v1", api_key_env=variable)
    return QWEN.model_copy(
        update={"model": "qwen-0f3c9e2a7b41", "conditions": ("base",), "transport": transport}
    )


def _setup(configuration: Configuration, root: DataRoot, tmp_path: Path) -> BackendSetup:
    """``configuration`` alone on its backend: its transport is the backend's."""
    return BackendSetup(configuration.transport, (configuration,), root.images, tmp_path / "v")


def test_a_backend_actor_that_cannot_make_its_backend_says_why_at_every_call(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Raised in __init__, Ray gave the driver an ActorDiedError with the traceback as text and
    # printed it again; kept, the driver's first call (shape) gets the error itself.
    monkeypatch.setenv("GB_SHARED_KEY", SHARED_KEY)
    actor = BackendActor(_setup(_refused("GB_SHARED_KEY"), small_root, tmp_path), small_cohort,
                         None, None)  # fmt: skip
    with pytest.raises(ConfigError, match=f"^configuration {QWEN.name}: its model holds"):
        actor.shape()
    with pytest.raises(ConfigError, match="its model holds an API key"):
        asyncio.run(actor.lease([]))
    with pytest.raises(ConfigError, match="its model holds an API key"):
        actor.stats()


def test_a_batch_actor_without_its_key_on_its_node_says_so_at_every_call(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GB_UNSET_ON_THIS_NODE", raising=False)
    spec = BatchSpec("qwen", BatchSettings(), tmp_path / "spool", simulated=False)
    setup = _setup(_refused("GB_UNSET_ON_THIS_NODE"), small_root, tmp_path)
    actor = BatchBackendActor(setup, small_cohort, None, None, spec)
    with pytest.raises(ConfigError, match="GB_UNSET_ON_THIS_NODE is not set"):
        actor.shape()
    with pytest.raises(ConfigError, match="GB_UNSET_ON_THIS_NODE is not set"):
        actor.report()
