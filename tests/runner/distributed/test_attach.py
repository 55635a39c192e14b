"""``groundbench monitor`` and ``groundbench sql``, typed in another terminal, reach the run of
their experiment: through the address the run notes beside its store, with another Ray
instance on the machine and with token authentication; with no run going they say so in one
line; a client without the token of a cluster that asks for one is told so in one line.

Each command runs as a user's would, in a process of its own with no ``RAY_ADDRESS`` and no
``RAY_AUTH_*`` in its environment: only the run's note can lead it to the right cluster.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
import ray

from conditions import Cohort, DataRoot
from runner._names import NAMESPACE
from runner.distributed._address import RunAddress, note_path, read_note, write_note
from runner.distributed._ray import WAIT_VARIABLE
from runner.simulator import Behaviour, Faults, SimSpec, Simulator
from tests.runner.distributed.conftest import (
    KEY,
    KEY_ENV,
    RunSetup,
    free_port,
    ray_head,
    simulator_thread,
    write_experiment,
)
from tests.runner.distributed.runs import query as duckdb_query
from tests.runner.distributed.runs import until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
# Calls of 0.1-0.2 s: the run is still going when the test pauses the simulator to attach.
SLOW = SimSpec(behaviour=Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0),
               faults=Faults(latency_s=(0.1, 0.2)))  # fmt: skip
FAST = {"requests_per_minute": 60000, "max_concurrency": 8}  # the latency alone sets the pace


@dataclass(frozen=True)
class TokenHead:
    address: str
    token: str


@pytest.fixture(scope="module")
def token_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenHead]:
    """One Ray cluster that asks every client for a token (``RAY_AUTH_MODE=token``), for this
    module's tests: a cluster takes ~15 s to start. Its nodes hold the test key, as a cluster's
    would hold the backends' keys."""
    token = secrets.token_hex(32)
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, KEY_ENV: KEY}
    with ray_head(tmp_path_factory.mktemp("token-head"), auth) as address:
        yield TokenHead(address, token)


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A user's shell: nothing that names a Ray cluster or a token, a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), **extra}


def _groundbench(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from runner.cli import main; main()", *args],
        env={**env, "PYTHONUNBUFFERED": "1"},  # the monitor's readings as they are printed
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finished(process: subprocess.Popen[str]) -> tuple[int, list[str], str]:
    out, err = process.communicate(timeout=600)
    return process.returncode, out.splitlines(), err


def _one_line(process: subprocess.Popen[str]) -> str:
    """The single line of a failed command, which ends with status 2 and no traceback."""
    code, out, err = _finished(process)
    assert code == 2, (out, err[-3000:])
    assert err.count("\n") == 1 and "Traceback" not in err, err[-3000:]
    return err.strip()


@contextmanager
def _slow_run(run: RunSetup) -> Iterator[tuple[Path, Simulator]]:
    with simulator_thread(run.cohort, run.root, run.tmp / "v", SLOW) as (url, sim):
        backend = {"provider": "qwen", "model": "qwen3-vl-plus", "base_url": url,
                   "api_key_env": KEY_ENV, **FAST}  # fmt: skip
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": backend},
            [{"name": "qa", "backend": "a", "conditions": ["base", "no-image"]}],
        )  # fmt: skip
        yield path, sim


def _attached(
    path: Path, store: Path, env: dict[str, str], sim: Simulator, every: float = 0.5
) -> tuple[list[str], list[str]]:
    """``monitor`` and ``sql`` while the run is held going (the caller paused ``sim``: it
    answers nothing until the monitor has shown a reading and the query has answered), then
    the monitor to the run's end: their output lines. Nothing here waits on a clock for the
    run: it cannot end before they attach, however slowly they start."""
    try:
        monitor = _groundbench("monitor", str(path), "--every", str(every), env=env)
        sql = _groundbench("sql", str(store), "SELECT count(*) AS n FROM responses",
                           "--format", "csv", env=env)  # fmt: skip
        code, queried, err = _finished(sql)
        assert code == 0, err[-3000:]
        seen = _lines_until(monitor, "requests complete")
    finally:
        sim.paused = False
    code, watched, err = _finished(monitor)
    assert code == 0, err[-3000:]
    return seen + watched, queried


def _lines_until(process: subprocess.Popen[str], wanted: str) -> list[str]:
    """``process``'s output lines up to the first that holds ``wanted`` (or its end)."""
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line.rstrip("\n"))
        if wanted in line:
            break
    return seen


