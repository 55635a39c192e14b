"""Helpers of the run tests: run an experiment here, in the background or in a driver process
of its own, and read what its store holds."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from runner.distributed import RunOptions, RunReport, run_experiment
from runner.experiment import load_experiment
from runner.store import read_only


def run_once(
    path: Path, lines: list[str] | None = None, options: RunOptions | None = None
) -> RunReport:
    echo = lines.append if lines is not None else lambda _: None
    return run_experiment(load_experiment(path), options or RunOptions(progress_every_s=0.5), echo)


def query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with read_only(store) as con:
        return con.execute(sql).fetchall()


def assert_every_key_once(store: Path) -> None:
    """Every request complete, its answered attempts numbered 0..k-1 with no gap."""
    statuses = query(store, "SELECT status, count(*) FROM request_status GROUP BY ALL")
    assert [s for s, _ in statuses] == ["complete"]
    gaps = query(
        store,
        "SELECT configuration, condition, budget, qid, count(*), max(attempt) FROM responses "
        "WHERE outcome = 'answer' GROUP BY ALL HAVING count(*) <> max(attempt) + 1",
    )
    assert gaps == []
    orphans = query(
        store,
        "SELECT count(*) FROM responses "
        "ANTI JOIN grid USING (configuration, condition, budget, qid)",
    )
    assert orphans == [(0,)]


@contextmanager
def in_background(path: Path) -> Iterator[list[RunReport]]:
    """The run of ``path`` in a thread; its report lands in the yielded list by the exit."""
    result: list[RunReport] = []
    runner = threading.Thread(target=lambda: result.append(run_once(path)))
    runner.start()
    try:
        yield result
    finally:
        runner.join(120)


def until(condition: Callable[[], bool], timeout_s: float = 600.0) -> None:
    """Wait for ``condition``; fail, rather than go on without it, if it never comes.

    The bound is for a hung run, far above what a starved machine takes: a test that went on
    regardless would act (signal, kill) at the wrong moment and fail somewhere misleading.
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:.0f} s for a point the run never reached")
        time.sleep(0.05)


# The driver takes Ctrl-C as a user's terminal gives it, set explicitly: an ignored signal stays
# ignored across fork and exec, and a suite started as a background job of a non-interactive
# shell (`.ci/run &`, nohup) runs with SIGINT and SIGQUIT ignored (SigIgn 0x81001006 was seen) —
# a driver forked from it honours that, as it should, and never stops on Ctrl-C.
_DRIVER = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from runner.cli import main; main()"
)


def driver_process(path: Path, address: str, cwd: Path, *options: str) -> subprocess.Popen[str]:
    """``groundbench run`` (with ``options``) in a process of its own, joining the Ray at
    ``address``."""
    return subprocess.Popen(
        [sys.executable, "-c", _DRIVER, "run", str(path),
         "--address", address, "--progress-every", "0.3", *options],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )  # fmt: skip


def stored_after_kill(store: Path) -> dict[Any, Any]:
    """The answers in the store once the killed run's store actor has let the file go."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with duckdb.connect(str(store), read_only=True) as con:
                rows = con.execute(
                    "SELECT (configuration, condition, budget, qid, attempt), answer "
                    "FROM responses WHERE outcome = 'answer'"
                ).fetchall()
                return dict(rows)
        except duckdb.IOException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
