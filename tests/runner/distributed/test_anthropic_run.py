"""Whole runs with an ``anthropic`` backend against the simulator (its Messages wire and its
Message Batches on loopback), as the other providers' in test_run.py, test_faults.py and
test_batch_run.py. Online: spent credit stops it and a rerun sends exactly the missing keys; a
wrong key stops it in one line; a driver killed mid-run is resumed paying again for no more than
its calls in flight. In batch mode: a driver killed while its batches run is resumed by
collecting them, nothing paid twice; spent credit on create stops it and a rerun sends the rest,
each key in one batch, at half the online price; a wrong key stops it in one line."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from runner.simulator import BatchFaults, Behaviour, Faults, SimSpec, Simulator
from tests.runner.distributed.conftest import (
    KEY,
    KEY_ENV,
    RunSetup,
    simulator_thread,
    write_experiment,
)
from tests.runner.distributed.runs import (
    assert_every_key_once,
    driver_process,
    run_once,
    stored_after_kill,
    until,
)

pytestmark = pytest.mark.slow

IN_FLIGHT = 8  # the backend's max_concurrency: the most calls a kill can leave unstored
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # one attempt per request
CLAUDE = {
    "provider": "anthropic",
    "model": "claude-sonnet-4-6",
    "api_key_env": KEY_ENV,
    "requests_per_minute": 60000,
    "max_concurrency": IN_FLIGHT,
}
# Extended thinking takes a budget (no effort level), below max_output_tokens.
THINKING = {"thinking": {"mode": "on", "budget_tokens": 2048}, "max_output_tokens": 8192}


# Batch mode: small batches polled often, priced so the batch rate shows.
BATCH = {"mode": "batch", "batch": {"poll_s": 0.2, "max_poll_s": 0.5, "max_requests": 40},
         "prices": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}  # fmt: skip


def _experiment(run: RunSetup, url: str, *, batch: bool = False) -> Path:
    backend = {**CLAUDE, "base_url": url} | (BATCH if batch else {})
    return write_experiment(
        run.tmp / "exp.toml", run.store, run.root, {"claude": backend},
        [{"name": "claude-thinking", "backend": "claude", "decoding": THINKING}],
    )  # fmt: skip


def _in_one_batch_each(*sims: Simulator) -> None:
    """No request was in two batches, and none was paid for twice."""
    submitted = sum((sim.stats.submitted for sim in sims), start=Counter[str]())
    assert submitted and max(submitted.values()) == 1
    assert all(sim.stats.paid_twice == 0 for sim in sims)


def test_spent_credit_stops_an_anthropic_backend_and_a_rerun_sends_exactly_the_rest(
    run: RunSetup,
) -> None:
    spent = SimSpec(behaviour=CLEAN, faults=Faults(quota_after=25))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spent) as (url, sim):
        lines: list[str] = []
        first = run_once(_experiment(run, url), lines)
    assert not first.complete
    stop = first.backends[0].stop
    assert stop is not None and stop.kind == "quota"
    assert first.progress[0].complete == 25 == sim.stats.answered
    missing = first.progress[0].pending
    assert missing > 0

    clean = SimSpec(behaviour=CLEAN)
    with simulator_thread(run.cohort, run.root, run.tmp / "v", clean) as (url, sim):
        second = run_once(_experiment(run, url))
    assert second.complete
    assert sum(sim.stats.statuses.values()) == missing  # exactly the missing keys, once each
    assert_every_key_once(run.store)


def test_a_wrong_key_stops_an_anthropic_backend_and_the_run_says_why(run: RunSetup) -> None:
    refusing = SimSpec(behaviour=CLEAN, api_key="sk-ant-another-key-0123456789")
    with simulator_thread(run.cohort, run.root, run.tmp / "v", refusing) as (url, sim):
        lines: list[str] = []
        report = run_once(_experiment(run, url), lines)
    sent = sim.stats.statuses[401]
    assert 1 <= sent <= 8 and sum(sim.stats.statuses.values()) == sent  # only those in flight
    stop = report.backends[0].stop
    assert not report.complete and stop is not None and stop.kind == "refused"
    assert any("backend claude: stopped, no call of it can succeed" in line for line in lines)
    (error,) = report.errors
    assert (error.kind, error.status) == ("fatal", 401)


def test_a_killed_anthropic_run_resumes_paying_again_for_no_more_than_was_in_flight(
    run: RunSetup,
) -> None:
    slow = SimSpec(behaviour=CLEAN, faults=Faults(latency_s=(0.05, 0.15)))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", slow) as (url, sim):
        path = _experiment(run, url)
        driver = driver_process(path, run.ray_address, run.tmp, "--no-check")
        until(lambda: sim.stats.answered >= 6 or driver.poll() is not None)
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before the kill:\n{output}"
        assert len(stored_after_kill(run.store)) >= 1
        assert run_once(path).complete
        # Every call was told apart by its request id: the count of those paid twice is real.
        assert len(sim.stats.paid) >= sim.stats.answered - IN_FLIGHT > 0
        assert sim.stats.paid_twice <= IN_FLIGHT
    assert_every_key_once(run.store)


# -- batch mode: the Message Batches API -----------------------------------------------------------


def test_a_killed_anthropic_batch_run_is_resumed_by_collecting_never_by_sending_again(
    run: RunSetup,
) -> None:
    spec = SimSpec(behaviour=CLEAN, batch=BatchFaults(turnaround_s=1.5))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        path = _experiment(run, url, batch=True)
        driver = driver_process(path, run.ray_address, run.tmp, "--no-check")
        until(lambda: sim.stats.batches_created >= 2 or driver.poll() is not None)
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before the kill:\n{output}"
        made_before = sim.stats.batches_created
        stored_after_kill(run.store)  # once the killed run's store actor let the file go
        said: list[str] = []
        assert run_once(path, said).complete, "\n".join(said)
        _in_one_batch_each(sim)
    assert made_before >= 2
    assert_every_key_once(run.store)


def test_spent_credit_stops_an_anthropic_batch_backend_and_a_rerun_sends_the_rest_at_half_price(
    run: RunSetup,
) -> None:
    spent = SimSpec(behaviour=CLEAN, batch=BatchFaults(turnaround_s=0.2, quota_after_batches=1))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spent) as (url, first_sim):
        first = run_once(_experiment(run, url, batch=True))
    stop = first.backends[0].stop
    assert not first.complete and stop is not None and stop.kind == "quota"
    assert first_sim.stats.batches_created == 1 and first.progress[0].complete > 0
    # The rest of the grid, answered once at the batch price (half the online one).
    clean = SimSpec(behaviour=CLEAN, batch=BatchFaults(turnaround_s=0.2))
    lines: list[str] = []
    with simulator_thread(run.cohort, run.root, run.tmp / "v", clean) as (url, sim):
        report = run_once(_experiment(run, url, batch=True), lines)
    assert report.complete, "\n".join(lines)
    _in_one_batch_each(first_sim, sim)
    assert sum(sim.stats.statuses.values()) > 0 and set(sim.stats.statuses) == {200}
    (backend,) = report.backends
    assert backend.batch is not None and backend.batch.online_cost > 0
    assert backend.spent == pytest.approx(backend.batch.online_cost / 2)
    assert "saved (50%)" in "\n".join(lines)
    assert_every_key_once(run.store)


def test_a_wrong_key_stops_an_anthropic_batch_backend_in_one_line(run: RunSetup) -> None:
    refusing = SimSpec(behaviour=CLEAN, api_key="sk-ant-another-key-0123456789")
    with simulator_thread(run.cohort, run.root, run.tmp / "v", refusing) as (url, sim):
        lines: list[str] = []
        report = run_once(_experiment(run, url, batch=True), lines)
    stop = report.backends[0].stop
    assert not report.complete and stop is not None and stop.kind == "refused"
    assert sim.stats.batches_created == 0 and set(sim.stats.statuses) <= {401}
    said = [line for line in lines if "backend claude: stopped" in line]
    assert len(said) == 1, lines
    assert KEY not in "\n".join(lines)
