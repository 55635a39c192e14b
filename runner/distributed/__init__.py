"""The distributed run: Ray actors per backend, one store actor, a pool of scoring actors.

The actors are thin wrappers (``_actors``) over plain classes tested without Ray:
:class:`BackendWorker` (one backend's calls, every record stored before the next call),
:class:`Scorer` and :class:`BoxScorer` (score rows for stored answers) and
:class:`CommitBatcher` (many writers, one batched write at a time). :func:`run_experiment` is
the driver.
"""

from runner.distributed._batcher import CommitBatcher
from runner.distributed._driver import (
    BackendReport,
    RunFailed,
    RunOptions,
    RunReport,
    check_backends,
    ensure_box_set,
    ensure_cohort,
    ensure_questions,
    run_experiment,
    summary_lines,
)
from runner.distributed._scorer import BoxScorer, Scorer, scorer_for
from runner.distributed._watch import read_run, watch_run
from runner.distributed._worker import BackendWorker, ChunkOutcome, WorkerStats

__all__ = [
    "BackendReport",
    "BackendWorker",
    "BoxScorer",
    "ChunkOutcome",
    "CommitBatcher",
    "RunFailed",
    "RunOptions",
    "RunReport",
    "Scorer",
    "WorkerStats",
    "check_backends",
    "ensure_box_set",
    "ensure_cohort",
    "ensure_questions",
    "read_run",
    "run_experiment",
    "scorer_for",
    "summary_lines",
    "watch_run",
]
