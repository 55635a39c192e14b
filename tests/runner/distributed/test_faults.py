"""What only Ray can show: the driver killed with SIGKILL, at 240 and at 6,000 calls a
minute, counted at the server: no more calls reach it after the kill than the backend had in
flight, the rerun pays again for no more than that, no stored answer is lost, and the run ends
with the answers and scores of a fault-free run with the same simulator seed.

A worker's death at every point of a lease, and a scorer's, are the feeder's tests, without Ray
(``test_feeder.py``); an actor restarted on another node is ``test_multinode.py``'s; each fault
the simulator injects is ``test_transport_faults.py``'s.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import duckdb
import pytest
import ray

from conditions import Cohort, DataRoot, write_cohort
from runner._names import NAMESPACE, actor_name, run_tag
from runner.simulator import Faults, SimSpec
from tests.runner.distributed.conftest import KEY_ENV, RunSetup, simulator_thread, write_experiment
from tests.runner.distributed.outcomes import Ledger, Results, results
from tests.runner.distributed.runs import (
    driver_process,
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


@pytest.mark.parametrize("per_minute", [240, 6000])
def test_after_a_driver_kill_no_more_calls_reach_the_server_than_were_in_flight(
    per_minute: int, run: RunSetup, reference: Results
) -> None:
    """At 240/min most of what a worker holds waits for a rate slot; at 6,000/min it is all on
    the wire. Either way, once the driver is killed, the server sees no more calls than the
    worker's concurrency, and the rerun pays again for no more than that. With no pre-flight:
    every call counted is the grid's."""
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
        ledger = Ledger(run.store)
        ledger.keep(stored_after_kill(run.store))
        stored = _stored_calls(run.store)
        # The rerun at full speed: the rate is no part of the protocol, and the kill is over.
        fast = _experiment(run.tmp, run.store, run.root, url)
        assert run_once(fast).complete  # run_experiment makes no pre-flight unless asked
        assert sim.stats.paid_twice <= IN_FLIGHT
        # Paid twice: only calls whose answer no store received (on the wire at the kill, or
        # answered but not yet written). Named, not counted: the server may still be reading
        # a dead worker's last requests when a count would be taken.
        paid = {call.split(":")[1]: n for call, n in sim.stats.paid.items()}
        assert stored <= paid.keys()  # every stored answer was answered by this server
        twice = {call for call, n in paid.items() if n > 1}
        assert not twice & stored, f"answers in the store were paid again: {twice & stored}"
    ledger.check_final(reference)  # the fault-free run's answers and scores, none lost


def _stored_calls(store: Path) -> set[str]:
    """The client request ids (:func:`call_id`) of the answers in ``store``."""
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(
            "SELECT fingerprint, replicate, attempt FROM responses WHERE outcome = 'answer'"
        ).fetchall()
    return {f"gb-{fp[:24]}-r{replicate}-a{attempt}" for fp, replicate, attempt in rows}


def _gone(store: Path) -> bool:
    """No actor of the run's backend is alive. Listed by name, not looked up: looking one up
    loads its class from the killed driver's job, which Ray may be clearing just then."""
    name = actor_name(run_tag(store), "backend-a")
    alive = ray.util.list_named_actors(all_namespaces=True)
    return not any(a["name"] == name and a["namespace"] == NAMESPACE for a in alive)
