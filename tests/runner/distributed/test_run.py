"""The distributed run on a local Ray against simulators on loopback.

A small grid completes with every key once and live scores equal to offline ones; quota stops
one backend only and a rerun sends exactly what is missing; SQL and the monitor reach a run
going elsewhere; Ctrl-C ends a run in one line; the summary's HTTP calls are the server's, and
piped output holds no escape code. Crashes and every injected fault are
``test_faults.py``'s; a cluster of several nodes is ``test_multinode.py``'s.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import ray
from ray.exceptions import RayTaskError

from conditions import ProtocolMismatchError
from runner._names import NAMESPACE, actor_name, run_tag
from runner.distributed import (
    CONTROL,
    QUERIES,
    RunOptions,
    Scorer,
    query_running_store,
    snapshot_running_store,
    watch_run,
)
from runner.distributed._address import note_path, read_note
from runner.experiment import load_experiment
from runner.monitor import Snapshot
from runner.simulator import Behaviour, Faults, SimSpec, Simulator
from runner.store import (
    QUERY_SLOTS,
    ScoreJob,
    Store,
    StoreError,
    query_store,
    read_only,
    reading,
)
from tests.runner.distributed.conftest import (
    KEY_ENV,
    RunSetup,
    simulator_thread,
    write_experiment,
)
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

CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # one attempt per request
FAST = {"requests_per_minute": 60000, "max_concurrency": 8}


def _at(url: str, provider: str = "qwen", model: str = "qwen3-vl-plus") -> dict[str, object]:
    """A backend at a test-owned simulator, its key from the environment."""
    return {"provider": provider, "model": model, "base_url": url, "api_key_env": KEY_ENV, **FAST}


def test_a_small_grid_completes_once_with_live_scores_equal_to_offline(run: RunSetup) -> None:
    sim = {"base_url": "simulator", **FAST}
    path = write_experiment(
        run.tmp / "exp.toml",
        run.store,
        run.root,
        {
            "qwen": {"provider": "qwen", "model": "qwen3-vl-plus", **sim},
            "gemini": {"provider": "gemini", "model": "gemini-3-pro-preview", **sim},
        },
        [
            {"name": "qwen-max", "backend": "qwen", "conditions": ["base", "no-image"]},
            {"name": "gemini-high", "backend": "gemini", "best_effort": True},
        ],
        extra="[simulator.behaviour]\nrefusal = 0.3",  # unparseable answers: more attempts
    )
    lines: list[str] = []
    report = run_once(path, lines)
    assert report.complete and report.unscored == 0
    assert any("requests complete" in line and "throttled (429)" in line for line in lines)
    assert_every_key_once(run.store)
    attempts = dict(
        query(run.store, "SELECT configuration, max(attempt) FROM responses GROUP BY ALL")
    )
    assert attempts["qwen-max"] <= 2 and attempts["gemini-high"] <= 3
    assert report.simulator_calls == query(run.store, "SELECT count(*) FROM responses")[0][0]

    # Live scores are the scores of the stored answers, computed again offline.
    answers = query(
        run.store,
        "SELECT configuration, condition, budget, qid, attempt, answer FROM responses "
        "WHERE outcome = 'answer' ORDER BY ALL",
    )
    offline, _ = Scorer(run.cohort).score(ScoreJob._make(a) for a in answers)
    live = query(
        run.store,
        "SELECT * FROM scores ORDER BY configuration, condition, budget, qid, attempt",
    )
    assert live == sorted(offline, key=lambda r: r[:5])
    controls = query(run.store, "SELECT count(*) FROM controls")[0][0]
    boxes = query(
        run.store, "SELECT count(*) FROM responses WHERE budget = 0 AND outcome = 'answer'"
    )[0][0]
    assert controls == 5 * boxes > 0

    again = run_once(path)  # a rerun of a complete grid sends nothing
    assert again.complete and again.tally.finished == 0 and again.simulator_calls == 0

    # Another model under the same configuration name is another protocol: refused, and the
    # store is left as it was.
    path.write_text(path.read_text().replace('"qwen3-vl-plus"', '"qwen3-vl-max"'))
    with pytest.raises(ProtocolMismatchError, match=r"configuration qwen-max.*must not be mixed"):
        run_once(path)
    assert query(run.store, "SELECT count(*) FROM configurations") == [(2,)]
    assert_every_key_once(run.store)


def test_waiting_on_quota_tries_again_and_stores_every_call(run: RunSetup) -> None:
    spent = SimSpec(behaviour=CLEAN, faults=Faults(quota_after=30))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spent) as (url, sim):
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": _at(url)},
            [{"name": "qa", "backend": "a"}],
        )  # fmt: skip
        lines: list[str] = []
        options = RunOptions(progress_every_s=0.5, wait_on_quota_s=0.2, max_quota_waits=1)
        report = run_once(path, lines, options)
    assert any("quota exhausted; trying again in 0.2 s" in line for line in lines)
    stop = report.backends[0].stop
    assert not report.complete and stop is not None and stop.kind == "quota"
    assert sim.stats.answered == 30  # the quota never came back: no answer after the wait
    calls = sim.stats.admitted_at
    # A pause of the wait between two calls: calls were made again after it.
    assert max(b - a for a, b in itertools.pairwise(calls)) >= 0.2
    rows = dict(query(run.store, "SELECT outcome, count(*) FROM responses GROUP BY ALL"))
    assert rows["answer"] == 30  # every answer paid for is stored
    # The quota errors of the second try replace those of the first for the same attempts: an
    # error holds its attempt only until something newer comes.
    assert 1 <= rows["quota"] <= sim.stats.faults["quota"]


def test_a_wrong_key_stops_its_backend_and_the_run_says_why(run: RunSetup) -> None:
    # The test's key (KEY_ENV) is not the one this server takes: every call is a 401.
    refusing = SimSpec(behaviour=CLEAN, api_key="sk-another-key-0123456789")
    with simulator_thread(run.cohort, run.root, run.tmp / "v", refusing) as (url, sim):
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": _at(url)},
            [{"name": "qa", "backend": "a"}],
        )  # fmt: skip
        lines: list[str] = []
        report = run_once(path, lines)
    # Only the calls in flight when the first 401 came back were sent (the concurrency, 8).
    sent = sim.stats.statuses[401]
    assert 1 <= sent <= 8 and sum(sim.stats.statuses.values()) == sent == report.tally.finished
    assert not report.complete and report.pending == report.progress[0].requests
    stop = report.backends[0].stop
    assert stop is not None and stop.kind == "refused"
    assert any("backend a: stopped, no call of it can succeed" in line for line in lines)
    (error,) = report.errors
    assert (error.kind, error.status, error.code, error.count) == (
        "fatal",
        401,
        "invalid_api_key",
        sent,
    )
    assert any(
        f"qa: {sent} × fatal (HTTP 401 invalid_api_key): Incorrect API key provided" in line
        and "check the backend's key variable" in line
        for line in lines
    )
    assert lines[-1].endswith("(once the key or model is put right)")


def test_an_offline_run_prints_the_connection_error(run: RunSetup) -> None:
    with socket.socket() as closed:  # a port bound and never listened on: refused at once
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        backend = {**_at(url), "max_transport_retries": 1}
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": backend},
            [{"name": "qa", "backend": "a"}],
        )  # fmt: skip
        lines: list[str] = []
        report = run_once(path, lines)
    (error,) = report.errors
    requests = report.progress[0].requests
    assert (error.kind, error.status, error.count) == ("transient", None, requests)
    assert error.message is not None and "ClientConnectorError" in error.message
    assert any(
        f"qa: {requests} × transient (no response): ClientConnectorError" in line
        and "the server could not be reached: check base_url and the network" in line
        for line in lines
    )


def test_quota_stops_one_backend_and_a_rerun_sends_exactly_the_missing_keys(run: RunSetup) -> None:
    def experiment(url_a: str, url_b: str) -> Path:
        return write_experiment(
            run.tmp / "exp.toml",
            run.store,
            run.root,
            {"a": _at(url_a), "b": _at(url_b, "kimi", "kimi-k2.6")},
            [{"name": "qa", "backend": "a"}, {"name": "kb", "backend": "b"}],
        )

    spent = SimSpec(behaviour=CLEAN, faults=Faults(quota_after=40))
    clean = SimSpec(behaviour=CLEAN)
    with (
        simulator_thread(run.cohort, run.root, run.tmp / "va", spent) as (url_a, sim_a),
        simulator_thread(run.cohort, run.root, run.tmp / "vb", clean) as (url_b, sim_b),
    ):
        lines: list[str] = []
        first = run_once(experiment(url_a, url_b), lines)
    assert not first.complete
    by_config = {p.configuration: p for p in first.progress}
    assert by_config["kb"].pending == 0  # the other backend went on to the end
    assert by_config["qa"].complete == 40 == sim_a.stats.answered
    assert [b.name for b in first.backends if b.stop and b.stop.kind == "quota"] == ["a"]
    assert any(
        "run groundbench run" in line or "again to send exactly those" in line for line in lines
    )
    missing = by_config["qa"].pending

    with (
        simulator_thread(run.cohort, run.root, run.tmp / "va", clean) as (url_a, sim_a),
        simulator_thread(run.cohort, run.root, run.tmp / "vb", clean) as (url_b, sim_b),
    ):
        second = run_once(experiment(url_a, url_b))
    assert second.complete
    assert sum(sim_a.stats.statuses.values()) == missing  # exactly the missing keys
    assert sum(sim_b.stats.statuses.values()) == 0
    assert_every_key_once(run.store)


CTE_DELETE = "WITH x AS (DELETE FROM responses RETURNING *) SELECT count(*) FROM x"
ENDLESS = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range < 0"


def test_sql_answers_during_a_run_through_its_store_and_refuses_writes(run: RunSetup) -> None:
    with (
        _slow_run(run) as (path, sim),
        in_background(path) as result,
    ):
        until(lambda: sim.stats.answered >= 20)
        sim.paused = True  # the run is held going while it is queried, however slow the test
        try:
            _query_while_going(run)
        finally:
            sim.paused = False
    assert result[0].complete
    assert_every_key_once(run.store)


def _query_while_going(run: RunSetup) -> None:
    """What a user's queries get from a run going: read-only answers, refusals in one line."""
    with pytest.raises(StoreError, match="a run holds the file"):
        read_only(run.store)
    with pytest.raises(StoreError, match="a run holds the file"):
        query_store(run.store, "SELECT 1")  # no way to reach the run given
    names, rows = query_store(run.store, "SELECT count(*) AS n FROM responses", query_running_store)
    assert names == ["n"] and rows[0][0] >= 20
    with pytest.raises(StoreError, match="not DELETE"):
        query_store(run.store, "DELETE FROM responses", query_running_store)
    # What the store actor's process holds is not for users: its key, its files.
    with pytest.raises(StoreError, match="reads the store and nothing else"):
        query_store(run.store, "SELECT * FROM read_text('/proc/self/environ')", query_running_store)
    with pytest.raises(StoreError, match="this one writes"):
        query_store(run.store, CTE_DELETE, query_running_store)
    with pytest.raises(StoreError, match=r"stopped at its time limit of 0\.5 s"):
        query_store(run.store, ENDLESS, query_running_store, timeout_s=0.5)
    # The store's own files: DuckDB lets a query read them with external access off, and
    # reading one opens the file again in the store actor's process; closing it there dropped
    # the lock that keeps a second run out.
    for own in ("read_text", "read_blob", "glob"):
        with pytest.raises(StoreError, match="reads the store and nothing else"):
            query_store(run.store, f"SELECT * FROM {own}('{run.store}')", query_running_store)
    # A report reads a snapshot the run's store takes in one transaction, a copy of its own.
    with reading(run.store, snapshot_running_store) as source, source.open() as con:
        assert source.path != run.store
        assert re.match(
            rf"the store is held by a run \(pid {os.getpid()}\): reporting from ", str(source.said)
        )
        answers = con.execute("SELECT count(*) FROM responses WHERE outcome = 'answer'").fetchone()
        assert answers is not None and answers[0] >= 20
        assert str(source.said).endswith(f", {answers[0]:,} answers")
    assert not source.path.exists()
    # The lock holds: a second run's store (this is not the actor's process) cannot open it,
    # and the run's note stays.
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(run.store, lock_wait_s=0)
    assert read_note(run.store) is not None


