"""A group commit: many coroutines' rows written a group at a time, each caller released once its
row is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

Row = TypeVar("Row")


class GroupCommit(Generic[Row]):
    """Gathers rows from concurrent callers into one write at a time.

    :meth:`put` returns only when the write holding its row has finished (and raises what the
    write raised), so a caller that waits before its next paid call never has more than one
    response that a crash could lose. While a write is in flight new rows gather for the next:
    the busier the run, the larger the groups.
    """

    def __init__(
        self,
        write: Callable[[list[Row]], Awaitable[object]],
        max_rows: int = 4096,
        linger_s: float = 0.0,
    ):
        self._write = write
        self._max_rows = max_rows
        self._linger_s = linger_s
        self._rows: list[Row] = []
        self._waiters: list[asyncio.Future[None]] = []
        self._drain: asyncio.Task[None] | None = None

    async def put(self, row: Row) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        self._waiters.append(waiter)
        if self._drain is None or self._drain.done():
            self._drain = asyncio.create_task(self._drain_all())
        await waiter

    async def _drain_all(self) -> None:
        # Let the callers that are ready now, or within the linger, join the first group: each
        # write has a fixed cost, and a caller waits the linger at most once.
        await asyncio.sleep(self._linger_s)
        while self._rows:
            rows, self._rows = self._rows[: self._max_rows], self._rows[self._max_rows :]
            waiters, self._waiters = (
                self._waiters[: self._max_rows],
                self._waiters[self._max_rows :],
            )
            try:
                await self._write(rows)
            except asyncio.CancelledError:
                for w in waiters:
                    w.cancel()
                raise
            except Exception as exc:  # each caller sees it; nothing is retried here
                for w in waiters:
                    if not w.done():
                        w.set_exception(exc)
            else:
                for w in waiters:
                    if not w.done():
                        w.set_result(None)
