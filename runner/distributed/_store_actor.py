"""The store actor's class: the only writer of the experiment file, plain Python.

Declared a Ray actor in ``_actors`` (``RemoteStore``); served in this process by
:meth:`StoreActor.serving` for :meth:`StorePort.local <runner.distributed.StorePort.local>`,
so both paths run the same methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from runner.distributed._remote import node_id
from runner.estimate import Limited
from runner.store import (
    BatchKey,
    BatchProblem,
    BatchRecord,
    CellProgress,
    ControlRow,
    ErrorCount,
    GridRow,
    Pending,
    Progress,
    Registration,
    ResponseRow,
    ScoreJob,
    ScoreRow,
    Store,
    StoreCopy,
    StoreError,
)


class StoreClosed(StoreError):
    """The run's store actor is not serving (its run has ended)."""


class StoreActor:
    """The only writer of the experiment file; calls are served one at a time, in order,
    except users' queries, which run in threads of their own (the ``QUERIES`` group of
    ``_actors``) so that a slow one never holds up the run's writes or its monitor, and their
    cancels and keep-alives (``CONTROL``), which never wait for a query."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._finished = False
        self._opened: Store | None = None
        self._limited: Limited | None = None  # --limit's totals, for a monitor elsewhere

    @classmethod
    def serving(cls, store: Store) -> StoreActor:
        """The actor's methods over ``store``, open in this process (``StorePort.local``)."""
        actor = cls(store.path)
        actor._opened = store
        return actor

    def open(self) -> None:
        """Open the file (a method, not the constructor: its errors reach the driver whole)."""
        if self._opened is None:
            self._opened = Store(self._path)

    @property
    def _store(self) -> Store:
        if self._opened is None:
            # Not yet opened, or closed as its run ends: a watcher or a query that comes
            # in between is told the run is over (the file is free to open read-only).
            raise StoreClosed(f"{self._path}: the run's store is closed")
        return self._opened

    def register(
        self,
        configurations: Sequence[Registration],
        grid: Sequence[GridRow] | pa.Table,
        images: Path | None = None,
        experiment: Path | None = None,
    ) -> list[tuple[str, str | None, int]]:
        return self._store.register(configurations, grid, images, experiment)

    def pending(self, configurations: Sequence[str] | None = None) -> list[Pending]:
        return self._store.repository.pending(configurations)

    def pending_table(self, configurations: Sequence[str] | None = None) -> pa.Table:
        """:meth:`pending` as the driver takes it: columns (``runner.store.pending_rows``)."""
        return self._store.repository.pending_table(configurations)

    def write_responses(self, rows: Sequence[ResponseRow]) -> int:
        return self._store.write_responses(rows)

    def take_unscored(self, limit: int) -> list[ScoreJob] | None:
        """Answers to score; None once the run is over and none is left."""
        jobs = self._store.score_queue.take(limit)
        if not jobs and self._finished:
            return None
        return jobs

    def write_scores(self, scores: Sequence[ScoreRow], controls: Sequence[ControlRow]) -> None:
        self._store.repository.write_scores(scores, controls)

    def finish(self) -> None:
        """No more responses will come: scorers stop once the queue is empty."""
        self._finished = True

    def requeue_unscored(self) -> int:
        return self._store.requeue_unscored()

    def unscored(self) -> int:
        return self._store.repository.unscored()

    def progress(self) -> list[Progress]:
        return self._store.repository.progress()

    def cells(self) -> list[CellProgress]:
        return self._store.repository.cells()

    def error_counts(self) -> list[ErrorCount]:
        return self._store.repository.error_counts()

    def limit(self, limited: Limited) -> None:
        """The run sends only ``--limit``'s requests: ``groundbench monitor`` counts those."""
        self._limited = limited

    def limited(self) -> Limited | None:
        return self._limited

    # The batch ledger (runner.batch.Ledger, through StorePort.of_actor).

    def held(self) -> int:
        return self._store.repository.held()

    def open_batches(self, backend: str) -> list[BatchRecord]:
        return self._store.repository.batches(backend, open_only=True)

    def batch_keys(self, batch: str) -> list[BatchKey]:
        return self._store.repository.batch_keys(batch)

    def remote_ids(self, provider: str) -> set[str]:
        return self._store.repository.remote_ids(provider)

    def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None:
        self._store.repository.record_batch(batch, keys)

    def update_batch(self, batch: str, changes: dict[str, object]) -> BatchRecord:
        return self._store.repository.update_batch(batch, **changes)

    def record_problems(self, problems: Sequence[BatchProblem]) -> int:
        return self._store.repository.record_problems(problems)

    def query(
        self, sql: str, timeout_s: float, token: str
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A user's read-only query during the run (``groundbench sql``); call it in the
        ``QUERIES`` group, which has a thread more than the store runs queries at once, so
        that one more is refused at once rather than queued."""
        return self._store.queries.answer(sql, timeout_s, token)

    def snapshot(self, timeout_s: float, token: str) -> StoreCopy:
        """Every table and view as of one moment (``report`` and ``show`` during the run); call
        it in the ``QUERIES`` group: it takes a query's slot."""
        return self._store.queries.copy(timeout_s, token)

    def cancel(self, token: str) -> bool:
        """Stop the query of ``token`` (its client was stopped); call it in ``CONTROL``, which
        no query holds."""
        return self._opened.queries.cancel(token) if self._opened is not None else False

    def keep(self, token: str) -> bool:
        """The client of ``token``'s query still waits (every ``KEEP_EVERY_S``); call it in
        ``CONTROL``."""
        return self._opened.queries.keep(token) if self._opened is not None else False

    def queries(self) -> int:
        """Users' queries running now."""
        return self._opened.queries.running() if self._opened is not None else 0

    def node(self) -> str:
        return node_id()

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None


__all__ = ["StoreActor", "StoreClosed"]
