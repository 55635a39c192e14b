"""The store's rows carry the one request identity: made from a key by name, giving it back."""

from __future__ import annotations

from conditions import RequestKey
from runner.store import BatchKey, ControlRow, GridRow, Pending, ReferenceRow, ScoreJob, ScoreRow
from tests.runner.store.rows import attempt_row

KEY = RequestKey(configuration="cfg", condition="base", budget=8, qid="q1")


def test_a_grid_row_and_a_pending_call_hold_their_request() -> None:
    assert GridRow.of(KEY, attempts=3).request == KEY
    pending = Pending.of(KEY, next_attempt=2)
    assert pending.request == KEY and pending.attempt_key == KEY.attempt(2)


def test_a_batch_holds_an_attempt_under_its_line_id() -> None:
    held = BatchKey.of(KEY.attempt(1), batch="gb-1", custom_id="line")
    assert (held.batch, held.custom_id, held.key) == ("gb-1", "line", KEY.attempt(1))


def test_score_rows_are_made_from_the_answer_key() -> None:
    key = attempt_row("q1").key
    assert key == KEY.attempt(0)
    assert ScoreJob.of(key, answer="[1]").key == key
    assert ScoreRow.of(key, parseable=True, iou=0.5).key == key
    assert ReferenceRow.of(key, reference="r", iou=0.5)[:5] == key
    box = RequestKey(configuration="cfg", condition="base", budget=0, qid="q1").attempt(0)
    control = ControlRow.of(box, n=8, **dict.fromkeys(ControlRow._fields[5:], 0))
    assert control.answer_key(0) == box and control.n == 8
