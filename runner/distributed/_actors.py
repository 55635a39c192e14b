"""The run's Ray actors: thin wrappers over :class:`Store`, :class:`BackendWorker`,
:class:`Scorer` and :class:`Simulator`, each of which is tested without Ray.

- one store actor owns the experiment file (DuckDB allows one writing process), pinned to the
  driver's node, where the file is;
- one async backend actor per backend enforces that backend's limits for the whole cluster;
- a pool of scoring actors takes stored answers as they land and writes their scores;
- with ``base_url = "simulator"``, a simulator actor serves the model APIs on the driver's node.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import ray

from conditions import Configuration, Questions, VariantCache
from runner._port import Outcome, Shape
from runner.backends import key_for
from runner.batch import BatchOutcome
from runner.distributed._batch_worker import BatchSpec, BatchWorker
from runner.distributed._lifeline import LifelineAddress
from runner.distributed._scorer import BoxScorer, Scorer
from runner.distributed._store_port import StorePort
from runner.distributed._worker import BackendWorker, WorkerStats
from runner.simulator import SimSpec, Simulator, serving
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
    StoreError,
)

SCORE_BATCH = 512  # answers a scorer takes at most at once
SMALL_BATCH = 64  # fewer than this: wait a little before asking again, so batches grow
IDLE_POLL_S = 0.05  # how long a scorer with little to do waits before asking again


class StoreClosed(StoreError):
    """The run's store actor is not serving (its run has ended)."""


class StoreActor:
    """The only writer of the experiment file; calls are served one at a time, in order,
    except users' queries, which run in threads of their own (:data:`QUERIES`) so that a slow
    one never holds up the run's writes or its monitor."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._finished = False
        self._opened: Store | None = None

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
    ) -> list[tuple[str, str | None, int]]:
        return self._store.register(configurations, grid, images)

    def pending(self, configurations: Sequence[str] | None = None) -> list[Pending]:
        return self._store.pending(configurations)

    def pending_table(self, configurations: Sequence[str] | None = None) -> pa.Table:
        """:meth:`pending` as the driver takes it: columns (``runner.store.pending_rows``)."""
        return self._store.pending_table(configurations)

    def write_responses(self, rows: Sequence[ResponseRow]) -> int:
        return self._store.write_responses(rows)

    def take_unscored(self, limit: int) -> list[ScoreJob] | None:
        """Answers to score; None once the run is over and none is left."""
        jobs = self._store.take_unscored(limit)
        if not jobs and self._finished:
            return None
        return jobs

    def write_scores(self, scores: Sequence[ScoreRow], controls: Sequence[ControlRow]) -> None:
        self._store.write_scores(scores, controls)

    def finish(self) -> None:
        """No more responses will come: scorers stop once the queue is empty."""
        self._finished = True

    def requeue_unscored(self) -> int:
        return self._store.requeue_unscored()

    def unscored(self) -> int:
        return self._store.unscored()

    def progress(self) -> list[Progress]:
        return self._store.progress()

    def cells(self) -> list[CellProgress]:
        return self._store.cells()

    def error_counts(self) -> list[ErrorCount]:
        return self._store.error_counts()

    # The batch ledger (runner.batch.Ledger, through StorePort.of_actor).

    def held(self) -> int:
        return self._store.held()

    def open_batches(self, backend: str) -> list[BatchRecord]:
        return self._store.batches(backend, open_only=True)

    def batch_keys(self, batch: str) -> list[BatchKey]:
        return self._store.batch_keys(batch)

    def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None:
        self._store.record_batch(batch, keys)

    def update_batch(self, batch: str, changes: dict[str, object]) -> BatchRecord:
        return self._store.update_batch(batch, **changes)

    def record_problems(self, problems: Sequence[BatchProblem]) -> int:
        return self._store.record_problems(problems)

    def query(
        self, sql: str, timeout_s: float, token: str
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A user's read-only query during the run (``groundbench sql``); call it in the
        :data:`QUERIES` group."""
        return self._store.read(sql, timeout_s, token)

    def cancel(self, token: str) -> bool:
        """Stop the query of ``token`` (its client went away); call it in :data:`QUERIES`."""
        return self._opened.cancel(token) if self._opened is not None else False

    def node(self) -> str:
        return _node()

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None


