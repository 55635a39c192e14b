"""The distributed run: Ray actors per backend, one store actor, a pool of scoring actors.

The actors are thin wrappers (``_actors``) over plain classes tested without Ray:
:class:`BackendWorker` (one backend's calls, every record stored before the next call),
:class:`Scorer` and :class:`BoxScorer` (score rows for stored answers) and
:class:`GroupCommit` (many writers, one grouped write at a time). The run's policy — chunks
and back-pressure, restarts, the quota wait, scoring rounds — is :class:`Feeder`, plain asyncio
over small ports. :func:`run_experiment` is the driver (``_driver``): the lifecycle on Ray. Around
it: what is settled before the actors start, the pre-flight included (``_prepare``); where the
actors start and how a dead one starts again (``_fleet``); how the run ended, as data
(``_report``: :class:`RunReport`), written out by :func:`summary_lines` (:mod:`runner.summary`,
beside the live view). Every Ray call outside the actor declarations is in ``_ray``.

The package imports its names on first use (``_HOMES``): every actor's Ray process imports this
package before its actor's module, and the modules only a driver needs (the pre-flight, the
grid, the spending cap, the live view) cost each of those processes a third of a second of CPU
while the run's first call waits for them.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from runner._port import CallPort, Outcome, Shape, Stop, Tally, online_shape
    from runner.distributed._actors import CONTROL, QUERIES
    from runner.distributed._driver import run_experiment
    from runner.distributed._feeder import (
        Feed,
        Feeder,
        FeedPolicy,
        PendingSource,
        RunFailed,
        WorkerLost,
        score_to_the_end,
    )
    from runner.distributed._group_commit import GroupCommit
    from runner.distributed._options import RunOptions
    from runner.distributed._ray import query_running_store, snapshot_running_store
    from runner.distributed._report import BackendReport, BatchReport, RunReport
    from runner.distributed._scorer import BoxScorer, Scorer, scorer_for
    from runner.distributed._spend import SpendCap, WorstCase
    from runner.distributed._store_port import StorePort
    from runner.distributed._watch import read_run, watch_run
    from runner.distributed._worker import BackendSetup, BackendWorker, DriverGone, WorkerStats
    from runner.summary import summary_lines

# Where each public name is imported from on first use: the imports above, which only type
# checkers run.
_HOMES = {
    "runner._port": ("CallPort", "Outcome", "Shape", "Stop", "Tally", "online_shape"),
    "runner.distributed._actors": ("CONTROL", "QUERIES"),
    "runner.distributed._group_commit": ("GroupCommit",),
    "runner.distributed._driver": ("run_experiment",),
    "runner.distributed._feeder": (
        "Feed", "Feeder", "FeedPolicy", "PendingSource", "RunFailed", "WorkerLost",
        "score_to_the_end",
    ),
    "runner.distributed._options": ("RunOptions",),
    "runner.distributed._ray": ("query_running_store", "snapshot_running_store"),
    "runner.distributed._report": ("BackendReport", "BatchReport", "RunReport"),
    "runner.distributed._scorer": ("BoxScorer", "Scorer", "scorer_for"),
    "runner.distributed._spend": ("SpendCap", "WorstCase"),
    "runner.distributed._store_port": ("StorePort",),
    "runner.distributed._watch": ("read_run", "watch_run"),
    "runner.distributed._worker": ("BackendSetup", "BackendWorker", "DriverGone", "WorkerStats"),
    "runner.summary": ("summary_lines",),
}  # fmt: skip
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    """A public name, imported now and kept (PEP 562)."""
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "CONTROL",
    "QUERIES",
    "BackendReport",
    "BackendSetup",
    "BackendWorker",
    "BatchReport",
    "BoxScorer",
    "CallPort",
    "DriverGone",
    "Feed",
    "FeedPolicy",
    "Feeder",
    "GroupCommit",
    "Outcome",
    "PendingSource",
    "RunFailed",
    "RunOptions",
    "RunReport",
    "Scorer",
    "Shape",
    "SpendCap",
    "Stop",
    "StorePort",
    "Tally",
    "WorkerLost",
    "WorkerStats",
    "WorstCase",
    "online_shape",
    "query_running_store",
    "read_run",
    "run_experiment",
    "score_to_the_end",
    "scorer_for",
    "snapshot_running_store",
    "summary_lines",
    "watch_run",
]
