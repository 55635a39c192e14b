"""A :class:`~runner.batch.Ledger` over a store open in this process (tests, tools); the run's
is the store actor's (``runner.distributed``)."""

from __future__ import annotations

from collections.abc import Sequence

from runner.store import BatchKey, BatchProblem, BatchRecord, Pending, ResponseRow, Store


class StoreLedger:
    """:class:`~runner.store.Store`'s batch ledger, as the runner's asynchronous port."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        return self.store.pending(configurations)

    async def open_batches(self, backend: str) -> list[BatchRecord]:
        return self.store.batches(backend, open_only=True)

    async def batch_keys(self, batch: str) -> list[BatchKey]:
        return self.store.batch_keys(batch)

    async def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None:
        self.store.record_batch(batch, keys)

    async def update_batch(self, batch: str, changes: dict[str, object]) -> BatchRecord:
        return self.store.update_batch(batch, **changes)

    async def write_responses(self, rows: list[ResponseRow]) -> object:
        return self.store.write_responses(rows)

    async def record_problems(self, problems: list[BatchProblem]) -> object:
        return self.store.record_problems(problems)
