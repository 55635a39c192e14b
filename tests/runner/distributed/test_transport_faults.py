"""Each fault the simulator injects, run without Ray and set against a fault-free run with the
same simulator seed: no stored response is lost from one run to the next, no key is stored
twice, the calls paid twice stay within the faults that lost a paid body (counted by the
client, not timed), and the final answers and scores are those of the fault-free run.

The runs are the driver's parts in this process (:mod:`tests.runner.distributed.local`): the
feeder, a real worker, a real store, the scorer. What Ray adds — a driver killed, an actor
crashed — is ``test_faults.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    Configuration,
    DataRoot,
    Transport,
    write_cohort,
)
from runner.simulator import Faults, SimSpec, Simulator
from runner.store import read_only
from tests.runner.distributed.conftest import KEY, simulator_thread
from tests.runner.distributed.local import run_here
from tests.runner.distributed.outcomes import Ledger, Results, results

SEED = 11
IN_FLIGHT = 8  # the backend's max_concurrency
# A scenario's runs until complete: an attempt that errored goes again only in the next run, and
# under a busy machine's timeouts about one attempt in eight errs a run (counted, not timed).
MAX_RUNS = 8
QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")
# Retries after a fault the server names no wait for: how soon is not what these scenarios
# test (what is paid, kept and scored is), so they back off on a 20 ms scale, not 0.5 s.
QUICK = {"retry_backoff_s": 0.02}


def _configuration(url: str, **transport: Any) -> Configuration:
    settings = Transport(
        base_url=url, requests_per_minute=60000, max_concurrency=IN_FLIGHT, **transport
    )
    return QWEN.model_copy(
        update={"name": "qa", "conditions": ("base",), "best_effort": False, "transport": settings}
    )


@dataclass(frozen=True)
class Place:
    """A fresh store holding the small cohort, and what a run of it needs."""

    store: Path
    cohort: Cohort
    root: DataRoot
    cache: Path

    def completes(self, url: str, **transport: Any) -> bool:
        """Run the grid here at ``url``; whether it completed."""
        configuration = _configuration(url, **transport)
        return run_here(self.store, self.cohort, self.root.images, self.cache, configuration, KEY)


def _place(tmp: Path, cohort: Cohort, root: DataRoot) -> Place:
    write_cohort(tmp / "exp.duckdb", cohort)
    return Place(tmp / "exp.duckdb", cohort, root, tmp / "v")


@pytest.fixture(scope="module")
def reference(small_cohort: Cohort, small_root: DataRoot, tmp_path_factory: Any) -> Results:
    """The fault-free run: the results every scenario must end with."""
    place = _place(tmp_path_factory.mktemp("reference"), small_cohort, small_root)
    with simulator_thread(small_cohort, small_root, place.cache, SimSpec(seed=SEED)) as (url, sim):
        assert place.completes(url)
        assert sim.stats.paid_twice == 0 and not sim.stats.faults
    found = results(place.store)
    assert len(found.answers) > 90 and len(found.scores) == len(found.answers)
    return found


@dataclass(frozen=True)
class Scenario:
    faults: Faults
    transport: dict[str, object] = field(default_factory=dict)
    top_up: bool = False  # the account is topped up after the first run
    injected: tuple[str, ...] = ()  # the simulator's fault counters that must be non-zero
    # The calls that may be paid twice: a body the client could not read was paid for.
    paid_twice_at_most: Callable[[Simulator, Ledger], int] = lambda sim, ledger: 0


def _given_up(sim: Simulator, ledger: Ledger) -> int:
    # A call is paid again only after the client gave up on a try the server still answered.
    # The server's latency draws do not bound that on a busy machine (a starved client gives
    # up on a call the server answered just in time), so the client's own count does.
    return ledger.tries_given_up


SCENARIOS = {
    # The server allows 30 calls/s, one at a time, and says nothing of its limit until it
    # throttles; the client believes it may send 1,000/s.
    "429-storm": Scenario(
        Faults(requests_per_minute=1800, burst=1, ratelimit_headers=False, retry_after="ms"),
        injected=("rate-limited",),
    ),
    "quota-exhausted": Scenario(Faults(quota_after=40), top_up=True, injected=("quota",)),
    "5xx-bursts": Scenario(
        Faults(server_error=0.35, overloaded=0.1),
        {"max_transport_retries": 2, **QUICK},
        injected=("server_error", "overloaded"),
    ),
    "slower-than-timeout": Scenario(
        Faults(latency_s=(0.0, 0.4)),
        {"timeout_s": 0.2, "max_transport_retries": 2, **QUICK},
        paid_twice_at_most=_given_up,
    ),
    "connection-resets": Scenario(
        Faults(reset=0.35), {"max_transport_retries": 2, **QUICK}, injected=("reset",)
    ),
    "truncated-and-malformed-bodies": Scenario(
        Faults(truncated=0.2, malformed=0.2),
        {"max_transport_retries": 2, **QUICK},
        injected=("truncated", "malformed"),
        paid_twice_at_most=lambda sim, ledger: (
            sim.stats.faults["truncated"] + sim.stats.faults["malformed"]
        ),
    ),
    # Issue 37: 1 MB of "[" raised RecursionError out of the decoder and ended the run. No
    # retry within the attempt: each such body is that attempt's stored error, sent next run.
    "bodies-nested-too-deep": Scenario(
        Faults(deep=0.2),
        {"max_transport_retries": 0},
        injected=("deep",),
        paid_twice_at_most=lambda sim, ledger: sim.stats.faults["deep"],
    ),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_fault_costs_nothing_stored_and_ends_with_the_fault_free_results(
    name: str,
    small_cohort: Cohort,
    small_root: DataRoot,
    tmp_path: Path,
    reference: Results,
) -> None:
    scenario = SCENARIOS[name]
    place = _place(tmp_path, small_cohort, small_root)
    spec = SimSpec(seed=SEED, faults=scenario.faults)
    with simulator_thread(small_cohort, small_root, place.cache, spec) as (url, sim):
        ledger = Ledger(place.store)
        runs = complete = 0
        while runs < MAX_RUNS and not complete:
            runs += 1
            complete = place.completes(url, **scenario.transport)
            ledger.keep(results(place.store).answers)
            if scenario.top_up:
                sim.spec = sim.spec.model_copy(update={"faults": Faults()})
        assert complete, f"{name}: incomplete after {MAX_RUNS} runs"
        assert all(sim.stats.faults[f] > 0 for f in scenario.injected), sim.stats.faults
        assert sim.stats.paid_twice <= scenario.paid_twice_at_most(sim, ledger)
    ledger.check_final(reference)
    if scenario.top_up:
        assert runs == 2


def test_a_body_nested_too_deep_is_its_attempts_stored_error_and_the_run_goes_on(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    # Issue 37, finding 1, through the driver's parts and a real worker: before, the first such
    # body raised RecursionError out of the decoder and the run ended there.
    place = _place(tmp_path, small_cohort, small_root)
    spec = SimSpec(seed=SEED, faults=Faults(deep=0.2))
    with simulator_thread(small_cohort, small_root, place.cache, spec) as (url, sim):
        place.completes(url, max_transport_retries=0)
        deep = sim.stats.faults["deep"]
    with read_only(place.store) as con:
        errors = con.execute(
            "SELECT outcome, error_message FROM responses WHERE error_message LIKE '%nested%'"
        ).fetchall()
        answered = con.execute("SELECT count(*) FROM responses WHERE outcome = 'answer'")
        answers = (answered.fetchone() or (0,))[0]
    assert deep > 0 and len(errors) == deep and answers > 50
    for outcome, message in errors:
        assert outcome == "transient" and "nested deeper than 64" in message and "\n" not in message
