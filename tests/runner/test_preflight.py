"""``groundbench check`` against the simulator on loopback: a good key proves every decoding,
a wrong key and an unknown model fail with what to do, and the estimates follow from the
measured tokens, the prices and the limits. No Ray."""

from __future__ import annotations

import asyncio
import dataclasses
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

from conditions import Cohort, DataRoot, RequestKey, VariantCache, task_of, write_cohort
from runner.backends import Account
from runner.calls_note import read_calls, write_calls
from runner.cli import app
from runner.distributed import RunOptions
from runner.distributed._prepare import prepared
from runner.estimate import input_bound
from runner.experiment import load_experiment
from runner.plan import first_questions, grid_of, prepare
from runner.preflight import (
    PROBES_PER_DECODING,
    OverCap,
    PreflightReport,
    Probe,
    attempts_per,
    call_lines,
    preflight_lines,
    preflight_report,
    probe_requests,
)
from runner.simulator import Faults, SimSpec
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
    tmp: Path,
    store: Path,
    root: DataRoot,
    url: str,
    model: str = "qwen3-vl-plus",
    conditions: tuple[str, ...] = ("base", "no-image", "thinking-off", "temperature"),
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
    return write_experiment(
        tmp / "exp.toml",
        store,
        root,
        {"qwen": backend},
        [{"name": "qwen-max", "backend": "qwen", "conditions": list(conditions)}],
    )


def _check(path: Path, stored: list[Progress] | None = None) -> PreflightReport:
    return asyncio.run(preflight_report(prepare(load_experiment(path)), stored or []))


@pytest.fixture
def store(tmp_path: Path, small_cohort: Cohort) -> Path:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    return path


