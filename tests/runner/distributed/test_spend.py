"""A smoke run (``--limit``) and a capped run (``--max-spend``) each stop short of the grid, and
a plain run then completes it with no call paid twice."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from runner._port import online_shape
from runner.distributed import RunOptions
from runner.distributed._spend import INPUT_MARGIN
from runner.experiment import load_experiment
from runner.plan import prepare
from runner.preflight import preflight_report
from runner.simulator import SimSpec, Simulator
from tests.runner.distributed.conftest import (
    KEY_ENV,
    RunSetup,
    simulator_thread,
    write_experiment,
)
from tests.runner.distributed.runs import assert_every_key_once, query, run_once
from tests.runner.distributed.test_worker import CLEAN  # one attempt per request

pytestmark = pytest.mark.slow

# Input only: the simulator's input tokens are counted as the estimate counts them, so the
# cap's prior is near the truth.
PRICES = {"input_per_mtok": 10.0, "output_per_mtok": 0.0}
CONCURRENCY = 8


@contextmanager
def _grid(run: RunSetup) -> Iterator[tuple[Path, Simulator]]:
    """The experiment at a simulator of its own, and that simulator."""
    with simulator_thread(run.cohort, run.root, run.tmp / "c", SimSpec(behaviour=CLEAN)) as (
        url,
        sim,
    ):
        yield _experiment(run, url), sim


def _experiment(run: RunSetup, url: str) -> Path:
    backend = {
        "provider": "qwen",
        "model": "qwen3-vl-plus",
        "base_url": url,
        "api_key_env": KEY_ENV,
        "requests_per_minute": 60000,
        "max_concurrency": CONCURRENCY,
        "prices": PRICES,
    }
    return write_experiment(
        run.tmp / "exp.toml",
        run.store,
        run.root,
        {"qwen": backend},
        [{"name": "qwen-max", "backend": "qwen", "conditions": ["base", "no-image"]}],
    )


def test_a_limited_run_asks_the_first_questions_of_every_cell_and_a_full_run_the_rest(
    run: RunSetup,
) -> None:
    with _grid(run) as (path, sim):
        lines: list[str] = []
        smoke = run_once(path, lines, RunOptions(limit=2, progress_every_s=0.5))
        assert smoke.done and not smoke.complete and smoke.limited_left == 0
        assert any("--limit 2: the first 2 questions of every cell" in line for line in lines)
        asked = query(
            run.store,
            "SELECT condition, budget, list(qid ORDER BY qid) FROM responses GROUP BY ALL",
        )
        order = [q.qid for q in run.cohort.questions]
        cells = query(run.store, "SELECT condition, budget, list(qid) FROM grid GROUP BY ALL")
        assert len(asked) == len(cells)
        for condition, budget, qids in cells:
            first = sorted(sorted(qids, key=order.index)[:2])
            assert (condition, budget, first) in asked
        # Issue 39: the live view's totals are the limit's requests, not the grid's.
        limited = 2 * len(cells)
        shown = [line for line in lines if "requests complete (" in line]
        assert shown and all(f"/{limited:,} requests complete" in line for line in shown)
        assert f"{limited:,}/{limited:,} requests complete (100.0%)" in shown[-1]
        assert any(f"{limited:,}/{limited:,} of their requests complete, 0 left" in line
                   for line in lines)  # fmt: skip
        full = run_once(path, [], RunOptions(progress_every_s=0.5))
        finished = full.progress[0].requests - 2 * len(cells)
        assert full.complete and full.tally.finished == finished
        # One attempt per request (CLEAN), and one call per attempt: nothing sent twice.
        assert sum(sim.stats.statuses.values()) == full.progress[0].requests
    assert_every_key_once(run.store)


def test_a_capped_run_stops_at_the_cap_and_a_rerun_completes_paying_nothing_twice(
    run: RunSetup,
) -> None:
    with _grid(run) as (path, sim):
        experiment = load_experiment(path)
        estimate = asyncio.run(preflight_report(prepare(experiment), call=False))
        (cost,) = estimate.costs
        cap = cost.per_call * cost.requests / 3  # about a third of the grid
        lines: list[str] = []
        capped = run_once(path, lines, RunOptions(max_spend=cap, progress_every_s=0.5))
        stop = capped.backends[0].stop
        assert not capped.done and stop is not None and stop.kind == "capped"
        assert any(line.startswith("spending cap reached") for line in lines)
        assert any("stopped at the spending cap" in line for line in lines)
        # Never past the cap; short of it by at most the worst case of the calls the backend
        # holds (each at INPUT_MARGIN times the estimated input, no output at these prices).
        held = online_shape(CONCURRENCY).holds * INPUT_MARGIN * cost.per_call
        assert cap - held <= capped.spent <= cap
        assert capped.spent == pytest.approx(capped.spent_total)  # the store agrees
        full = run_once(path, [], RunOptions(progress_every_s=0.5))
        assert full.complete
        assert sum(sim.stats.statuses.values()) == full.progress[0].requests
        assert full.spent_total == pytest.approx(capped.spent + full.spent)
    assert_every_key_once(run.store)
