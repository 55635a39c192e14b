"""Batch mode on Ray against a simulator on loopback: the answers and scores equal the online
fault-free run's, in one run and across a driver SIGKILLed while its batches are polled, and
no request is ever in two batches at once or paid twice.

What happens between — a kill at every step, an expired batch, failed and malformed lines,
quota on create, a refused key, the cap — is the batch runner's, tested without Ray
(``tests/runner/batch/test_runner.py``) and driven by the same feeder as online calls
(``test_feeder.py``).
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conditions import Cohort, DataRoot, write_cohort
from runner.simulator import BatchFaults, SimSpec, Simulator
from runner.store import BatchKey, BatchRecord, Store
from tests.runner.distributed.conftest import (
    KEY,
    KEY_ENV,
    RunSetup,
    simulator_thread,
    write_experiment,
)
from tests.runner.distributed.outcomes import Ledger, Results, results
from tests.runner.distributed.runs import (
    driver_process,
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


def test_a_grid_in_batch_mode_scores_exactly_as_online_at_the_batch_price(
    run: RunSetup, reference: Results
) -> None:
    provider = "qwen"  # Gemini's batch wire: tests/runner/batch, without Ray
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
    assert final.answers == reference.answers and final.scores == reference.scores
    (backend,) = report.backends
    assert backend.batch is not None and backend.batch.online_cost > 0
    assert backend.spent == pytest.approx(backend.batch.online_cost / 2)
    summary = "\n".join(lines)
    assert "(batch mode)" in summary and "saved (50%)" in summary


def test_a_driver_killed_mid_poll_resumes_by_collecting_never_by_sending_again(
    run: RunSetup, reference: Results
) -> None:
    """Killed at every step (after the upload, after the create, mid-poll, reading the
    results), a run resumes by collecting: ``tests/runner/batch/test_runner.py``, without Ray.
    Here, once, the real thing: the first batch is polled while the round's others are made
    (turnaround 1.5 s) when the driver dies."""
    spec = SimSpec(seed=SEED, batch=BatchFaults(turnaround_s=1.5))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        path = _experiment(run.tmp, run.store, run.root, url, "qwen")
        driver = driver_process(path, run.ray_address, run.tmp)
        until(lambda: sim.stats.batches_created >= 2 or driver.poll() is not None)
        driver.send_signal(signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        assert driver.returncode == -signal.SIGKILL, f"the run ended before the kill:\n{output}"
        ledger = Ledger(run.store)
        ledger.keep(stored_after_kill(run.store))
        said: list[str] = []
        assert run_once(path, said).complete, "\n".join(said)
        _once_each(sim)
    assert ledger.check_final(reference) == reference  # answers and scores


@contextmanager
def counting_listener() -> Iterator[tuple[str, list[str]]]:
    """A server on another loopback port that refuses everything (401) and notes each request's
    path and headers: what a run sent it."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path} {dict(self.headers)}")
            body = json.dumps({"error": {"message": "no"}}).encode()
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        thread.join(30)
        server.server_close()


def test_a_run_sends_no_key_to_an_open_batch_the_store_recorded_at_another_address(
    run: RunSetup,
) -> None:
    """A store edited, or received from someone else, names an open batch at another address:
    the run polls it nowhere (its key goes only to base_url), leaves it open, and says so in
    one line; the rest of the grid is answered as ever."""
    spec = SimSpec(seed=SEED, batch=BatchFaults(turnaround_s=0.2))
    qid = run.cohort.questions[0].qid
    with (
        counting_listener() as (evil, seen),
        simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, _),
    ):
        path = _experiment(run.tmp, run.store, run.root, url, "qwen")
        with Store(run.store) as store:
            store.repository.record_batch(
                BatchRecord(
                    id="gb-forged",
                    backend="a",
                    provider="qwen",
                    model="qwen3-vl-plus",
                    base_url=evil,
                    api_key_env=KEY_ENV,
                    phase="submitted",
                    remote_id="batch_forged",
                    requests=1,
                    created_at=datetime.now(UTC),
                ),
                [
                    BatchKey(
                        batch="gb-forged",
                        custom_id="forged-line",
                        configuration="qa",
                        condition="base",
                        budget=8,
                        qid=qid,
                        attempt=0,
                    )
                ],
            )
        lines: list[str] = []
        report = run_once(path, lines)
    assert seen == []  # not one request, with the key or without
    assert report.held == 1 and not report.complete  # its request stays held, never resent
    said = [line for line in lines if "gb-forged" in line]
    assert len(said) == 1, lines
    assert said[0].startswith("  backend a: batch gb-forged (1 request), recorded at another")
    assert f"refused to send the key to {evil}: the backend's base_url is at {url}" in said[0]
    assert KEY not in "\n".join(lines)