def test_a_good_key_proves_each_decoding_and_estimates_from_calls_spread_over_its_requests(
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
    grid = grid_of(experiment, prepare(experiment).questions, configurations)
    per = Counter(r.condition for r in grid.rows)
    probes = report.probes
    # base and no-image share a decoding; thinking-off and temperature each have their own.
    # Each decoding's first call proves it; then PROBES_PER_DECODING in all, for the estimate.
    decodings = {"base": "base", "no-image": "base", "thinking-off": "thinking-off"}
    decodings["temperature"] = "temperature"
    assert [p.condition for p in probes[:3]] == ["base", "thinking-off", "temperature"]
    called = Counter(decodings[p.condition] for p in probes)
    assert called == dict.fromkeys(["base", "thinking-off", "temperature"], PROBES_PER_DECODING)
    assert report.ok and sim.stats.answered == len(probes) == 3 * PROBES_PER_DECODING
    # Each a call of its own, not the grid's first attempt, which the run makes and pays for.
    assert all(":gb-check-" in call for call in sim.stats.paid)
    (cost,) = report.costs
    # A decoding's calls stand, in equal shares, for the requests it sends (base's and
    # no-image's together).
    for decoding in ("base", "thinking-off", "temperature"):
        mine = [p for p in probes if decodings[p.condition] == decoding]
        sent = sum(n for condition, n in per.items() if decodings[condition] == decoding)
        assert sum(p.weight for p in mine) == pytest.approx(sent)
    weighted = sum(p.weight * (p.output_tokens or 0) for p in probes) / cost.requests
    n = len(probes)
    # Times the attempts a request makes: an answer that does not parse is asked again.
    unparsed = sum(p.weight * (not p.parsed) for p in probes) / cost.requests
    made = attempts_per(unparsed, report.attempts["qwen-max"])
    assert 1 <= made <= report.attempts["qwen-max"] == 3
    assert cost.tokens.output == round(n * made * weighted) / n
    # The input scaled from the images called to those left (no-image's have none).
    assert 0 < cost.tokens.input < max(p.input_tokens or 0 for p in probes)
    assert cost.tokens.basis == f"measured over {n} check calls, input scaled to the images left"
    # Nothing stored yet: every request of the grid is left (2 budgets + the box question).
    assert cost.left == cost.requests > 0
    expected = (round(cost.tokens.input) * 2.0 + round(cost.tokens.output) * 10.0) / 1e6
    assert cost.per_call == pytest.approx(expected)
    assert report.dollars == pytest.approx(cost.left * expected)
    paid = sum((p.input_tokens or 0) * 2.0 + (p.output_tokens or 0) * 10.0 for p in probes)
    assert report.spent == pytest.approx(paid / 1e6) and report.spent > 0
    (wall,) = report.walls
    assert wall.calls == cost.left and wall.calls_per_minute <= 120
    lines = preflight_lines(report, max_spend=report.dollars / 2)
    (ok,) = [line for line in lines if line.startswith("ok ")]  # one line per configuration
    assert ok.startswith(f"ok      qwen-max (qwen): {n} calls, 3 decodings, ")
    assert any("above --max-spend" in line for line in lines)


def test_a_decodings_calls_are_spread_over_its_budgets_conditions_and_questions(
    tmp_path: Path, store: Path, small_root: DataRoot, key: None
) -> None:
    """Issue 39: one call per decoding put the check's estimate 27% under the spend (its
    call's output tokens, a third off the mean). The calls are spread over the requests left,
    each standing for an equal share of them; those the store has done are not among them."""
    experiment = load_experiment(_experiment(tmp_path, store, small_root, "http://127.0.0.1:9"))
    questions = prepare(experiment).questions
    config = experiment.configuration(experiment.configurations[0], None)
    builder = task_of(questions).builder(experiment.images, VariantCache(tmp_path / "v"))
    keys = list(task_of(questions).plan([config], experiment.budgets, experiment.box))
    base = [k for k in keys if k.condition in ("base", "no-image")]  # one decoding
    low = min(k.budget for k in base)
    left = {k: 0 for k in keys if k.condition != "temperature" and k.budget != low}
    for given in (None, left):
        asked = probe_requests(experiment, questions, config, builder, given)
        sending = keys if given is None else list(given)
        mine = [a.request.key for a in asked if a.condition in ("base", "no-image")]
        pool = [k for k in sending if k.condition in ("base", "no-image")]
        assert len(mine) == PROBES_PER_DECODING == len(set(mine))
        assert set(mine) <= set(pool)
        assert {k.budget for k in mine} == {k.budget for k in pool}
        assert {k.condition for k in mine} == {"base", "no-image"}
        assert len({k.qid for k in mine}) > 1
        assert sum(a.weight for a in asked) == pytest.approx(len(sending))
        assert sum(a.nth == 0 for a in asked) == len({a.request.decoding for a in asked})
    # Nothing of temperature's left: its decoding is neither proved nor paid for.
    assert "temperature" not in {a.condition for a in asked}


def test_stored_answers_are_the_measure_and_complete_requests_are_not_left(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    stored = [Progress("qwen-max", 100, 40, 0, 40, 40, 40, 40_000, 8_000)]
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, _):
        report = _check(_experiment(tmp_path, store, small_root, url), stored)
    (cost,) = report.costs
    # Pooled with the check's calls (each weighed by the requests it stands for): the
    # store's 40 requests count as many.
    probes = report.probes
    n = len(probes)
    weights = sum(p.weight for p in probes)
    weighted = sum(p.weight * (p.output_tokens or 0) for p in probes) / weights
    unparsed = sum(p.weight * (not p.parsed) for p in probes) / weights
    per = attempts_per(unparsed, report.attempts["qwen-max"])
    assert cost.tokens.output == (8_000 + round(n * per * weighted)) / (40 + n)
    assert cost.tokens.basis == (
        f"measured over 40 stored requests and {n} check calls, input scaled to the images left"
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
    # One line for the one failure, naming the decodings it failed; no call past each
    # decoding's first was sent.
    (failed,) = [line for line in result.output.splitlines() if line.startswith("FAILED")]
    assert failed.startswith("FAILED  qwen-max (qwen; base, thinking-off, temperature) (3 calls)")
    assert "HTTP 401 invalid_api_key" in failed
    assert "check the backend's key variable (api_key_env)" in failed
    assert KEY not in result.output and KEY[-8:] not in result.output
    assert sim.stats.answered == 0 and sim.stats.statuses == {401: 3}


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
    assert sum(line.startswith("pre-flight: FAILED") for line in out) == 1
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
        plan = prepare(experiment)
        rough = asyncio.run(preflight_report(plan, call=False))
        (cost,) = rough.costs
        spec = experiment.configurations[0]
        max_output = experiment.configuration(spec, url).decoding.max_output_tokens
        # Every call (three decodings' each), at 4x its estimated input and max_output_tokens.
        one = (input_bound(cost.tokens.input) * 2.0 + max_output * 10.0) / 1e6
        n = 3 * PROBES_PER_DECODING
        with pytest.raises(OverCap, match=rf"its {n} calls could cost up to \$") as refused:
            asyncio.run(preflight_report(plan, cap=n * one * 0.99))
        assert "--no-check" in str(refused.value) and sim.stats.answered == 0
        report = asyncio.run(preflight_report(plan, cap=n * one * 1.01))
    assert report.ok and sim.stats.answered == n and report.spent <= n * one


def test_a_pre_flights_calls_are_requests_left_made_as_their_attempts(
    tmp_path: Path, store: Path, small_root: DataRoot, small_cohort: Cohort, key: None
) -> None:
    """Issue 38: the pre-flight's call is a request the grid has left, under the grid's id
    for its next attempt, kept as that attempt's record; its backend's account holds it."""
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, sim):
        experiment = load_experiment(_experiment(tmp_path, store, small_root, url))
        plan = prepare(experiment)
        config = experiment.configuration(experiment.configurations[0], url)
        keys = list(task_of(plan.questions).plan([config], experiment.budgets, experiment.box))
        answered = next(k for k in keys if k.condition == "base")
        # The store has answered a base request, and attempt 0 of each other base request did
        # not parse; no thinking-off request is left; the temperature ones are all left.
        left = {
            k: int(k.condition == "base") for k in keys if k.condition in ("base", "temperature")
        }
        del left[answered]
        report = asyncio.run(preflight_report(plan, left={"qwen-max": left}, as_grid=True))
    assert [p.condition for p in report.probes[:2]] == ["base", "temperature"]
    assert {p.condition for p in report.probes} == {"base", "temperature"}
    records = report.records
    assert len(records) == len(report.probes) == 2 * PROBES_PER_DECODING
    assert all(r.outcome == "answer" and r.configuration == "qwen-max" for r in records)
    # Each a request left, made as its next attempt.
    for r in records:
        request = RequestKey(
            configuration=r.configuration, condition=r.condition, budget=r.budget, qid=r.qid
        )
        assert request in left and r.attempt == left[request]
    # The grid's ids, so the provider sees the grid's attempts, each made once.
    ids = {call.split(":")[1] for call in sim.stats.paid}
    assert ids == {f"gb-{r.fingerprint[:24]}-r{r.replicate}-a{r.attempt}" for r in records}
    assert sim.stats.paid_twice == 0
    (account,) = report.accounts.values()
    assert len(account.sent) == len(records) == report.traffic["qwen"].http_calls


def test_a_checks_calls_count_in_the_windows_of_the_run_that_follows(
    tmp_path: Path,
    store: Path,
    small_root: DataRoot,
    small_cohort: Cohort,
    key: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 38: ``check`` notes when its calls left; a run's pre-flight (and its backends)
    start from them, so the server's window and theirs agree."""
    # Two calls per decoding, six in each: the windows are the matter here, half a second a call.
    monkeypatch.setattr("runner.preflight.PROBES_PER_DECODING", 2)
    with simulator_thread(small_cohort, small_root, tmp_path / "c", SimSpec()) as (url, sim):
        path = _experiment(tmp_path, store, small_root, url)
        # A note naming a backend the experiment has not (renamed since) is no matter.
        write_calls(store, {"gone": Account(sent=(time.time(),))})
        result = CliRunner().invoke(app, ["check", str(path)])
        assert result.exit_code == 0, result.output
        (checked,) = read_calls(store)[0].values()
        assert len(checked.sent) == 6
        lines: list[str] = []
        ready = prepared(load_experiment(path), RunOptions(preflight=True), lines.append)
    sent = sorted(ready.accounts["qwen"].sent)
    assert len(sent) == 12 and sim.stats.answered == 12
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
        plan = prepare(experiment)
        questions = plan.questions
        report = asyncio.run(preflight_report(plan, limit=1, as_grid=True))
    config = experiment.configuration(experiment.configurations[0], url)
    grid = grid_of(experiment, questions, [config])
    allowed = first_questions(grid.rows, questions, 1)
    (cost,) = report.costs
    cells = {(r.condition, r.budget) for r in grid.rows}
    assert cost.left == len(allowed) == len(cells) < cost.requests
    asked = {
        RequestKey(configuration=r.configuration, condition=r.condition, budget=r.budget, qid=r.qid)
        for r in report.records
    }
    assert asked <= allowed
    lines = preflight_lines(report, max_spend=report.dollars / 2)
    header = next(line for line in lines if line.startswith("calls left"))
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
        assert checks == 3 * PROBES_PER_DECODING
        changed = _experiment(tmp_path, store, small_root, url, model="qwen3-vl-max")
        again = prepared(load_experiment(changed), options, said.append)
    assert ready.estimate is not None and again.estimate is not None
    (cost,) = ready.estimate.costs
    assert cost.tokens.basis.startswith(f"measured over {checks} check calls")
    # The same figures as the check said.
    assert f"({cost.tokens.input:,.0f} in + {cost.tokens.output:,.0f} out tokens" in checked
    (other,) = again.estimate.costs
    assert other.tokens.basis.startswith("rough")


def test_a_later_call_that_fails_leaves_the_check_standing_and_says_so() -> None:
    """Each decoding's first call proves it; a later one is for the estimate alone (a throttle
    on it is the limiter's to learn from), so its failure is said, not a failed check."""
    answered = Probe("qwen-max", "qwen", "base", input_tokens=900, output_tokens=80, latency_s=1.2)
    throttled = Probe(
        "qwen-max", "qwen", "no-image", error="HTTP 429 rate_limited", advice="wait", nth=3
    )
    report = PreflightReport((answered, throttled, dataclasses.replace(throttled, nth=4)), (), ())
    assert report.ok and report.failed == ()
    assert call_lines(report.probes) == [
        "ok      qwen-max (qwen): 1 call, 1 decoding, 1.2 s each, 900 tokens in, 80 out",
        "missed  qwen-max (qwen; no-image) (2 calls): HTTP 429 rate_limited — left out of the "
        "estimate",
    ]
    refused = dataclasses.replace(throttled, nth=0, error="HTTP 401 invalid_api_key")
    failing = PreflightReport((answered, refused), (), ())
    assert not failing.ok and failing.failed == (refused,)
    assert call_lines(failing.probes)[1] == (
        "FAILED  qwen-max (qwen; no-image): HTTP 401 invalid_api_key — wait"
    )


def _bucket(per_minute: int) -> SimSpec:
    """A server admitting ``per_minute`` calls a minute from a bucket of one, stating no
    limit: calls sent together beyond the first are throttled."""
    faults = Faults(
        requests_per_minute=per_minute, limiter="token-bucket", burst=1, ratelimit_headers=False
    )
    return SimSpec(faults=faults)


def test_a_throttle_below_the_configured_limit_is_waited_out_not_a_failed_check(
    tmp_path: Path,
    store: Path,
    small_root: DataRoot,
    small_cohort: Cohort,
    key: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 38: a limit set too high is learnt, never a failed pre-flight. The server admits
    one call a second, the experiment says 120 a minute: the decodings' first calls, sent
    together, are throttled, and each is sent again (here with no transport retry at all)."""
    monkeypatch.setattr("runner.preflight.PROBES_PER_DECODING", 1)
    monkeypatch.setattr("runner.preflight.PROBE_RETRIES", 0)
    with simulator_thread(small_cohort, small_root, tmp_path / "c", _bucket(60)) as (url, sim):
        report = _check(_experiment(tmp_path, store, small_root, url))
    assert sim.stats.statuses[429] > 0
    assert report.ok and len(report.probes) == 3 and sim.stats.answered == 3


def test_a_pre_flights_later_call_throttled_is_missed_and_spends_no_attempt(
    tmp_path: Path,
    store: Path,
    small_root: DataRoot,
    small_cohort: Cohort,
    key: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A later call, for the estimate alone, throttled past the check's patience (none here):
    the check stands, the call is said as missed, and no attempt is recorded for it, so the
    grid sends that request with a run's patience."""
    monkeypatch.setattr("runner.preflight.PROBES_PER_DECODING", 3)
    monkeypatch.setattr("runner.preflight.PROBE_RETRIES", 0)
    monkeypatch.setattr("runner.preflight.PROBE_RETRY_TIME_S", 0.0)
    with simulator_thread(small_cohort, small_root, tmp_path / "c", _bucket(30)) as (url, sim):
        path = _experiment(tmp_path, store, small_root, url, conditions=("base",))
        experiment = load_experiment(path)
        report = asyncio.run(preflight_report(prepare(experiment), as_grid=True))
    assert report.ok and report.probes[0].ok  # base's one decoding, proved
    missed = [p for p in report.probes if not p.ok]
    assert missed and all(p.nth > 0 and "rate-limited" in (p.error or "") for p in missed)
    assert sim.stats.statuses[429] >= len(missed)
    assert len(report.records) == sim.stats.answered == len(report.probes) - len(missed)
    assert all(r.outcome == "answer" for r in report.records)
    lines = preflight_lines(report)
    assert any(line.startswith("missed  qwen-max (qwen; base)") for line in lines)
