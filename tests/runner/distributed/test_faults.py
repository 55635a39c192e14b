"""What only Ray can show: the driver killed with SIGKILL, and a backend actor's crash, each set
against a fault-free run with the same simulator seed; what reaches the server after a kill.
(Each fault the simulator injects is ``test_transport_faults.py``'s, run without Ray.)

Every scenario asserts that no stored response is lost from one run to the next, that no key
is stored twice, that the calls paid twice stay within what was in flight at the crash, and
that the final answers and scores are those of the fault-free run. Runs are few and small (one
backend, 90 requests).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import ray

from conditions import Cohort, DataRoot, write_cohort
from runner._names import NAMESPACE, actor_name, run_tag
from runner.distributed._ray import named_actor
from runner.simulator import Faults, SimSpec, Simulator
from tests.runner.distributed.conftest import KEY_ENV, RunSetup, simulator_thread, write_experiment
from tests.runner.distributed.outcomes import Ledger, Results, results
from tests.runner.distributed.runs import (
    driver_process,
    in_background,
    run_once,
    stored_after_kill,
    until,
)

pytestmark = pytest.mark.slow

SEED = 11
IN_FLIGHT = 8  # the backend's max_concurrency: the most calls a crash can leave unstored
SLOW = Faults(latency_s=(0.05, 0.15))  # slow enough to be stopped mid-run


def _experiment(tmp: Path, store: Path, root: DataRoot, url: str, **transport: object) -> Path:
    backend = {
        "provider": "qwen", "model": "qwen3-vl-plus", "base_url": url, "api_key_env": KEY_ENV,
        "requests_per_minute": 60000, "max_concurrency": IN_FLIGHT, **transport,
    }  # fmt: skip
    return write_experiment(
        tmp / "exp.toml", store, root, {"a": backend},
        [{"name": "qa", "backend": "a", "conditions": ["base"]}], scorers=1,
    )  # fmt: skip


@pytest.fixture(scope="module")
def reference(
    local_ray: str, small_cohort: Cohort, small_root: DataRoot, tmp_path_factory: Any
) -> Results:
    """The fault-free run: the results every scenario must end with."""
    tmp = tmp_path_factory.mktemp("reference")
    write_cohort(tmp / "exp.duckdb", small_cohort)
    spec = SimSpec(seed=SEED)
    with simulator_thread(small_cohort, small_root, tmp / "v", spec) as (url, sim):
        path = _experiment(tmp, tmp / "exp.duckdb", small_root, url)
        assert run_once(path).complete
        assert sim.stats.paid_twice == 0 and not sim.stats.faults
    found = results(tmp / "exp.duckdb")
    assert len(found.answers) > 90 and len(found.scores) == len(found.answers)
    return found


# -- the driver killed with SIGKILL -----------------------------------------------------------
# Killed at any point of a lease, a worker loses no stored answer and pays at most its calls in
# flight again: the feeder's tests show it at every point without Ray (test_feeder.py). Here,
# once, the real thing; and what reaches the server after the kill, counted at the server.


def test_a_driver_killed_mid_run_resumes_to_the_fault_free_results(
    run: RunSetup, reference: Results
) -> None:
    with _slow(run) as (path, sim):
        driver = driver_process(path, run.ray_address, run.tmp)
        until(
            lambda: sim.stats.answered >= len(reference.answers) // 3 or driver.poll() is not None
        )
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before the kill:\n{output}"
        ledger = Ledger(run.store)
        ledger.keep(stored_after_kill(run.store))
        assert run_once(path).complete
        assert sim.stats.paid_twice <= IN_FLIGHT
    ledger.check_final(reference)


@pytest.mark.parametrize("per_minute", [240, 6000])
def test_after_a_driver_kill_no_more_calls_reach_the_server_than_were_in_flight(
    per_minute: int, run: RunSetup
) -> None:
    """At 240/min most of what a worker holds waits for a rate slot; at 6,000/min it is all on
    the wire. Either way, once the driver is killed, the server sees no more calls than the
    worker's concurrency, and the rerun pays again for no more than that. With no pre-flight:
    its call is a request of the grid that the grid asks again (issue 38), not a call lost to
    the kill."""
    spec = SimSpec(seed=SEED, faults=SLOW)
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        path = _experiment(run.tmp, run.store, run.root, url, requests_per_minute=per_minute)
        driver = driver_process(path, run.ray_address, run.tmp, "--no-check")
        until(lambda: sim.stats.answered >= 6 or driver.poll() is not None)
        driver.send_signal(signal.SIGKILL)
        reached = len(sim.stats.admitted_at)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before the kill:\n{output}"
        until(lambda: _gone(run.store))  # no actor of the run is left to send anything
        late = len(sim.stats.admitted_at) - reached
        assert late <= IN_FLIGHT, f"{late} calls reached the server after the kill"
        stored = len(stored_after_kill(run.store))
        assert run_once(path).complete  # run_experiment makes no pre-flight unless asked
        assert sim.stats.paid_twice <= IN_FLIGHT
        # Paid twice: only calls that reached the server and whose answer no store received
        # (on the wire at the kill, answered but not yet written, or sent after it).
        assert sim.stats.paid_twice <= reached + late - stored


def _gone(store: Path) -> bool:
    return named_actor(actor_name(run_tag(store), "backend-a")) is None


# -- actor crashes ----------------------------------------------------------------------------


def _backend(store: Path) -> Any:
    return ray.get_actor(actor_name(run_tag(store), "backend-a"), namespace=NAMESPACE)


def _a_scorer(store: Path) -> Any:
    prefix = actor_name(run_tag(store), "scorer-")
    names = [
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["namespace"] == NAMESPACE and a["name"].startswith(prefix)
    ]
    assert names, "no scoring actor found"
    return ray.get_actor(names[0], namespace=NAMESPACE)


@pytest.mark.parametrize("actor", ["backend"])  # a dead scorer: test_feeder.py, without Ray
def test_an_actor_crash_mid_run_is_survived_with_the_fault_free_results(
    actor: str, run: RunSetup, reference: Results
) -> None:
    with _slow(run) as (path, sim), in_background(path) as result:
        until(lambda: sim.stats.answered >= len(reference.answers) // 3)
        victim = _backend(run.store) if actor == "backend" else _a_scorer(run.store)
        ray.kill(victim, no_restart=True)
    (report,) = result
    assert report.complete and report.unscored == 0
    assert report.backends[0].restarts == (actor == "backend")
    assert sim.stats.paid_twice <= (IN_FLIGHT if actor == "backend" else 0)
    Ledger(run.store).check_final(reference)


@contextmanager
def _slow(run: RunSetup) -> Iterator[tuple[Path, Simulator]]:
    spec = SimSpec(seed=SEED, faults=SLOW)
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        yield _experiment(run.tmp, run.store, run.root, url), sim
