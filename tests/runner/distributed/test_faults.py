"""The fault-injection suite: each fault the simulator injects, the driver killed with SIGKILL
at six points of a run, and actor crashes, each set against a fault-free run with the same
simulator seed.

Every scenario asserts that no stored response is lost from one run to the next, that no key
is stored twice, that the calls paid twice stay within what was in flight at the crash (or
within the faults that lost a paid body), and that the final answers and scores are those of
the fault-free run. Runs are few and small (one backend, 90 requests) so the suite stays
within a couple of minutes.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import ray

from conditions import Cohort, DataRoot, write_cohort
from runner._names import NAMESPACE, actor_name, run_tag
from runner.simulator import Faults, SimSpec, Simulator
from tests.runner.distributed.conftest import KEY_ENV, RunSetup, simulator_thread, write_experiment
from tests.runner.distributed.runs import (
    assert_every_key_once,
    driver_process,
    in_background,
    query,
    run_once,
    stored_after_kill,
    until,
)

pytestmark = pytest.mark.slow

SEED = 11
IN_FLIGHT = 8  # the backend's max_concurrency: the most calls a crash can leave unstored
MAX_RUNS = 4  # a scenario's runs until complete (errored calls are resent by the next run)
SLOW = Faults(latency_s=(0.05, 0.15))  # slow enough to be stopped mid-run

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Results:
    """What a run leaves: every answered attempt's text, and every score row."""

    answers: dict[Key, str]
    scores: dict[Key, tuple[Any, ...]]


def _results(store: Path) -> Results:
    key = "(configuration, condition, budget, qid, attempt)"
    answers = query(store, f"SELECT {key}, answer FROM responses WHERE outcome = 'answer'")
    scores = query(store, f"SELECT {key}, scores FROM scores AS scores")
    return Results(dict(answers), {k: tuple(v.values()) for k, v in scores})


def _experiment(tmp: Path, store: Path, root: DataRoot, url: str, **transport: object) -> Path:
    backend = {
        "provider": "qwen", "model": "qwen3-vl-plus", "base_url": url, "api_key_env": KEY_ENV,
        "requests_per_minute": 60000, "max_concurrency": IN_FLIGHT, **transport,
    }  # fmt: skip
    return write_experiment(
        tmp / "exp.toml", store, root, {"a": backend},
        [{"name": "qa", "backend": "a", "conditions": ["base"]}],
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
    results = _results(tmp / "exp.duckdb")
    assert len(results.answers) > 90 and len(results.scores) == len(results.answers)
    return results


class Ledger:
    """What the store held after each run: nothing stored may change or disappear later."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.kept: dict[Key, str] = {}
        self.rows: set[tuple[Any, ...]] = set()  # every attempt row the store ever held

    def keep(self, answers: dict[Key, str]) -> None:
        self.kept |= answers
        self.rows |= set(
            query(
                self.store,
                "SELECT configuration, condition, budget, qid, attempt, started_at, outcome, "
                "transport_retries FROM responses",
            )
        )

    @property
    def tries_given_up(self) -> int:
        """Tries the client gave up on, as its records count them: an answered attempt's
        transport retries, and every try of an attempt that ended in an error (resent when
        the run resumes). Counted by the client, so no clock of this machine decides it."""
        return sum(retries + (outcome != "answer") for *_, outcome, retries in self.rows)

    def check_final(self, reference: Results) -> Results:
        final = _results(self.store)
        lost = {k: a for k, a in self.kept.items() if final.answers.get(k) != a}
        assert not lost, f"stored answers lost or changed: {sorted(lost)[:5]}"
        twice = query(
            self.store,
            "SELECT configuration, condition, budget, qid, attempt FROM responses "
            "GROUP BY ALL HAVING count(*) > 1",
        )
        assert twice == []
        assert_every_key_once(self.store)
        assert final == reference  # attempts, answers and scores: those of the fault-free run
        return final


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
    # The server allows 15 calls/s, one at a time, and says nothing of its limit until it
    # throttles; the client believes it may send 1,000/s.
    "429-storm": Scenario(
        Faults(requests_per_minute=900, burst=1, ratelimit_headers=False, retry_after="ms"),
        injected=("rate-limited",),
    ),
    "quota-exhausted": Scenario(Faults(quota_after=40), top_up=True, injected=("quota",)),
    "5xx-bursts": Scenario(
        Faults(server_error=0.35, overloaded=0.1),
        {"max_transport_retries": 2},
        injected=("server_error", "overloaded"),
    ),
    "slower-than-timeout": Scenario(
        Faults(latency_s=(0.0, 0.4)),
        {"timeout_s": 0.2, "max_transport_retries": 2},
        paid_twice_at_most=_given_up,
    ),
    "connection-resets": Scenario(
        Faults(reset=0.35), {"max_transport_retries": 2}, injected=("reset",)
    ),
    "truncated-and-malformed-bodies": Scenario(
        Faults(truncated=0.2, malformed=0.2),
        {"max_transport_retries": 2},
        injected=("truncated", "malformed"),
        paid_twice_at_most=lambda sim, ledger: (
            sim.stats.faults["truncated"] + sim.stats.faults["malformed"]
        ),
    ),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_fault_costs_nothing_stored_and_ends_with_the_fault_free_results(
    name: str, run: RunSetup, reference: Results
) -> None:
    scenario = SCENARIOS[name]
    spec = SimSpec(seed=SEED, faults=scenario.faults)
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        path = _experiment(run.tmp, run.store, run.root, url, **scenario.transport)
        ledger = Ledger(run.store)
        runs = 0
        while runs < MAX_RUNS:
            runs += 1
            report = run_once(path)
            ledger.keep(_results(run.store).answers)
            if report.complete:
                break
            if scenario.top_up:
                sim.spec = sim.spec.model_copy(update={"faults": Faults()})
        assert report.complete, f"{name}: incomplete after {MAX_RUNS} runs"
        assert all(sim.stats.faults[f] > 0 for f in scenario.injected), sim.stats.faults
        assert sim.stats.paid_twice <= scenario.paid_twice_at_most(sim, ledger)
    ledger.check_final(reference)
    if scenario.top_up:
        assert runs == 2


# -- the driver killed with SIGKILL -----------------------------------------------------------

Point = Callable[[Simulator, int], bool]  # (the simulator, answers a whole run makes)

KILL_POINTS: dict[str, Point] = {
    "first-call-arrives": lambda sim, total: len(sim.stats.admitted_at) >= 1,
    "first-answers": lambda sim, total: sim.stats.answered >= 3,
    "a-third": lambda sim, total: sim.stats.answered >= total // 3,
    "half": lambda sim, total: sim.stats.answered >= total // 2,
    "nine-tenths": lambda sim, total: sim.stats.answered >= total * 9 // 10,
    "every-answer-made": lambda sim, total: sim.stats.answered >= total,  # storing, scoring
}


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_driver_killed_at_any_point_resumes_to_the_fault_free_results(
    point: str, run: RunSetup, reference: Results
) -> None:
    with _slow(run) as (path, sim):
        driver = driver_process(path, run.ray_address, run.tmp)
        reached = KILL_POINTS[point]
        until(lambda: reached(sim, len(reference.answers)) or driver.poll() is not None)
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before {point}:\n{output}"
        ledger = Ledger(run.store)
        ledger.keep(stored_after_kill(run.store))
        assert run_once(path).complete
        assert sim.stats.paid_twice <= IN_FLIGHT
    ledger.check_final(reference)


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


@pytest.mark.parametrize("actor", ["backend", "scorer"])
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
