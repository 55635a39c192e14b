"""A run's pre-flight (issue 38): its calls are requests of the grid, made as their attempts,
stored once and never sent again, counted among the HTTP calls the run sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from conditions import DataRoot
from runner.distributed import RunOptions
from runner.preflight import PROBES_PER_DECODING
from runner.simulator import SimSpec
from tests.runner.distributed.conftest import (
    KEY,
    KEY_ENV,
    RunSetup,
    simulator_thread,
    write_experiment,
)
from tests.runner.distributed.runs import assert_every_key_once, query, run_once


def _experiment(tmp: Path, store: Path, root: DataRoot, url: str) -> Path:
    backend = {
        "provider": "qwen", "model": "qwen3-vl-plus", "base_url": url, "api_key_env": KEY_ENV,
        "requests_per_minute": 60000, "max_concurrency": 4,
    }  # fmt: skip
    return write_experiment(
        tmp / "exp.toml", store, root, {"a": backend},
        [{"name": "qa", "backend": "a", "conditions": ["base", "thinking-off"]}], scorers=1,
    )  # fmt: skip


def test_the_pre_flights_calls_are_stored_as_the_grids_and_counted_as_sent(
    run: RunSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    lines: list[str] = []
    with simulator_thread(run.cohort, run.root, run.tmp / "v", SimSpec(seed=5)) as (url, sim):
        path = _experiment(run.tmp, run.store, run.root, url)
        report = run_once(path, lines, RunOptions(preflight=True, progress_every_s=0.5))
    assert report.complete
    # One line for the configuration's calls: both decodings', each six requests of the grid.
    (ok,) = [line for line in lines if line.startswith("pre-flight: ok")]
    calls = 2 * PROBES_PER_DECODING
    assert ok.startswith(f"pre-flight: ok      qa (a): {calls} calls, 2 decodings, ")
    # Every answer the server made is in the store, once: none was made for the pre-flight
    # alone, and none again by the grid.
    (answers,) = query(run.store, "SELECT count(*) FROM responses WHERE outcome = 'answer'")[0]
    assert sim.stats.answered == answers and sim.stats.paid_twice == 0
    assert_every_key_once(run.store)
    # The summary counts every call the server received, the pre-flight's included.
    received = sum(sim.stats.statuses.values())
    assert report.tally.http_calls == received
    summary = [line for line in lines if line.startswith("run ended after")]
    assert len(summary) == 1 and f" {received:,} HTTP calls sent" in summary[0]
    # ... and so does the live view's last frame, for the backend that made them.
    frames = [line for line in lines if line.lstrip().startswith("a:")]
    assert frames and f"; {received:,} HTTP calls sent" in frames[-1]
