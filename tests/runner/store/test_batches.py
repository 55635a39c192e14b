"""The batch ledger: a batch and its keys recorded together, each step recorded, and a request
an open batch holds never pending."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.store import (
    BatchKey,
    BatchProblem,
    BatchRecord,
    GridRow,
    Registration,
    Repository,
    StoreError,
)


def _store(path: Path) -> Repository:
    store = Repository(path)
    store.register(
        [Registration("cfg", "p" * 64, "qwen", "m", 3, "{}")],
        [
            GridRow(configuration="cfg", condition="base", budget=8, qid=f"q{i}", attempts=3)
            for i in range(4)
        ],
    )
    return store


def _batch(tag: str, requests: int) -> BatchRecord:
    return BatchRecord(
        id=tag, backend="b", provider="qwen", model="m", base_url="https://x.example/v1",
        api_key_env="DASHSCOPE_API_KEY", phase="preparing", requests=requests,
        created_at=datetime.now(UTC),
    )  # fmt: skip


def test_an_open_batch_holds_its_requests_out_of_pending_until_it_is_read(tmp_path: Path) -> None:
    with _store(tmp_path / "exp.duckdb") as store:
        keys = [
            BatchKey(
                batch="gb-1",
                custom_id=f"id{i}",
                configuration="cfg",
                condition="base",
                budget=8,
                qid=f"q{i}",
                attempt=0,
            )
            for i in range(2)
        ]
        store.record_batch(_batch("gb-1", 2), keys)
        assert sorted(p.qid for p in store.pending()) == ["q2", "q3"]
        assert store.held() == 2 and len(store.pending_table()) == 2
        for phase in ("uploaded", "submitted", "ended"):
            assert store.update_batch("gb-1", phase=phase).phase == phase
            assert store.held() == 2
        read = store.update_batch("gb-1", phase="read", answered=0, unrun=2)
        assert read.unrun == 2 and store.held() == 0
        assert len(store.pending()) == 4  # unanswered: pending again
        assert store.batch_keys("gb-1") == keys


def test_an_abandoned_batch_frees_its_requests_and_the_ledger_survives_reopening(
    tmp_path: Path,
) -> None:
    path = tmp_path / "exp.duckdb"
    with _store(path) as store:
        store.record_batch(
            _batch("gb-2", 1),
            [
                BatchKey(
                    batch="gb-2",
                    custom_id="a",
                    configuration="cfg",
                    condition="base",
                    budget=8,
                    qid="q0",
                    attempt=0,
                )
            ],
        )
        store.update_batch("gb-2", phase="abandoned", message="not created: quota")
    with Repository(path) as store:
        (record,) = store.batches()
        assert (record.phase, record.message) == ("abandoned", "not created: quota")
        assert store.batches(open_only=True) == [] and len(store.pending()) == 4


def test_a_step_cannot_change_what_a_batch_was_recorded_with(tmp_path: Path) -> None:
    with _store(tmp_path / "exp.duckdb") as store:
        store.record_batch(_batch("gb-3", 0), [])
        with pytest.raises(StoreError, match="cannot change backend"):
            store.update_batch("gb-3", backend="other")
        with pytest.raises(StoreError, match="no batch gb-4"):
            store.update_batch("gb-4", phase="read")


def test_an_unreadable_line_is_kept_once_however_often_it_is_read(tmp_path: Path) -> None:
    with _store(tmp_path / "exp.duckdb") as store:
        problem = BatchProblem("gb-5", "file-1 line 3", None, "not JSON")
        assert store.record_problems([problem]) == 1
        assert store.record_problems([problem]) == 0  # a resumed run reads the file again
        assert store.query("SELECT batch, line, message FROM batch_problems")[1] == [
            ("gb-5", "file-1 line 3", "not JSON")
        ]
