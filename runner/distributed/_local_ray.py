"""Starting a local Ray of this process's own — the one thing the console script does before
the command's modules are imported (:mod:`runner._launch`), so it imports only Ray.

Ray takes 2-3 s to start, most of it waiting on its own processes; ``groundbench run``'s imports
take about one more. Started here, early, the two overlap; the run then finds Ray started, and
claims it (:func:`claim_early`) to shut it down at its end as if it had started it itself.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

import ray

LOCAL = "local"  # ray.init's address for "start a new local Ray, even if one is running"
_early: list[bool] = []  # one entry once a Ray started early is running, unclaimed
_starting: list[threading.Event] = []  # set once it is up or failed, until waited for


def plain_prefixes() -> None:
    """Ray colours the "(BackendActor pid=…)" it puts before each line its workers print,
    terminal or not; where this process writes to no terminal (a log, a pipe), the prefix
    goes plain. Ray reads RAY_COLOR_PREFIX as it prints each line; one set by the user stands."""
    if not (sys.stdout.isatty() and sys.stderr.isatty()):
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")


def start_local(*, log_to_driver: bool = True, namespace: str | None = None) -> None:
    """Start a local Ray of this process's own, whatever else runs on the machine.

    Not Ray's default address (None): that joins the cluster the machine's last `ray start`
    noted in <temp dir>/ray_current_cluster, anyone's, and a run there sent that cluster's keys
    to this run's endpoints. "local" always starts one (ray.init, Ray 2.x)."""
    plain_prefixes()
    # Ray's own notices (token set-up, start-up) would drown the progress lines; errors stay.
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": log_to_driver}
    if namespace is not None:
        kwargs["namespace"] = namespace
    ray.init(address=LOCAL, include_dashboard=False, **kwargs)


def start_early() -> None:
    """Start, on a thread, the local Ray a run of this process will claim: the command goes on
    meanwhile (its imports, its questions, its pre-flight's calls), and waits for Ray only where
    it needs it (:func:`settle_early`). A failure is left for the run to meet again, where it is
    reported as a run's."""
    started = threading.Event()
    thread = threading.Thread(
        target=_start_early, args=(started,), name="groundbench-ray-start", daemon=True
    )
    _starting.append(started)
    thread.start()


def _start_early(started: threading.Event) -> None:
    try:
        start_local()
    except Exception:  # the run's own start says what is wrong, in its words
        return
    else:
        _early.append(True)
    finally:
        started.set()
    # Ray's own processes die with the thread that started them (Linux's parent-death signal
    # is the thread's, not the process's): this one stays, idle, as long as the process.
    threading.Event().wait()


def settle_early() -> None:
    """Wait for a Ray the console script is starting, if any, to be up (or to have failed)."""
    while _starting:
        _starting[-1].wait()
        _starting.pop()


def claim_early() -> bool:
    """Whether a Ray started early is running and now the caller's to shut down (once)."""
    settle_early()
    if _early and ray.is_initialized():
        _early.clear()
        return True
    return False


def stop_unclaimed() -> None:
    """Shut down a Ray started early that no run claimed (the command ended first: an error in
    the experiment, a failed pre-flight, Ctrl-C), once it is up."""
    settle_early()
    if claim_early():
        ray.shutdown()
