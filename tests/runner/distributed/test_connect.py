"""Joining a Ray cluster that refuses this client: one line that says why, no Ray warnings."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runner.distributed.conftest import ray_head

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


@pytest.fixture
def token_cluster(tmp_path: Path) -> Iterator[str]:
    """A one-node Ray cluster that asks every client for a token (``RAY_AUTH_MODE=token``)."""
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    with ray_head(tmp_path / "head", token) as address:
        yield address


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
