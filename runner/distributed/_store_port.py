"""The store as every asynchronous part of a run asks it: the feeder (what is pending, what is
left to score) and a batch-mode backend (its ledger of batches).

One class, whatever holds the store: the run's store actor, or a :class:`Store` open in this
process (tests, tools). Each method names the store actor's method it calls, through
``invoke(name, *args)``: :meth:`StorePort.of_actor` sends it to the actor,
:meth:`StorePort.local` serves it from a :class:`StoreActor` over an open store, so both paths
run the same code. ``run --limit`` is applied here, once: the pending calls of the requests it
allows, the rest of the grid left for a later run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from conditions import RequestKey
from runner.distributed._remote import call
from runner.distributed._store_actor import StoreActor
from runner.store import (
    BatchKey,
    BatchProblem,
    BatchRecord,
    Pending,
    ResponseRow,
    Store,
    pending_rows,
)

Invoke = Callable[..., Awaitable[Any]]  # (the store actor's method, *its arguments) -> result


class StorePort:
    """The store, asked asynchronously (see the module docstring)."""

    def __init__(self, invoke: Invoke, allowed: frozenset[RequestKey] | None = None) -> None:
        self._invoke = invoke
        self.allowed = allowed

    @classmethod
    def local(cls, store: Store, allowed: frozenset[RequestKey] | None = None) -> StorePort:
        """The port over ``store``, open in this process."""
        actor = StoreActor.serving(store)

        async def invoke(name: str, *args: Any) -> Any:
            return getattr(actor, name)(*args)

        return cls(invoke, allowed)

    @classmethod
    def of_actor(cls, handle: Any, allowed: frozenset[RequestKey] | None = None) -> StorePort:
        """The port over the store actor ``handle`` (the driver's, a batch-mode backend's)."""

        async def invoke(name: str, *args: Any) -> Any:
            return await call(getattr(handle, name).remote(*args))

        return cls(invoke, allowed)

    def limited(self, allowed: frozenset[RequestKey] | None) -> StorePort:
        """This port, with only ``allowed`` requests pending (``run --limit``)."""
        return StorePort(self._invoke, allowed)

    # -- the feeder's -----------------------------------------------------------------------

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        """The calls of ``configurations`` with no finished record yet, question by question
        (and only the allowed requests', under ``run --limit``)."""
        calls = pending_rows(await self._invoke("pending_table", list(configurations)))
        if self.allowed is None:
            return calls
        return [c for c in calls if c.request in self.allowed]

    async def unscored(self) -> int:
        """Stored answers without a score."""
        left: int = await self._invoke("unscored")
        return left

    async def requeue_unscored(self) -> None:
        """Hand answers a scorer took but never scored to the next scorer that asks."""
        await self._invoke("requeue_unscored")

    # -- a batch-mode backend's ledger (runner.batch.Ledger) --------------------------------

    async def open_batches(self, backend: str) -> list[BatchRecord]:
        found: list[BatchRecord] = await self._invoke("open_batches", backend)
        return found

    async def batch_keys(self, batch: str) -> list[BatchKey]:
        keys: list[BatchKey] = await self._invoke("batch_keys", batch)
        return keys

    async def remote_ids(self, provider: str) -> set[str]:
        ids: set[str] = await self._invoke("remote_ids", provider)
        return ids

    async def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None:
        await self._invoke("record_batch", batch, list(keys))

    async def update_batch(self, batch: str, changes: dict[str, object]) -> BatchRecord:
        record: BatchRecord = await self._invoke("update_batch", batch, changes)
        return record

    async def write_responses(self, rows: list[ResponseRow]) -> object:
        return await self._invoke("write_responses", rows)

    async def record_problems(self, problems: list[BatchProblem]) -> object:
        return await self._invoke("record_problems", problems)


__all__ = ["Invoke", "StorePort"]
