"""``groundbench check`` against the simulator on loopback: a good key proves every decoding,
a wrong key and an unknown model fail with what to do, and the estimates follow from the
measured tokens, the prices and the limits. No Ray."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conditions import Cohort, DataRoot, task_of, write_cohort
from runner.backends import Account
from runner.calls_note import read_calls, write_calls
from runner.check import CheckReport, OverCap, check, check_lines
from runner.cli import app
from runner.distributed import RunOptions
from runner.distributed._prepare import prepared
from runner.estimate import input_bound
from runner.experiment import load_experiment
from runner.plan import first_questions, grid_of, prepare
from runner.simulator import SimSpec
from runner.store import Progress, read_only
from tests.runner.distributed.conftest import KEY, KEY_ENV, simulator_thread, write_experiment

PRICES = {"input_per_mtok": 2.0, "output_per_mtok": 10.0}


@pytest.fixture
def key() -> Iterator[None]:
    old = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = KEY
    yield
    if old is None:
        del os.environ[KEY_ENV]
    else:
        os.environ[KEY_ENV] = old


def _experiment(
    tmp: Path, store: Path, root: DataRoot, url: str, model: str = "qwen3-vl-plus"
) -> Path:
    backend = {
        "provider": "qwen",
        "model": model,
        "base_url": url,
        "api_key_env": KEY_ENV,
        "requests_per_minute": 120,
        "max_concurrency": 4,
        "prices": PRICES,
    }
    conditions = ["base", "no-image", "thinking-off", "temperature"]
    return write_experiment(
        tmp / "exp.toml",
        store,
        root,
        {"qwen": backend},
        [{"name": "qwen-max", "backend": "qwen", "conditions": conditions}],
    )


def _check(path: Path, stored: list[Progress] | None = None) -> CheckReport:
    experiment = load_experiment(path)
    return asyncio.run(check(experiment, prepare(experiment), stored or []))


@pytest.fixture
def store(tmp_path: Path, small_cohort: Cohort) -> Path:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    return path


def test_a_good_key_proves_each_decoding_once_and_estimates_from_the_measured_tokens(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec(api_key=KEY)) as (
        url,
        sim,
    ):
        path = _experiment(tmp_path, store, small_root, url)
        report = _check(path)
    experiment = load_experiment(path)
    configurations = [experiment.configuration(c, url) for c in experiment.configurations]
    grid = grid_of(experiment, prepare(experiment), configurations)
    per = Counter(r.condition for r in grid.rows)
    # base and no-image share a decoding; thinking-off and temperature each have their own.
    assert [p.condition for p in report.probes] == ["base", "thinking-off", "temperature"]
    assert report.ok and sim.stats.answered == 3
    # Each a call of its own, not the grid's first attempt, which the run makes and pays for.
    assert all(":gb-check-" in call for call in sim.stats.paid)
    (cost,) = report.costs
    probes = report.probes
    # Each call stands for the requests its decoding sends: base's for no-image's too.
    assert [p.weight for p in probes] == [
        per["base"] + per["no-image"],
        per["thinking-off"],
        per["temperature"],
    ]
    weighted = sum(p.weight * (p.output_tokens or 0) for p in probes) / cost.requests
    assert cost.tokens.output == round(3 * weighted) / 3
    # The input scaled from the images called to those left (no-image's have none).
    assert 0 < cost.tokens.input < max(p.input_tokens or 0 for p in probes)
    assert cost.tokens.basis == "measured over 3 check calls, input scaled to the images left"
    # Nothing stored yet: every request of the grid is left (2 budgets + the box question).
    assert cost.left == cost.requests > 0
    expected = (round(cost.tokens.input) * 2.0 + round(cost.tokens.output) * 10.0) / 1e6
    assert cost.per_call == pytest.approx(expected)
    assert report.dollars == pytest.approx(cost.left * expected)
    paid = sum((p.input_tokens or 0) * 2.0 + (p.output_tokens or 0) * 10.0 for p in probes)
    assert report.spent == pytest.approx(paid / 1e6) and report.spent > 0
    (wall,) = report.walls
    assert wall.calls == cost.left and wall.calls_per_minute <= 120
    lines = check_lines(report, max_spend=report.dollars / 2)
    assert sum(line.startswith("ok ") for line in lines) == 3
    assert any("above --max-spend" in line for line in lines)


def test_stored_answers_are_the_measure_and_complete_requests_are_not_left(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    stored = [Progress("qwen-max", 100, 40, 0, 40, 40, 40, 40_000, 8_000)]
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, _):
        report = _check(_experiment(tmp_path, store, small_root, url), stored)
    (cost,) = report.costs
    # Pooled with the check's 3 calls (each weighed by the requests it stands for): the
    # store's 40 requests outweigh them.
    probes = report.probes
    weighted = sum(p.weight * (p.output_tokens or 0) for p in probes) / sum(
        p.weight for p in probes
    )
    assert cost.tokens.output == (8_000 + round(3 * weighted)) / 43
    assert cost.tokens.basis == (
        "measured over 40 stored requests and 3 check calls, input scaled to the images left"
    )
    assert cost.left == cost.requests - 40


def test_a_wrong_key_fails_with_what_to_do_and_never_shows_the_key(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    spec = SimSpec(api_key="sk-the-right-one-0123456789abcdef")
    with simulator_thread(small_cohort, small_root, tmp_path / "c", spec) as (url, sim):
        path = _experiment(tmp_path, store, small_root, url)
        result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1, result.output
    failed = [line for line in result.output.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 3
    assert "HTTP 401 invalid_api_key" in failed[0]
    assert "check the backend's key variable (api_key_env)" in failed[0]
    assert KEY not in result.output and KEY[-8:] not in result.output
    assert sim.stats.answered == 0


def test_an_unknown_model_fails_with_what_to_do(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    spec = SimSpec(models=("qwen3-vl-plus",))
    with simulator_thread(small_cohort, small_root, tmp_path / "c", spec) as (url, _):
        report = _check(_experiment(tmp_path, store, small_root, url, model="qwen9-vl"))
    assert not report.ok
    first = report.probes[0]
    assert first.stops and "HTTP 404 model_not_found" in (first.error or "")
    assert first.advice == "the model or endpoint is unknown: check model and base_url"


def test_a_run_whose_pre_flight_fails_sends_nothing_and_says_how_to_skip_it(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    spec = SimSpec(api_key="sk-the-right-one-0123456789abcdef")
    with simulator_thread(small_cohort, small_root, tmp_path / "c", spec) as (url, sim):
        path = _experiment(tmp_path, store, small_root, url)
        done = subprocess.run(
            [sys.executable, "-c", "from runner._launch import main; main()", "run", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, KEY_ENV: KEY},
        )
    assert done.returncode == 2 and sim.stats.answered == 0
    out = done.stdout.splitlines()
    assert sum(line.startswith("pre-flight: FAILED") for line in out) == 3
    assert done.stderr.strip().splitlines() == [
        "groundbench: pre-flight: 3 of 3 calls failed (see above); nothing was run. Put it "
        "right and run again, or skip the pre-flight with --no-check"
    ]
    with read_only(store) as con:
        assert con.execute("SELECT count(*) FROM responses").fetchall() == [(0,)]


def test_a_pre_flight_whose_worst_case_passes_the_cap_sends_nothing_and_says_so(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, sim):
        experiment = load_experiment(_experiment(tmp_path, store, small_root, url))
        questions = prepare(experiment)
        rough = asyncio.run(check(experiment, questions, call=False))
        (cost,) = rough.costs
        spec = experiment.configurations[0]
        max_output = experiment.configuration(spec, url).decoding.max_output_tokens
        # Three calls (three decodings), each at 4x its estimated input and max_output_tokens.
        one = (input_bound(cost.tokens.input) * 2.0 + max_output * 10.0) / 1e6
        with pytest.raises(OverCap, match=r"its 3 calls could cost up to \$") as refused:
            asyncio.run(check(experiment, questions, cap=3 * one * 0.99))
        assert "--no-check" in str(refused.value) and sim.stats.answered == 0
        report = asyncio.run(check(experiment, questions, cap=3 * one * 1.01))
    assert report.ok and sim.stats.answered == 3 and report.spent <= 3 * one


def test_a_pre_flights_calls_are_requests_left_made_as_their_attempts(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    """Issue 38: the pre-flight's call is a request the grid has left, under the grid's id
    for its next attempt, kept as that attempt's record; its backend's account holds it."""
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, sim):
        experiment = load_experiment(_experiment(tmp_path, store, small_root, url))
        questions = prepare(experiment)
        config = experiment.configuration(experiment.configurations[0], url)
        keys = list(task_of(questions).plan([config], experiment.budgets, experiment.box))
        # The budget nearest the mean of the condition's requests: its tokens stand for theirs.
        budgets = [k.budget for k in keys if k.condition == "base"]
        mean = sum(budgets) / len(budgets)
        nearest = min(set(budgets), key=lambda b: (abs(b - mean), b))
        base = [k for k in keys if k.condition == "base" and k.budget == nearest]
        # The store has answered the first base request, and attempt 0 of the second did not
        # parse; no thinking-off request is left; the temperature ones are all left.
        left = {k: 0 for k in keys if k.condition in ("base", "temperature")}
        del left[base[0]]
        left[base[1]] = 1
        report = asyncio.run(check(experiment, questions, left={"qwen-max": left}, as_grid=True))
    assert [p.condition for p in report.probes] == ["base", "temperature"]
    (first, _) = report.records
    assert (first.qid, first.budget, first.attempt) == (base[1].qid, base[1].budget, 1)
    assert first.outcome == "answer" and first.configuration == "qwen-max"
    # The grid's ids, so the provider sees the grid's attempt, made once.
    ids = {call.split(":")[1] for call in sim.stats.paid}
    assert len(ids) == 2 and f"gb-{first.fingerprint[:24]}-r{first.replicate}-a1" in ids
    (account,) = report.accounts.values()
    assert len(account.sent) == 2 == report.traffic["qwen"].http_calls


def test_a_checks_calls_count_in_the_windows_of_the_run_that_follows(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    """Issue 38: ``check`` notes when its calls left; a run's pre-flight (and its backends)
    start from them, so the server's window and theirs agree."""
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, sim):
        path = _experiment(tmp_path, store, small_root, url)
        # A note naming a backend the experiment has not (renamed since) is no matter.
        write_calls(store, {"gone": Account(sent=(time.time(),))})
        result = CliRunner().invoke(app, ["check", str(path)])
        assert result.exit_code == 0, result.output
        (checked,) = read_calls(store)[0].values()
        assert len(checked.sent) == 3
        lines: list[str] = []
        ready = prepared(load_experiment(path), RunOptions(preflight=True), lines.append)
    sent = sorted(ready.accounts["qwen"].sent)
    assert len(sent) == 6 and sim.stats.answered == 6
    # 120 a minute: every call, the check's and the pre-flight's, half a second apart, less
    # the slack the limiter allows a call its admitter woke late for (a tenth of the spacing:
    # it keeps to its schedule; a busy machine wakes it late) and a millisecond for two
    # processes' clocks. Had the pre-flight not counted the check's calls, its first would have
    # followed the check's last at once.
    assert min(b - a for a, b in itertools.pairwise(sent)) >= 0.5 * 0.9 - 0.001


