"""Batch mode on Ray against a simulator on loopback: the answers and scores equal the online
fault-free run's, whatever happens between — the driver SIGKILLed after an upload, after a
batch was created, while it was polled, while its results were read; an expired batch, failed
lines, malformed result lines — and no request is ever in two batches at once or paid twice."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conditions import Cohort, DataRoot, write_cohort
from runner.simulator import BatchFaults, SimSpec, Simulator
from tests.runner.distributed.conftest import KEY_ENV, RunSetup, simulator_thread, write_experiment
from tests.runner.distributed.outcomes import Ledger, Results, results
from tests.runner.distributed.runs import (
    driver_process,
    query,
    run_once,
    stored_after_kill,
    until,
)

pytestmark = pytest.mark.slow

SEED = 23
PRICES = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def _experiment(tmp: Path, store: Path, root: DataRoot, url: str, provider: str) -> Path:
    model = "gemini-3-pro-preview" if provider == "gemini" else "qwen3-vl-plus"
    backend: dict[str, object] = {
        "provider": provider, "model": model, "api_key_env": KEY_ENV, "prices": PRICES,
        "base_url": url + ("/v1beta" if provider == "gemini" else ""),
        "requests_per_minute": 60000, "max_concurrency": 8,
    }  # fmt: skip
    if provider != "online":
        backend |= {"mode": "batch", "batch": {"poll_s": 0.2, "max_poll_s": 0.5,
                                               "max_requests": 40}}  # fmt: skip
    else:
        backend["provider"] = "qwen"
    return write_experiment(
        tmp / "exp.toml", store, root, {"a": backend},
        [{"name": "qa", "backend": "a", "conditions": ["base"]}], scorers=1,
    )  # fmt: skip


@pytest.fixture(scope="module")
def reference(
    local_ray: str, small_cohort: Cohort, small_root: DataRoot, tmp_path_factory: Any
) -> Results:
    """The online fault-free run: what every batch run must end with."""
    tmp = tmp_path_factory.mktemp("reference")
    write_cohort(tmp / "exp.duckdb", small_cohort)
    with simulator_thread(small_cohort, small_root, tmp / "v", SimSpec(seed=SEED)) as (url, _):
        assert run_once(_experiment(tmp, tmp / "exp.duckdb", small_root, url, "online")).complete
    found = results(tmp / "exp.duckdb")
    assert len(found.answers) > 90 and len(found.scores) == len(found.answers)
    return found


def _once_each(sim: Simulator) -> None:
    assert sim.stats.paid_twice == 0
    assert sim.stats.submitted and max(sim.stats.submitted.values()) == 1


@pytest.mark.parametrize("provider", ["qwen", "gemini"])
def test_a_grid_in_batch_mode_scores_exactly_as_online_at_the_batch_price(
    provider: str, run: RunSetup, reference: Results
) -> None:
    spec = SimSpec(seed=SEED, batch=BatchFaults(turnaround_s=0.3))
    lines: list[str] = []
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        report = run_once(_experiment(run.tmp, run.store, run.root, url, provider), lines)
        assert report.complete
        _once_each(sim)
    final = results(run.store)
    # Every attempt once (retries of unparseable answers in later batches), ≤ 40 a batch.
    assert sum(sim.stats.submitted.values()) == len(final.answers)
    assert sim.stats.batches_created >= -(-len(final.answers) // 40)
    if provider == "qwen":  # the same model, so the same answers; Gemini's are its own
        assert final.answers == reference.answers and final.scores == reference.scores
    (backend,) = report.backends
    assert backend.batch is not None and backend.batch.online_cost > 0
    assert backend.spent == pytest.approx(backend.batch.online_cost / 2)
    summary = "\n".join(lines)
    assert "(batch mode)" in summary and "saved (50%)" in summary


# Where the driver dies, told by the simulator's state (the run's own lags behind it).
KILL_POINTS: dict[str, Callable[[Simulator], bool]] = {
    "after-upload": lambda sim: _uploads(sim) > 0,
    "after-create": lambda sim: sim.stats.batches_created >= 1,
    # The first batch is polled while the others of the round are made (turnaround 1.5 s).
    "mid-poll": lambda sim: sim.stats.batches_created >= 2,
    "reading-results": lambda sim: sim.stats.answered >= 1,
}


def _uploads(sim: Simulator) -> int:
    return len(sim.openai_batches._files)


@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_driver_killed_at_any_step_resumes_by_collecting_never_by_sending_again(
    point: str, run: RunSetup, reference: Results
) -> None:
    spec = SimSpec(seed=SEED, batch=BatchFaults(turnaround_s=1.5))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        path = _experiment(run.tmp, run.store, run.root, url, "qwen")
        driver = driver_process(path, run.ray_address, run.tmp)
        until(lambda: KILL_POINTS[point](sim) or driver.poll() is not None)
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before {point}:\n{output}"
        ledger = Ledger(run.store)
        ledger.keep(stored_after_kill(run.store))
        assert run_once(path).complete
        _once_each(sim)
    assert ledger.check_final(reference) == reference  # answers and scores


def test_expiry_failed_lines_and_malformed_results_end_with_the_online_answers(
    run: RunSetup, reference: Results
) -> None:
    faults = BatchFaults(turnaround_s=0.3, expire_first=1, line_error=0.1, malformed_line=0.05)
    lines: list[str] = []
    with simulator_thread(
        run.cohort, run.root, run.tmp / "v", SimSpec(seed=SEED, batch=faults)
    ) as (
        url,
        sim,
    ):
        path = _experiment(run.tmp, run.store, run.root, url, "qwen")
        report = run_once(path, lines)
        if not report.complete:  # lines that failed more often than a run resends them
            report = run_once(path, lines)
        assert report.complete
        # A malformed result line was answered, and paid, but its answer is lost: its request
        # goes again. Nothing else is paid twice.
        unreadable = query(run.store, "SELECT count(*) FROM batch_problems")[0][0]
        assert unreadable > 0 and sim.stats.paid_twice <= unreadable
    assert results(run.store) == reference  # answers and scores
    summary = "\n".join(lines)
    assert "never ran" in summary and "unreadable" in summary


def test_quota_on_submit_stops_the_backend_and_a_later_run_sends_exactly_the_rest(
    run: RunSetup, reference: Results
) -> None:
    spec = SimSpec(seed=SEED, batch=BatchFaults(turnaround_s=0.3, quota_after_batches=1))
    lines: list[str] = []
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        path = _experiment(run.tmp, run.store, run.root, url, "qwen")
        report = run_once(path, lines)
        assert not report.complete and report.backends[0].quota is not None
        assert sim.stats.batches_created == 1
    assert len(results(run.store).answers) == 40
    assert any("quota exhausted" in line for line in lines)
    spec = SimSpec(seed=SEED, batch=BatchFaults(turnaround_s=0.3))
    with simulator_thread(run.cohort, run.root, run.tmp / "v2", spec) as (url, sim):
        assert run_once(_experiment(run.tmp, run.store, run.root, url, "qwen")).complete
        assert sum(sim.stats.submitted.values()) == len(reference.answers) - 40
    assert results(run.store) == reference  # answers and scores