def test_a_slow_query_during_a_run_holds_up_no_write_and_its_client_can_stop_it(
    run: RunSetup,
) -> None:
    """A slow query holds up no write; the store runs QUERY_SLOTS at once and refuses one more
    at once; cancels reach a full pool; a query whose client says nothing more is stopped."""

    def stored() -> int:
        return int(query_running_store(run.store, "SELECT count(*) FROM responses")[1][0][0])

    failures: list[str] = []

    def endless(token: str) -> None:
        try:
            query_running_store(run.store, ENDLESS, 600.0, token=token)
        except StoreError as exc:
            failures.append(str(exc))

    tokens = [f"endless{i}" for i in range(QUERY_SLOTS)]
    readers = [threading.Thread(target=endless, args=(t,)) for t in tokens]
    with _slow_run(run) as (path, sim), in_background(path) as result:
        until(lambda: sim.stats.answered >= 10)
        readers[0].start()
        first = stored()  # other queries are answered beside it
        until(lambda: stored() >= first + 20 or not readers[0].is_alive())
        assert readers[0].is_alive()  # twenty answers were stored while the query ran
        store: Any = ray.get_actor(actor_name(run_tag(run.store), "store"), namespace=NAMESPACE)

        def control(method: str, *args: object) -> Any:
            return ray.get(getattr(store, method).options(concurrency_group=CONTROL).remote(*args))

        sim.paused = True  # the run is held going until the queries are seen to
        try:
            for reader in readers[1:]:
                reader.start()
            until(lambda: control("queries") == QUERY_SLOTS)
            with pytest.raises(StoreError, match=f"{QUERY_SLOTS} queries are running on the store"):
                stored()  # refused, not queued behind them

            def stopped() -> bool:  # every cancel reaches the full pool
                for token in tokens:
                    control("cancel", token)
                for reader in readers:
                    reader.join(0.1)
                return not any(reader.is_alive() for reader in readers)

            until(stopped)
            # A client killed says no more that it waits: the store stops its query.
            quiet = store.query.options(concurrency_group=QUERIES).remote(ENDLESS, 600.0, "q")
            with pytest.raises(RayTaskError, match="its client went away"):
                ray.get(quiet)
        finally:
            sim.paused = False
    assert failures == [f"{run.store}: the query was cancelled by its client"] * QUERY_SLOTS
    assert result[0].complete


