"""Users' queries never starve a run's query service: a bounded number run at once and one
more is refused at once; a cancel reaches a full pool; a client that goes quiet has its query
stopped; the time limit is short by default and bounded. Without Ray: the store actor's plain
class and the query service itself (the Ray groups around them are ``_actors``')."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from runner.distributed._actors import CONTROL, QUERIES, QUERY_GROUPS
from runner.distributed._store_actor import StoreActor
from runner.store import (
    MAX_QUERY_TIMEOUT_S,
    QUERY_SLOTS,
    QUERY_TIMEOUT_S,
    QueryService,
    Store,
    StoreError,
    query_store,
)
from tests.runner.distributed.runs import until

# Runs for hours unless stopped: a filtered cross join no optimiser can skip.
ENDLESS = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range < 0"
Run = Callable[[str, float, str], object]  # a query's call: (sql, timeout_s, token)


class Endless:
    """A never-ending query of ``token`` on a thread of its own; how it ended, once it has."""

    def __init__(self, run: Run, token: str) -> None:
        self.token = token
        self.ended: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(run,), daemon=True)
        self._thread.start()

    def _run(self, run: Run) -> None:
        try:
            run(ENDLESS, MAX_QUERY_TIMEOUT_S, self.token)
        except StoreError as exc:
            self.ended.append(str(exc))

    def join(self) -> list[str]:
        self._thread.join(timeout=600)  # a bound for a hung query, far past any machine's need
        assert not self._thread.is_alive()
        return self.ended


@pytest.fixture
def actor(tmp_path: Path) -> Iterator[StoreActor]:
    """The store actor's plain class, open as a run's is."""
    actor = StoreActor(tmp_path / "exp.duckdb")
    actor.open()
    yield actor
    actor.close()


def test_one_query_more_than_the_store_runs_is_refused_at_once_and_a_cancel_frees_a_slot(
    actor: StoreActor,
) -> None:
    running = [Endless(actor.query, f"q{i}") for i in range(QUERY_SLOTS)]
    try:
        until(lambda: actor.queries() == QUERY_SLOTS)
        with pytest.raises(StoreError) as refused:  # answered, not queued: nothing to wait for
            actor.query("SELECT 42", QUERY_TIMEOUT_S, "fifth")
        assert f"{QUERY_SLOTS} queries are running on the store" in str(refused.value)
        assert "try again once one has ended" in str(refused.value)
        assert "\n" not in str(refused.value)
        assert actor.cancel("q0")  # while every slot is taken
        assert running[0].join() == [f"{actor._path}: the query was cancelled by its client"]
        assert actor.query("SELECT 42 AS n", QUERY_TIMEOUT_S, "next") == (["n"], [(42,)])
    finally:
        for query in running:
            actor.cancel(query.token)
    for query in running[1:]:
        assert query.join() == [f"{actor._path}: the query was cancelled by its client"]
    assert actor.queries() == 0


def test_cancels_and_keep_alives_never_wait_for_a_query_thread() -> None:
    """Ray serves a group's calls in its own threads: a cancel in the queries' group waited
    behind the four queries it was meant to stop."""
    assert QUERY_GROUPS[QUERIES] == QUERY_SLOTS + 1  # a thread free to refuse one more at once
    assert QUERY_GROUPS[CONTROL] >= 1


@pytest.fixture
def database() -> Iterator[duckdb.DuckDBPyConnection]:
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT range AS n FROM range(3)")
        yield con


def test_a_client_gone_quiet_has_its_query_stopped(database: duckdb.DuckDBPyConnection) -> None:
    """A killed ``groundbench sql`` says no more that it waits; Ray stops nothing for it."""
    service = QueryService(database, "exp.duckdb", lease_s=0.2)
    with pytest.raises(StoreError, match=r"its client went away \(no word from it for 0\.2 s\)"):
        service.answer(ENDLESS, MAX_QUERY_TIMEOUT_S, token="killed")  # never kept
    assert service.running() == 0
    # A query with no token is this process's own, waited for here: no client to go quiet.
    assert service.answer("SELECT count(*) FROM t")[1] == [(3,)]


def test_a_cancel_that_comes_before_its_query_stops_it_as_it_arrives(
    database: duckdb.DuckDBPyConnection,
) -> None:
    service = QueryService(database, "exp.duckdb")
    assert not service.cancel("early")  # nothing running yet: remembered
    with pytest.raises(StoreError, match="cancelled by its client"):
        service.answer("SELECT count(*) FROM t", token="early")
    assert not service.keep("early")


def test_the_time_limit_is_short_unless_asked_and_bounded(
    database: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    assert QUERY_TIMEOUT_S == 60.0 and MAX_QUERY_TIMEOUT_S == 600.0
    service = QueryService(database, "exp.duckdb")
    path = tmp_path / "exp.duckdb"
    Store(path).close()
    refusals: list[Callable[[], object]] = [
        lambda: service.answer("SELECT 1", 86_400.0, "t"),
        lambda: query_store(path, "SELECT 1", timeout_s=601.0),
    ]
    for refused in refusals:
        with pytest.raises(StoreError, match=r"a query runs for at most 600 s, not \S+") as said:
            refused()
        assert "\n" not in str(said.value)
    for below in (0.0, -5.0, float("nan")):
        with pytest.raises(StoreError, match=r"a number of seconds above 0, not (0|-5|nan)$"):
            service.answer("SELECT 1", below, "t")
    with pytest.raises(StoreError, match=r"stopped at its time limit of 0\.2 s"):
        service.answer(ENDLESS, 0.2, "short")