def test_monitor_and_sql_reach_a_local_runs_ray_beside_another_and_end_with_it(
    experiment_store: Path, small_root: DataRoot, small_cohort: Cohort, tmp_path: Path
) -> None:
    """The run starts a local Ray of its own (with token authentication where Ray turns it on
    by default, 2.59+), which goes away with the run: the monitor ends with the run, rather
    than waiting on a cluster that is gone."""
    run = RunSetup("", experiment_store, small_root, small_cohort, tmp_path)
    other_token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    with (
        ray_head(tmp_path / "other", other_token) as other,  # another user's Ray
        _slow_run(run) as (path, sim),
    ):
        # No pre-flight: its calls would reach the simulator before the run is going.
        driver = _groundbench(
            "run", str(path), "--no-check", env=_env(Path.home(), **{KEY_ENV: KEY})
        )
        try:
            until(lambda: sim.stats.answered >= 1 or driver.poll() is not None)
            sim.paused = True  # the run goes on until _attached has seen it
            note = read_note(run.store)
            assert note is not None
            assert note.address.rpartition(":")[2] != other.rpartition(":")[2]
            # Readings far apart: the run ends, and its Ray goes, while the monitor waits.
            watched, queried = _attached(path, run.store, _env(Path.home()), sim, every=6.0)
        finally:
            sim.paused = False  # a failed assertion lets the run end too
            code, said, err = _finished(driver)
    assert code == 0, (said[-20:], err[-3000:])
    assert queried[0] == "n" and int(queried[1]) >= 1
    assert any("requests complete" in line for line in watched), watched
    assert watched[-1] == "the run has ended"
    assert not note_path(run.store).exists()  # removed as the run ended


def test_monitor_counts_the_requests_of_a_limited_run(
    experiment_store: Path, small_root: DataRoot, small_cohort: Cohort, tmp_path: Path
) -> None:
    """Issue 39: during `run --limit N`, `groundbench monitor` in another terminal counts the
    limit's requests (the run tells its store actor), not the grid's."""
    run = RunSetup("", experiment_store, small_root, small_cohort, tmp_path)
    with _slow_run(run) as (path, sim):
        env = _env(Path.home(), **{KEY_ENV: KEY})
        driver = _groundbench("run", str(path), "--no-check", "--limit", "3", env=env)
        try:
            until(lambda: sim.stats.answered >= 1 or driver.poll() is not None)
            sim.paused = True  # the run goes on until _attached has seen it
            watched, _ = _attached(path, run.store, _env(Path.home()), sim)
        finally:
            sim.paused = False
            code, said, err = _finished(driver)
    assert code == 0, (said[-20:], err[-3000:])
    ((cells,),) = duckdb_query(run.store, "SELECT count(DISTINCT (condition, budget)) FROM grid")
    ((requests,),) = duckdb_query(run.store, "SELECT count(*) FROM grid")
    assert requests > 3 * cells  # the grid's count is not the limit's
    shown = [line for line in watched if "requests complete (" in line]
    assert shown and all(f"/{3 * cells:,} requests complete" in line for line in shown), shown


@pytest.mark.skipif(
    tuple(int(n) for n in ray.__version__.split(".")[:2]) < (2, 52),
    reason=f"Ray {ray.__version__} has no token authentication (RAY_AUTH_MODE=token, Ray 2.52+)",
)
def test_monitor_and_sql_reach_a_cluster_that_asks_for_a_token(
    token_head: TokenHead,
    experiment_store: Path,
    small_root: DataRoot,
    small_cohort: Cohort,
    tmp_path: Path,
) -> None:
    run = RunSetup("", experiment_store, small_root, small_cohort, tmp_path)
    head, token = token_head.address, token_head.token
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, KEY_ENV: KEY}
    with _slow_run(run) as (path, sim):
        driver = _groundbench(
            "run", str(path), "--no-check", "--address", head, env=_env(tmp_path, **auth)
        )
        try:
            until(lambda: sim.stats.answered >= 1 or driver.poll() is not None)
            sim.paused = True  # the run goes on until _attached has seen it
            note = read_note(run.store)
            # The address as the cluster gives it (its node's IP), on the head's port.
            assert note is not None and note.token_auth
            assert note.address.rpartition(":")[2] == head.rpartition(":")[2]
            assert token not in note_path(run.store).read_text()  # never the secret itself
            # No token anywhere: one line saying where to put it, before any Ray call.
            refused = _one_line(_groundbench("monitor", str(path), env=_env(tmp_path / "nobody")))
            # The token as a user would export it; the note turns token mode on.
            user = _env(tmp_path / "user", RAY_AUTH_TOKEN=token)
            # The head's address typed as `ss` shows it: the note's cluster all the same.
            typed = _groundbench("sql", str(run.store), "SELECT 1 AS one", "--format", "csv",
                                 "--address", head, env=user)  # fmt: skip
            code, answered, err = _finished(typed)
            assert (code, answered) == (0, ["one", "1"]), err[-3000:]
            watched, queried = _attached(path, run.store, user, sim)
        finally:
            sim.paused = False  # a failed assertion lets the run end too
            code, said, err = _finished(driver)
    assert code == 0, (said[-20:], err[-3000:])
    assert refused == (
        f"groundbench: the run's Ray cluster at {note.address} uses token authentication and "
        "there is no token here: set RAY_AUTH_TOKEN to the cluster's token, or "
        "RAY_AUTH_TOKEN_PATH to a file that holds it, or put it in ~/.ray/auth_token "
        "(`ray get-auth-token` on the cluster's head prints it)"
    )
    assert said[0].startswith(f"attach from another terminal: groundbench monitor {path}")
    assert int(queried[1]) >= 1 and watched[-1] == "the run has ended"