def test_the_monitor_attaches_to_a_run_going_elsewhere_and_ends_with_it(run: RunSetup) -> None:
    views: list[Snapshot] = []

    def seen(view: Snapshot) -> None:
        views.append(view)
        if any(c.fixed_iou is not None for c in view.cells):
            sim.paused = False  # a score was seen while the run was held going: let it end

    with (
        _slow_run(run) as (path, sim),
        in_background(path) as result,
    ):
        until(lambda: sim.stats.answered >= 10)
        # Held going (the simulator answers nothing more) until the monitor has seen a score,
        # however slowly the scorers start: no clock decides what the monitor sees.
        sim.paused = True
        try:
            watch_run(load_experiment(path), None, 0.3, seen)  # ends with the run
        finally:
            sim.paused = False
    assert result[0].complete
    assert len(views) >= 2 and [b.name for b in views[-1].backends] == ["a"]
    assert views[-1].complete > views[0].complete > 0
    scored = next(v for v in views if any(c.fixed_iou is not None for c in v.cells))
    assert scored.complete < views[-1].complete  # scores live, during the run


@contextmanager
def _slow_run(run: RunSetup) -> Iterator[tuple[Path, Simulator]]:
    """An experiment against a simulator slow enough (50–150 ms a call) to be stopped mid-run."""
    slow = SimSpec(behaviour=CLEAN, faults=Faults(latency_s=(0.05, 0.15)))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", slow) as (url, sim):
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": _at(url)},
            [{"name": "qa", "backend": "a", "conditions": ["base", "no-image"]}],
        )  # fmt: skip
        yield path, sim


