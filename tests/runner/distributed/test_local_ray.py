"""The local Ray the console script starts early, on a thread, for the run to claim: the
command is not held up by it, waits for it only where it needs it, shuts it down once, and
Ray's processes outlive the thread that started them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest
import ray

from runner.distributed import _local_ray


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    """Ray's start held until the test lets it go; its shut-downs counted."""
    state: dict[str, object] = {"up": False, "shutdowns": 0, "fail": False}
    release = threading.Event()

    def start_local() -> None:
        release.wait(30)
        if state["fail"]:
            raise RuntimeError("no Ray here")
        state["up"] = True

    def shutdown() -> None:
        state["shutdowns"] = int(str(state["shutdowns"])) + 1
        state["up"] = False

    monkeypatch.setattr(_local_ray, "start_local", start_local)
    monkeypatch.setattr(ray, "is_initialized", lambda: state["up"])
    monkeypatch.setattr(ray, "shutdown", shutdown)
    monkeypatch.setattr(_local_ray, "_early", [])
    monkeypatch.setattr(_local_ray, "_starting", [])
    state["release"] = release
    yield state
    release.set()


def _release(state: dict[str, object]) -> None:
    release = state["release"]
    assert isinstance(release, threading.Event)
    release.set()


def test_the_command_goes_on_while_ray_starts_and_claims_it_once_up(
    fake_ray: dict[str, object],
) -> None:
    _local_ray.start_early()
    assert fake_ray["up"] is False  # returned before Ray was up
    claimed: list[bool] = []
    waiter = threading.Thread(target=lambda: claimed.append(_local_ray.claim_early()))
    waiter.start()
    waiter.join(0.2)
    assert not claimed  # the claim waits for the start
    _release(fake_ray)
    waiter.join(30)
    assert claimed == [True]
    assert _local_ray.claim_early() is False  # once
    _local_ray.stop_unclaimed()
    assert fake_ray["shutdowns"] == 0  # the claimant shuts it down, not the console script


def test_a_ray_no_run_claimed_is_shut_down_once_up(fake_ray: dict[str, object]) -> None:
    _local_ray.start_early()
    _release(fake_ray)
    _local_ray.stop_unclaimed()
    assert fake_ray["shutdowns"] == 1
    _local_ray.stop_unclaimed()
    assert fake_ray["shutdowns"] == 1


def test_a_failed_early_start_is_left_for_the_run_to_meet(fake_ray: dict[str, object]) -> None:
    fake_ray["fail"] = True
    _local_ray.start_early()
    _release(fake_ray)
    assert _local_ray.claim_early() is False
    _local_ray.stop_unclaimed()
    assert fake_ray["shutdowns"] == 0


def test_rays_processes_outlive_the_thread_that_started_them() -> None:
    # Linux's parent-death signal follows the thread that started a process: a Ray started on a
    # thread that then ended lost its GCS and raylet, and the run failed a minute later.
    script = textwrap.dedent(
        """
        import time
        import ray
        from runner.distributed._local_ray import claim_early, start_early
        start_early()
        assert claim_early()
        time.sleep(2)  # long enough for killed processes to be gone
        print("answer", ray.get(ray.remote(lambda: 7).remote(), timeout=60))
        ray.shutdown()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "answer 7" in done.stdout