def test_with_no_run_going_monitor_and_sql_say_so_in_one_line(
    experiment_store: Path, small_root: DataRoot, tmp_path: Path
) -> None:
    """No Ray starts here: each answer comes before any call to Ray."""
    store = experiment_store
    backend: dict[str, object] = {
        "provider": "qwen",
        "model": "qwen3-vl-plus",
        "base_url": "simulator",
    }
    path = write_experiment(
        tmp_path / "exp.toml", store, small_root, {"s": backend},
        [{"name": "qs", "backend": "s", "conditions": ["base"]}],
    )  # fmt: skip
    env = _env(Path.home())
    never = _one_line(_groundbench("monitor", str(path), env=env))
    assert never == (
        f"groundbench: {store}: no run of this experiment is going on this machine (a run "
        f"notes where it can be reached in {note_path(store)} while it runs); for a run "
        "driven from another machine, give its cluster: --address HOST:PORT"
    )
    # A run killed outright leaves its note; its cluster is gone.
    gone = f"127.0.0.1:{free_port()}"
    started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    write_note(store, RunAddress(address=gone, namespace=NAMESPACE, token_auth=False,
                                     host="h", pid=7, started=started))  # fmt: skip
    ended = (
        f"groundbench: {store}: the run noted in {note_path(store)} has ended: nothing "
        f"answers at its cluster's address (Ray at {gone}, namespace groundbench; driver pid 7 "
        "on h, started 2026-01-02 03:04:05 UTC); `groundbench run` starts it again"
    )
    assert _one_line(_groundbench("monitor", str(path), env=env)) == ended
    with duckdb.connect(str(store)):  # another process holds the file
        query = ("sql", str(store), "SELECT 1")
        assert _one_line(_groundbench(*query, env=env)) == ended
        elsewhere = f"127.0.0.1:{free_port()}"
        wrong = _one_line(_groundbench(*query, "--address", elsewhere, env=env))
    assert wrong == (
        f"groundbench: nothing answers at {elsewhere}: check the address (`ray status` on the "
        "cluster's head prints it), or leave --address out on the run's machine to use the "
        "address the run noted"
    )


_CLIENT = """
import sys
from runner._errors import RunnerError
from runner.distributed._ray import connect
try:
    connect(sys.argv[1])
except RunnerError as exc:
    print(f"{type(exc).__name__}: {exc}")
else:
    print("joined")
"""


def test_a_cluster_that_wants_a_token_is_one_line_that_names_the_token(
    token_head: TokenHead, tmp_path: Path
) -> None:
    """Joining a cluster that refuses this client: one line that says why, no Ray warnings."""
    env = _env(tmp_path / "client")  # no token, and no ~/.ray/auth_token either
    # Ray tries a cluster that refuses the token as one still starting, 20 s by default; what
    # is tested is the line at the end, so 3 tries will do.
    env[WAIT_VARIABLE] = "3"
    done = subprocess.run(
        [sys.executable, "-c", _CLIENT, token_head.address],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        f"ClusterError: the Ray cluster at {token_head.address} refused this client's token "
        "(Ray: Authentication token is missing or incorrect): the cluster uses token "
        "authentication, so export RAY_AUTH_MODE=token here, with the cluster's token in "
        "RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH"
    ], done.stderr[-2000:]
    # Ray's core warned once a second while it retried; none of it reaches the terminal.
    assert "InvalidAuthToken" not in done.stderr


_OWN_RAY = """
from ray._private.services import canonicalize_bootstrap_address
from runner.distributed._ray import cluster_address, connect, shutdown
print(canonicalize_bootstrap_address(None))  # where ray.init() with no address goes
connect(None)  # a run with neither --address nor RAY_ADDRESS
print(cluster_address())
shutdown()
"""


def test_a_run_with_no_address_starts_its_own_ray_whatever_cluster_the_machine_notes(
    token_head: TokenHead, tmp_path: Path
) -> None:
    """Another user's `ray start` cluster, noted in the machine's current-cluster file, with its
    token at hand (a shared token file): the run does not join it, it starts a Ray of its own.
    The current-cluster file is a private one (Ray reads it from $RAY_TMPDIR/ray/), so that no
    other process on the machine is led to the cluster meanwhile."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="gb-tmp-", dir="/tmp"))  # short, for Ray's sockets
    try:
        (ray_tmp / "ray").mkdir()
        (ray_tmp / "ray" / "ray_current_cluster").write_text(token_head.address)
        env = _env(tmp_path, RAY_TMPDIR=str(ray_tmp), RAY_AUTH_TOKEN=token_head.token)
        done = subprocess.run(
            [sys.executable, "-c", _OWN_RAY], env=env, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    noted, joined = done.stdout.splitlines()
    port = token_head.address.rpartition(":")[2]
    assert noted.rpartition(":")[2] == port  # Ray's default would have joined the other cluster
    assert joined.rpartition(":")[2] != port
