"""The actor classes as plain objects: what a caller sees around a run's start and end."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.distributed._store_actor import StoreActor, StoreClosed


def test_a_store_actor_serves_only_while_open(tmp_path: Path) -> None:
    actor = StoreActor(tmp_path / "exp.duckdb")
    with pytest.raises(StoreClosed, match="closed"):
        actor.progress()  # not opened yet
    actor.open()
    assert actor.progress() == []
    assert actor.query("SELECT 1 AS one", 30.0, "t") == (["one"], [(1,)])
    assert not actor.cancel("t")  # it ended: nothing to stop
    actor.close()
    with pytest.raises(StoreClosed):  # a watcher asking as the run ends is told it has
        actor.cells()