def test_under_a_limit_the_calls_and_the_estimate_are_the_limits_requests(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    """Issue 39: `run --limit 1` quoted the whole grid. Under a limit the estimate counts the
    limit's requests, and each call is one of them (a pre-flight's is kept as its attempt)."""
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, _):
        experiment = load_experiment(_experiment(tmp_path, store, small_root, url))
        questions = prepare(experiment)
        report = asyncio.run(check(experiment, questions, limit=1, as_grid=True))
    config = experiment.configuration(experiment.configurations[0], url)
    grid = grid_of(experiment, questions, [config])
    allowed = first_questions(grid.rows, questions, 1)
    (cost,) = report.costs
    cells = {(r.condition, r.budget) for r in grid.rows}
    assert cost.left == len(allowed) == len(cells) < cost.requests
    assert all((r.configuration, r.condition, r.budget, r.qid) in allowed for r in report.records)
    lines = check_lines(report, max_spend=report.dollars / 2)
    header = lines[len(report.probes)]
    assert header.startswith("calls left (--limit 1: the first 1 questions of every cell)")
    spend = f"{report.dollars / 2:,.2f}"
    assert any(
        f"for {len(allowed)} requests, capped by --max-spend ${spend}" in line for line in lines
    )


def test_a_run_right_after_a_check_estimates_from_the_checks_tokens(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    """Issue 39: `check` said $3.66 from its calls, the `run` right after "$22.05 … rough". The
    check notes its calls' tokens; a run's estimate starts from them (here without calls of
    its own: --no-check under a cap), unless the configuration has changed since."""
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, sim):
        path = _experiment(tmp_path, store, small_root, url)
        result = CliRunner().invoke(app, ["check", str(path)])
        assert result.exit_code == 0, result.output
        checked = next(line for line in result.output.splitlines() if "qwen-max: " in line)
        options = RunOptions(preflight=False, max_spend=100.0)
        said: list[str] = []
        ready = prepared(load_experiment(path), options, said.append)
        # The check's calls; the run's estimate made none. Counted by the check's call ids: a
        # loopback port is reused, and under CI once 201 calls with a grid's call ids came
        # here too, from a run an earlier test of the same process had left sending.
        checks = sum(n for call, n in sim.stats.paid.items() if ":gb-check-" in call)
        assert checks == 3
        changed = _experiment(tmp_path, store, small_root, url, model="qwen3-vl-max")
        again = prepared(load_experiment(changed), options, said.append)
    assert ready.estimate is not None and again.estimate is not None
    (cost,) = ready.estimate.costs
    assert cost.tokens.basis.startswith("measured over 3 check calls")
    # The same figures as the check said.
    assert f"({cost.tokens.input:,.0f} in + {cost.tokens.output:,.0f} out tokens" in checked
    (other,) = again.estimate.costs
    assert other.tokens.basis.startswith("rough")
