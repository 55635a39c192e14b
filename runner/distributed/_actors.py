"""The run's Ray actors: thin wrappers over :class:`StoreActor` (``_store_actor``),
:class:`BackendWorker`, :class:`Scorer` and :class:`Simulator`, each tested without Ray.

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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import ray

from conditions import Questions, VariantCache
from runner._errors import RunnerError
from runner._port import Outcome, Shape, Tally
from runner.backends import Account, key_for
from runner.batch import BatchOutcome
from runner.distributed._batch_worker import BatchSpec, BatchWorker
from runner.distributed._lifeline import LifelineAddress
from runner.distributed._remote import node_id
from runner.distributed._scorer import BoxScorer, Scorer
from runner.distributed._store_actor import StoreActor
from runner.distributed._store_port import StorePort
from runner.distributed._worker import BackendSetup, BackendWorker, WorkerStats
from runner.store import QUERY_SLOTS, Pending

if TYPE_CHECKING:
    from runner.simulator import SimSpec

SCORE_BATCH = 512  # answers a scorer takes at most at once
SMALL_BATCH = 64  # fewer than this: wait a little before asking again, so batches grow
IDLE_POLL_S = 0.05  # how long a scorer with little to do waits before asking again
W = TypeVar("W", BackendWorker, BatchWorker)


class _WorkerActor(Generic[W]):
    """A backend's actor around its worker, online or batch: the feeder's port (``shape``,
    ``lease``, ``collect_open``, ``resume_after_quota``) and the live view's counters, the
    same calls to either worker.

    A worker that cannot be made (its key not set on this node, say) is an error of ours at
    every call, the first being the driver's ``shape``: it reaches the driver as itself, one
    line. Raised in ``__init__``, it would reach it as Ray's ActorDiedError with the
    traceback as text, and Ray would print that too."""

    def __init__(self, make: Callable[[], W]) -> None:
        self._made: W | None = None
        self._refused: RunnerError | None = None
        try:
            self._made = make()
        except RunnerError as exc:
            self._refused = exc
            return
        # The questions are long-lived: keep the collector from scanning them after every
        # batch.
        gc.collect()
        gc.freeze()

    @property
    def _worker(self) -> W:
        if self._made is None:
            assert self._refused is not None
            raise self._refused
        return self._made

    def shape(self) -> Shape:
        return self._worker.shape

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        return await self._worker.lease(calls, input_bound)

    async def collect_open(self) -> Outcome:
        return await self._worker.collect_open()

    async def resume_after_quota(self) -> None:
        await self._worker.resume_after_quota()

    def stats(self) -> WorkerStats:
        return self._worker.stats()

    def node(self) -> str:
        return node_id()


class BackendActor(_WorkerActor[BackendWorker]):
    """One backend: its configurations' calls under one rate limit, records sent to the store.

    ``questions`` is an argument of its own, not a field of ``setup``: Ray resolves an object
    reference only where it is an argument (the driver puts the questions once, for all)."""

    def __init__(
        self,
        setup: BackendSetup,
        questions: Questions,
        store: Any,
        simulator_key: str | None,
        lifeline: LifelineAddress | None = None,
    ) -> None:
        def make() -> BackendWorker:
            write = lambda rows: store.write_responses.remote(rows)  # noqa: E731
            return BackendWorker(setup, questions, write, key_for(simulator_key), lifeline)

        super().__init__(make)

    def inherit(self, account: Account, before: Tally | None = None) -> None:
        """What only an online backend has: a limiter that counts the calls made before."""
        self._worker.inherit(account, before)


class BatchBackendActor(_WorkerActor[BatchWorker]):
    """One backend in batch mode: its configurations' calls as the provider's batches. What
    only it has: ``spec`` (its batch settings and spool) and :meth:`report`."""

    def __init__(
        self,
        setup: BackendSetup,
        questions: Questions,
        store: Any,
        simulator_key: str | None,
        spec: BatchSpec,
        lifeline: LifelineAddress | None = None,
    ) -> None:
        def make() -> BatchWorker:
            ledger = StorePort.of_actor(store)
            return BatchWorker(setup, questions, ledger, key_for(simulator_key), spec, lifeline)

        super().__init__(make)

    def report(self) -> BatchOutcome:
        """Its batches this run, for the run's report."""
        return self._worker.report()


class ScoringActor:
    """Scores stored answers as they land, until the run is over and none is left."""

    def __init__(self, scorer: Scorer | BoxScorer) -> None:
        self._scorer = scorer
        gc.collect()
        gc.freeze()

    def node(self) -> str:
        return node_id()

    def score_until_done(self, store: Any, batch: int = SCORE_BATCH) -> int:
        """Take the store's unscored answers, score them and write the scores, until the store
        says the run is over and none is left; the number scored."""
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
        # Imported here, not with the module: every actor's process imports this module, and
        # only the simulator's needs the server (an eighth of a second of CPU each).
        from runner.simulator import Simulator

        # The server reads each variant once, to index its fingerprint: few need stay in memory.
        self._simulator = Simulator(questions, images, VariantCache(cache, memory=32), spec)
        self._stack = contextlib.AsyncExitStack()

    async def start(self) -> str:
        from runner.simulator import serving

        url: str = await self._stack.enter_async_context(serving(self._simulator))
        return url

    def calls(self) -> int:
        return sum(self._simulator.stats.statuses.values())

    async def stop(self) -> None:
        await self._stack.aclose()


# Ray's handles for the classes above; resources and placement are set where they start.
# Users' queries run in QUERIES' threads, beside the calls of the run: one thread more than the
# store runs at once, so that one more query is refused at once, not queued behind them. Their
# cancels and keep-alives run in CONTROL, which no query holds: they reach a full pool.
QUERIES = "queries"
CONTROL = "control"
QUERY_GROUPS = {QUERIES: QUERY_SLOTS + 1, CONTROL: 1}
# Ray's overloads of ray.remote omit concurrency_groups, which it takes (and .options() does not).
RemoteStore = ray.remote(concurrency_groups=QUERY_GROUPS)(StoreActor)  # type: ignore[call-overload]
RemoteBackend = ray.remote(BackendActor)
RemoteBatchBackend = ray.remote(BatchBackendActor)
RemoteScorer = ray.remote(ScoringActor)
RemoteSimulator = ray.remote(SimulatorActor)

__all__ = [
    "CONTROL",
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