class BackendActor:
    """One backend: its configurations' calls under one rate limit, records sent to the store."""

    def __init__(
        self,
        configurations: Sequence[Configuration],
        questions: Questions,
        images: Path,
        cache: Path,
        store: Any,
        simulator_key: str | None,
        lifeline: LifelineAddress | None = None,
    ) -> None:
        self._worker = BackendWorker(
            configurations,
            questions,
            images,
            cache,
            lambda rows: store.write_responses.remote(rows),
            key_for(simulator_key),
            lifeline,
        )
        # The questions are long-lived: keep the collector from scanning them after every
        # batch.
        gc.collect()
        gc.freeze()

    def shape(self) -> Shape:
        return self._worker.shape

    async def lease(self, calls: Sequence[Pending]) -> Outcome:
        return await self._worker.lease(calls)

    async def collect_open(self) -> Outcome:
        return await self._worker.collect_open()

    async def resume_after_quota(self) -> None:
        await self._worker.resume_after_quota()

    def stats(self) -> WorkerStats:
        return self._worker.stats()

    def node(self) -> str:
        return _node()


class BatchBackendActor:
    """One backend in batch mode: its configurations' calls as the provider's batches."""

    def __init__(
        self,
        configurations: Sequence[Configuration],
        questions: Questions,
        images: Path,
        cache: Path,
        store: Any,
        simulator_key: str | None,
        spec: BatchSpec,
        lifeline: LifelineAddress | None = None,
    ) -> None:
        self._worker = BatchWorker(
            configurations, questions, images, cache, StorePort.of_actor(store),
            key_for(simulator_key), spec, lifeline,
        )  # fmt: skip
        gc.collect()
        gc.freeze()

    def shape(self) -> Shape:
        return self._worker.shape

    async def lease(self, calls: list[Pending]) -> Outcome:
        return await self._worker.lease(calls)

    async def collect_open(self) -> Outcome:
        return await self._worker.collect_open()

    async def resume_after_quota(self) -> None:
        await self._worker.resume_after_quota()

    def report(self) -> BatchOutcome:
        """Its batches this run, for the run's report."""
        return self._worker.report()

    def stats(self) -> WorkerStats:
        return self._worker.stats()

    def node(self) -> str:
        return _node()


class ScoringActor:
    """Scores stored answers as they land, until the run is over and none is left."""

    def __init__(self, scorer: Scorer | BoxScorer) -> None:
        self._scorer = scorer
        gc.collect()
        gc.freeze()

    def node(self) -> str:
        return _node()

    def run(self, store: Any, batch: int = SCORE_BATCH) -> int:
        scored = 0
        writing = None
        while True:
            jobs = ray.get(store.take_unscored.remote(batch))
            if jobs is None:
                break
            if len(jobs) < SMALL_BATCH:
                # Each ask is a call the store actor serves between writes: while answers
                # trickle in, ask less often and take more at a time.
                time.sleep(IDLE_POLL_S)
            if not jobs:
                continue
            scores, controls = self._scorer.score(jobs)
            if writing is not None:  # one write in flight while the next batch is scored
                ray.get(writing)
            writing = store.write_scores.remote(scores, controls)
            scored += len(jobs)
        if writing is not None:
            ray.get(writing)
        return scored


class SimulatorActor:
    """The built-in model APIs, on loopback of the driver's node."""

    def __init__(self, questions: Questions, images: Path, cache: Path, spec: SimSpec) -> None:
        # The server reads each variant once, to index its fingerprint: few need stay in memory.
        self._simulator = Simulator(questions, images, VariantCache(cache, memory=32), spec)
        self._stack = contextlib.AsyncExitStack()

    async def start(self) -> str:
        url: str = await self._stack.enter_async_context(serving(self._simulator))
        return url

    def calls(self) -> int:
        return sum(self._simulator.stats.statuses.values())

    async def stop(self) -> None:
        await self._stack.aclose()


def _node() -> str:
    """The id of the Ray node this actor runs on (for placement checks and the cluster page)."""
    node: str = ray.get_runtime_context().get_node_id()
    return node


# Ray's handles for the classes above; resources and placement are set where they start.
# Users' queries and their cancels run in this group's threads, beside the calls of the run.
QUERIES = "queries"
QUERY_GROUPS = {QUERIES: 4}
# Ray's overloads of ray.remote omit concurrency_groups, which it takes (and .options() does not).
RemoteStore = ray.remote(concurrency_groups=QUERY_GROUPS)(StoreActor)  # type: ignore[call-overload]
RemoteBackend = ray.remote(BackendActor)
RemoteBatchBackend = ray.remote(BatchBackendActor)
RemoteScorer = ray.remote(ScoringActor)
RemoteSimulator = ray.remote(SimulatorActor)

__all__ = [
    "QUERIES",
    "QUERY_GROUPS",
    "BackendActor",
    "BatchBackendActor",
    "RemoteBackend",
    "RemoteBatchBackend",
    "RemoteScorer",
    "RemoteSimulator",
    "RemoteStore",
    "ScoringActor",
    "SimulatorActor",
    "StoreActor",
    "key_for",
]
