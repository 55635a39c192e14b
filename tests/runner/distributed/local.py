"""A run as the driver makes it, in this process and without Ray: the store registers the
grid, the :class:`Feeder` feeds one real :class:`BackendWorker`, and the answers are scored.

The driver's Ray lifecycle adds actors and names around exactly these parts; the rules that
decide whether a paid call is lost or sent twice are the feeder's and the worker's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from conditions import Cohort, Configuration, protocol_hash, task_of
from runner.backends import ApiKey, attempts_allowed
from runner.distributed import (
    BackendSetup,
    BackendWorker,
    Feed,
    Feeder,
    FeedPolicy,
    Scorer,
    StorePort,
)
from runner.store import GridRow, Registration, ResponseRow, Store


def register(
    store: Store, cohort: Cohort, configuration: Configuration, budgets: Sequence[int]
) -> None:
    """The grid of ``configuration`` over ``cohort`` (the box question included), as
    ``runner.plan.grid_of`` makes it."""
    attempts = attempts_allowed(None, configuration.best_effort)
    keys = task_of(cohort).plan([configuration], budgets, box=True)
    store.register(
        [Registration(configuration.name, protocol_hash(cohort.hash, configuration),
                      configuration.provider, configuration.model, attempts, "{}")],
        [GridRow.of(k, attempts=attempts) for k in keys],
    )  # fmt: skip


def run_here(
    path: Path,
    cohort: Cohort,
    images: Path,
    cache: Path,
    configuration: Configuration,
    key: str,
    budgets: Sequence[int] = (8, 16),
) -> bool:
    """One run of ``configuration``'s grid into the store at ``path``; whether it completed.

    A quota error stops the backend, as it stops the driver's (no wait): the next run sends
    what is left.
    """
    with Store(path) as store:
        register(store, cohort, configuration, budgets)

        async def write(rows: Sequence[ResponseRow]) -> int:
            return store.write_responses(rows)

        def worker() -> BackendWorker:
            setup = BackendSetup(configuration.transport, (configuration,), images, cache)
            return BackendWorker(setup, cohort, write, lambda _: ApiKey(key))

        async def main() -> None:
            first = worker()
            feed = Feed(
                configuration.provider, (configuration.name,), first, _no_restart, first.shape
            )
            try:
                await Feeder(StorePort.local(store), FeedPolicy(), lambda _: None).drive(feed)
            finally:
                await first.close()

        asyncio.run(main())
        store.repository.write_scores(*Scorer(cohort).score(store.score_queue.take(1_000_000)))
        return store.repository.pending() == []


async def _no_restart() -> BackendWorker:
    raise AssertionError("a worker in this process does not die")