def _signalled(
    driver: subprocess.Popen[str], sim: Simulator, sig: signal.Signals
) -> tuple[object, str]:
    """``sig`` sent to the driver once 20 answers are in; what it printed, and (for a failure's
    message) whether it had the signal blocked or ignored, how far it was, and whether it had
    already ended."""
    until(lambda: sim.stats.answered >= 20 or driver.poll() is not None)
    before = _signal_state(driver.pid), sim.stats.answered, driver.poll()
    driver.send_signal(sig)
    return before, driver.communicate(timeout=60)[0]


def test_ctrl_c_ends_a_run_in_one_line_and_the_rerun_completes(run: RunSetup) -> None:
    with _slow_run(run) as (path, sim):
        driver = driver_process(path, run.ray_address, run.tmp)
        before, output = _signalled(driver, sim, signal.SIGINT)
        assert driver.returncode == 130, (before, output)
        assert output.strip().splitlines()[-1] == (
            f"groundbench: interrupted; everything stored is kept: run `groundbench run {path}` "
            "again to resume"
        )
        assert len(stored_after_kill(run.store)) >= 10
        assert run_once(path).complete
        assert_every_key_once(run.store)


@pytest.mark.parametrize("ray_of", ["a cluster joined", "its own"])
def test_sigterm_ends_a_run_as_ctrl_c_does_with_exit_status_143(run: RunSetup, ray_of: str) -> None:
    """Ray takes SIGTERM in the driver: a run on its own Ray printed Ray's stack dump and
    aborted (-6), one joining a cluster ended with status 15 and a traceback."""
    with _slow_run(run) as (path, sim):
        if ray_of == "its own":  # as the console script starts it, Ray early
            env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
            env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
            driver = subprocess.Popen(
                [sys.executable, "-c", _OWN_RAY_DRIVER, "run", str(path), "--progress-every",
                 "0.3"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=run.tmp, env=env,
            )  # fmt: skip
        else:
            driver = driver_process(path, run.ray_address, run.tmp)
        before, output = _signalled(driver, sim, signal.SIGTERM)
        assert driver.returncode == 143, (before, output)
        assert output.strip().splitlines()[-1] == (
            f"groundbench: terminated (SIGTERM); everything stored is kept: run `groundbench run "
            f"{path}` again to resume"
        )
        assert "SIGTERM received" not in output  # no stack dump
        assert not note_path(run.store).exists()  # the run's end ran: its note is gone
        assert len(stored_after_kill(run.store)) >= 10
        assert run_once(path).complete
        assert_every_key_once(run.store)


# The console script, with Ctrl-C as a terminal gives it (tests/runner/distributed/runs.py).
_OWN_RAY_DRIVER = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from runner._launch import main; main()"
)


