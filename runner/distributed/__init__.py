"""The distributed run: Ray actors per backend, one store actor, a pool of scoring actors.

The actors are thin wrappers (``_actors``) over plain classes tested without Ray:
:class:`BackendWorker` (one backend's calls, every record stored before the next call),
:class:`Scorer` (score rows for stored answers) and :class:`CommitBatcher` (many writers, one
batched write at a time). :func:`run_experiment` is the driver.
"""

from runner.distributed._batcher import CommitBatcher
from runner.distributed._driver import (
    BackendReport,
    RunFailed,
    RunOptions,
    RunReport,
    check_backends,
    ensure_cohort,
    run_experiment,
    summary_lines,
)
from runner.distributed._scorer import Scorer
from runner.distributed._watch import read_run, watch_run
from runner.distributed._worker import BackendWorker, ChunkOutcome, WorkerStats

__all__ = [
    "BackendReport",
    "BackendWorker",
    "ChunkOutcome",
    "CommitBatcher",
    "RunFailed",
    "RunOptions",
    "RunReport",
    "Scorer",
    "WorkerStats",
    "check_backends",
    "ensure_cohort",
    "read_run",
    "run_experiment",
    "summary_lines",
    "watch_run",
]
