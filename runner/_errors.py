"""Every error groundbench raises on purpose, and the one place each is told to a person.

The whole tree (``tests/runner/test_errors.py`` holds it equal to the real subclasses)::

    GroundbenchError                    anything groundbench refuses on purpose (in scoring)
    ├── ScoringError (ValueError)       a reference scoring cannot judge against
    │   ├── RingError                   a flat coordinate list that is no polygon ring
    │   └── AnnotationError             an annotation that cannot serve as a referent or distractor
    │       ├── CrowdAnnotationError    an RLE (crowd) segmentation, which has no polygon to select
    │       └── DegeneratePartError     the selected part has < 3 distinct vertices or zero area
    ├── ConditionsError (ValueError)    an experimental design or its data refused
    │   ├── DataFileError               a data file missing, malformed or inconsistent (names it)
    │   │   └── SchemaTooNewError       a part of the experiment file made by a newer groundbench
    │   ├── ProtocolMismatchError       results made under another protocol hash than the run's
    │   └── CohortMismatchError         the experiment file already holds another cohort
    │       └── BoxSetMismatchError     ... or another box set, or a cohort where a box set goes
    └── RunnerError                     a run, a store or an output that cannot go on
        ├── ConfigError                 a configuration that cannot run as written (provider, key)
        ├── ClusterError                a Ray cluster that cannot be joined (address, token)
        ├── OutputError                 an output folder or file that cannot be written
        ├── CallError                   a call that produced no usable response (its kind says why)
        │   ├── RateLimited             throttled by the provider: wait (retry_after) and send again
        │   ├── QuotaExhausted          the account can make no more calls: terminal
        │   ├── Transient               a 5xx, overload, timeout or reset: another try may pass
        │   │   ├── Unreadable          a 2xx whose answer cannot be read: billed, sent next run
        │   │   └── Undecided           several batches could be the lost one: a later look tells
        │   ├── Fatal                   the request itself refused: never retried
        │   │   ├── Refused             the key, the account's permission or the model refused
        │   │   ├── TooLarge            a response body past the backend's max_response_bytes
        │   │   ├── OffOrigin           a keyed request to another address than the origin: unsent
        │   │   └── BadId               a server's batch or file id that breaks the id rule
        │   └── DriverGone              a worker's driver gone: nothing it records would be read
        ├── StoreError                  a file that cannot serve as a store, or a query that fails
        │   └── StoreClosed             the run's store actor no longer serves (its run ended)
        ├── OverlayError                a question or answer to draw that the store does not hold
        ├── OverCap                     a pre-flight that could cost more than the spending cap
        ├── LifelineError               a worker that cannot hear its driver, so must not send
        ├── RunFailed                   a run that cannot go on: an actor kept dying, a store failed
        ├── WorkerLost                  a backend's or scorer's worker died with work in hand
        ├── PreflightFailed             a pre-flight call failed: the run would pay for its like
        ├── FolderTaken                 a file in a report's folder that no report wrote
        └── BrowserError                Chromium missing, failed or too slow for a report's picture

``scoring`` and ``conditions`` never import ``runner``, so the root sits in the one package the
other two import (``scoring``); ``ScoringError`` and ``ConditionsError`` stay ``ValueError`` s,
as callers that catch bad input as ``ValueError`` expect.

An error of the tree is told in one line and exit status 2 by :func:`told`, at both boundaries
where one meets a person: the command line (:func:`runner.cli.main`) and the Ray boundary
(:func:`runner.distributed._remote.cause`, which lets exactly what :func:`told` tells out of an
actor as itself). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

from scoring import GroundbenchError

REFUSED = 2  # the exit status of an error told in a line: the input or the set-up was refused


class RunnerError(GroundbenchError):
    """Base of every error the runner raises on purpose."""


class ConfigError(RunnerError):
    """A configuration cannot be run as written (unknown provider, unmappable setting, no key)."""


class ClusterError(RunnerError):
    """The Ray cluster asked for cannot be joined (not running, wrong address, no token)."""


@dataclass(frozen=True)
class Told:
    """How an error is told to a person: the process's exit status and one line."""

    status: int
    line: str


def told(exc: BaseException) -> Told | None:
    """The exit status and line ``exc`` is told in; ``None`` for a bug (its traceback stays).

    An error of the tree is told in its own message, with anything shaped like an API key
    redacted; a DuckDB error (a store that opened but is damaged inside) as a store that could
    not be read. The packages are imported here, as an error is met, so that ``--help``
    imports none of them.
    """
    import duckdb

    from runner.backends import redact
    from runner.store import DAMAGED_FILE, first_line

    if isinstance(exc, GroundbenchError):
        return Told(status=REFUSED, line=redact(str(exc)))
    if isinstance(exc, duckdb.Error):
        line = first_line(exc)
        if DAMAGED_FILE not in line:
            line += "; if its file is damaged, restore it from a copy"
        return Told(status=REFUSED, line=f"the store could not be read: {line}")
    return None