def _signal_state(pid: int) -> list[str]:
    """The signal lines of ``/proc/PID/status`` (blocked, ignored, caught, pending)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return [f"unreadable: {exc.strerror}"]
    return [line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt", "SigPnd"))]


def test_the_counters_match_the_server_and_piped_output_holds_no_escape_code(
    run: RunSetup,
) -> None:
    """5xx and resets retried, then a quota that stops the backend (its worker logs why,
    through Ray's prefix): the summary's HTTP calls are the calls the server saw, and
    nothing written to the pipes is coloured."""
    faults = Faults(server_error=0.2, reset=0.2, quota_after=20)
    spec = SimSpec(behaviour=CLEAN, faults=faults)
    with simulator_thread(run.cohort, run.root, run.tmp / "v", spec) as (url, sim):
        backend = {**_at(url), "max_transport_retries": 1, "retry_backoff_s": 0.001}
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": backend},
            [{"name": "qa", "backend": "a", "conditions": ["base"]}],
        )  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k != "RAY_COLOR_PREFIX"}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[3])
        done = subprocess.run(
            [sys.executable, "-c", "from runner.cli import main; main()", "run", str(path),
             "--address", run.ray_address, "--no-check", "--progress-every", "0.3"],
            capture_output=True, text=True, env=env, cwd=run.tmp, timeout=300,
        )  # fmt: skip
    output = done.stdout + done.stderr
    assert "pid=" in output, output  # a worker's line came through Ray, prefixed
    assert "\x1b[" not in output, output
    (summary,) = [line for line in done.stdout.splitlines() if line.startswith("run ended")]
    calls = int(summary.split(": ")[1].split(" HTTP calls sent")[0].replace(",", ""))
    assert calls == sum(sim.stats.statuses.values())  # resets (status 0) included
    assert sim.stats.faults["server_error"] > 0 and sim.stats.faults["reset"] > 0
    assert "transient failures (5xx, resets, timeouts, broken bodies): " in done.stdout
