"""Joining a Ray cluster that refuses this client: one line that says why, no Ray warnings."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

RAY = Path(sys.executable).with_name("ray")
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def token_cluster(tmp_path: Path) -> Iterator[str]:
    """A one-node Ray cluster that asks every client for a token (``RAY_AUTH_MODE=token``)."""
    port = _free_port()
    # A Ray directory of its own: `ray start` notes its address in <dir>/ray_current_cluster
    # (else /tmp/ray's), where a later ray.init() on this machine (the suite's local Ray) would
    # find it and try to join it. Short, for Ray's socket paths.
    ray_dir = Path(tempfile.mkdtemp(prefix="gb-ray-", dir="/tmp"))
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "HOME": str(tmp_path / "head"),
    }
    command = [str(RAY), "start", "--head", f"--port={port}", "--num-cpus=1", "--block"]
    command += ["--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={ray_dir}"]
    head = subprocess.Popen(
        command, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):  # up to a minute, however slow the machine; counted, not timed
            if _listening(port) or head.poll() is not None:
                break
            time.sleep(0.1)
        assert _listening(port), f"the token-auth Ray head never listened on {port}"
        yield f"127.0.0.1:{port}"
    finally:
        # The whole session (gcs, raylet, their workers) at once: a graceful stop waits 30 s.
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(60)
        shutil.rmtree(ray_dir, ignore_errors=True)


def test_a_cluster_that_wants_a_token_is_one_line_that_names_the_token(
    token_cluster: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["HOME"] = str(tmp_path / "client")  # no ~/.ray/auth_token either
    done = subprocess.run(
        [sys.executable, "-c", _CLIENT, token_cluster],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.stdout.splitlines() == [
        f"ClusterError: the Ray cluster at {token_cluster} refused this client's token (Ray: "
        "Authentication token is missing or incorrect): the cluster uses token "
        "authentication, so export RAY_AUTH_MODE=token here, with the cluster's token in "
        "RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH"
    ], done.stderr[-2000:]
    # Ray's core warned once a second while it retried; none of it reaches the terminal.
    assert "InvalidAuthToken" not in done.stderr
