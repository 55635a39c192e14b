"""Users' queries on a store's database while it writes (``groundbench sql`` during a run).

A run's store serves its writes first; users' queries run beside them, and none may take the
store from the run:

- at most :data:`QUERY_SLOTS` run at once; one more is refused at once, in one line saying how
  many are running, rather than queued behind queries that may run for minutes;
- each is stopped at its time limit (60 s unless asked, at most 600 s);
- a query with a token belongs to a client elsewhere, which says it is still waiting at least
  every :data:`LEASE_S` (:meth:`QueryService.keep`): a client killed, or cut off, stops its
  query within that, as Ray stops nothing an actor's thread runs when its caller dies;
- :meth:`QueryService.cancel` interrupts a query from whatever thread asks, holding nothing a
  query holds: it works while every slot is taken (the store actor serves it in a thread group
  of its own).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb

from runner.store._errors import StoreError, first_line
from runner.store._snapshot import SNAPSHOT_TIMEOUT_S, StoreCopy, copy_store
from runner.store._sql import (
    CANCELLED,
    QUERY_TIMEOUT_S,
    TICK_S,
    Result,
    Watch,
    check_query,
    check_timeout,
    execute,
    timed_out,
)

QUERY_SLOTS = 4  # users' queries a store runs at once
LEASE_S = 10.0  # a client that has said nothing for this long has gone: its query is stopped
KEEP_EVERY_S = 2.0  # how often a waiting client says so (five words to a lease)
_T = TypeVar("_T")
_CANCELS_KEPT = 64  # cancels of queries not begun yet, remembered so that they never begin


def gone(lease_s: float) -> str:
    return f"the query was stopped: its client went away (no word from it for {lease_s:g} s)"


@dataclass
class _Query:
    """A query running: its cursor, and what would stop it."""

    cursor: duckdb.DuckDBPyConnection
    deadline: float
    heard: float  # when its client last said it waits
    leased: bool  # a client elsewhere, which must keep saying so
    stopped: str | None = None  # why it is being stopped, once it is


class QueryService:
    """Users' read-only queries on the database of ``con`` (see the module docstring)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        where: Path | str,
        *,
        slots: int = QUERY_SLOTS,
        lease_s: float = LEASE_S,
        tick_s: float = TICK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._con = con
        self._where = where
        self._slots = slots
        self._lease_s = lease_s
        self._tick_s = tick_s
        self._clock = clock
        self._lock = threading.Lock()  # the running queries and the cancels seen
        self._running: dict[str, _Query] = {}
        self._cancelled: deque[str] = deque(maxlen=_CANCELS_KEPT)

    def answer(
        self, sql: str, timeout_s: float = QUERY_TIMEOUT_S, token: str | None = None
    ) -> Result:
        """Column names and rows of ``sql``, in a ``READ ONLY`` transaction rolled back after;
        ``token``: a client elsewhere's, which :meth:`keep` and :meth:`cancel` name.

        Raises
        ------
        StoreError
            Every slot taken, not one query, a write, an outside read, past its time, cancelled,
            its client gone, or failed: one line.
        """
        check_timeout(timeout_s)
        check_query(sql)
        return self._within(
            timeout_s, token, lambda cursor, why: execute(cursor, sql, self._where, why)
        )

    def copy(self, timeout_s: float = SNAPSHOT_TIMEOUT_S, token: str | None = None) -> StoreCopy:
        """Every table and view, in one ``READ ONLY`` transaction (``report`` during a run):
        served as a query is, in one of its slots, stopped as a query is.

        Raises
        ------
        StoreError
            Every slot taken, past its time, cancelled, its client gone, or failed: one line.
        """
        check_timeout(timeout_s)
        return self._within(timeout_s, token, lambda cursor, _: copy_store(cursor))

    def _within(
        self,
        timeout_s: float,
        token: str | None,
        work: Callable[[duckdb.DuckDBPyConnection, Callable[[], str | None]], _T],
    ) -> _T:
        """``work(cursor, why)`` in a slot, on a cursor of its own in a ``READ ONLY``
        transaction, watched: ``why()`` says why it is being stopped, once it is."""
        name = token if token is not None else f"local-{secrets.token_hex(8)}"
        query = self._admit(name, timeout_s, leased=token is not None)
        try:
            with Watch(query.cursor, lambda: self._why(query, timeout_s), self._tick_s):
                query.cursor.execute("BEGIN TRANSACTION READ ONLY")
                return work(query.cursor, lambda: self._why(query, timeout_s))
        except duckdb.InterruptException:  # stopped before its statement began
            raise StoreError(f"{self._where}: {self._why(query, timeout_s) or CANCELLED}") from None
        except duckdb.Error as exc:  # its transaction could not begin
            raise StoreError(f"{self._where}: {first_line(exc)}") from None
        finally:
            with self._lock:  # under the lock: no cancel interrupts a cursor being closed
                del self._running[name]
                query.cursor.close()  # its transaction ends with it

    def cancel(self, token: str) -> bool:
        """Stop the query of ``token`` (its client went away, or was stopped); one not begun yet
        never begins. True if a query was running."""
        with self._lock:
            query = self._running.get(token)
            if query is None:
                self._cancelled.append(token)
                return False
            query.stopped = query.stopped or CANCELLED
            query.cursor.interrupt()  # its watch interrupts again if this came too early
            return True

    def keep(self, token: str) -> bool:
        """The client of ``token`` still waits for its answer; False if no such query runs."""
        with self._lock:
            query = self._running.get(token)
            if query is not None:
                query.heard = self._clock()
            return query is not None

    def running(self) -> int:
        """Users' queries running now."""
        with self._lock:
            return len(self._running)

    def _admit(self, name: str, timeout_s: float, *, leased: bool) -> _Query:
        with self._lock:
            if name in self._cancelled:
                raise StoreError(f"{self._where}: {CANCELLED}")
            if name in self._running:
                raise StoreError(f"{self._where}: a query of token {name} is running already")
            if len(self._running) >= self._slots:
                raise StoreError(
                    f"{self._where}: {len(self._running)} queries are running on the store, the "
                    "most it runs at once; try again once one has ended (each ends within its "
                    "--timeout)"
                )
            now = self._clock()
            query = _Query(self._con.cursor(), now + timeout_s, now, leased)
            self._running[name] = query
            return query

    def _why(self, query: _Query, timeout_s: float) -> str | None:
        """Why ``query`` is to be stopped, once it is (kept: a word that comes after its client
        was given up on, or a cancel after its time ran out, changes nothing)."""
        if query.stopped is None:
            now = self._clock()
            if now >= query.deadline:
                query.stopped = timed_out(timeout_s)
            elif query.leased and now - query.heard > self._lease_s:
                query.stopped = gone(self._lease_s)
        return query.stopped


__all__ = ["KEEP_EVERY_S", "LEASE_S", "QUERY_SLOTS", "QueryService", "gone"]
