"""The scorers' queue on its own: answers in, each handed out once, refilled from the file."""

from __future__ import annotations

from runner.store import ScoreJob, ScoreQueue
from tests.runner.store.rows import attempt_row


def _job(qid: str) -> ScoreJob:
    return ScoreJob.of(attempt_row(qid).key, answer="[1, 2, 3, 4]")


def test_only_answers_join_the_queue_in_the_order_they_were_stored() -> None:
    queue = ScoreQueue()
    queue.add_answers([attempt_row("q2"), attempt_row("q1", outcome="quota"), attempt_row("q3")])
    assert [j.qid for j in queue.take(10)] == ["q2", "q3"]


def test_each_job_is_handed_out_once_a_few_at_a_time() -> None:
    queue = ScoreQueue([_job("q1"), _job("q2"), _job("q3")])
    assert [j.qid for j in queue.take(2)] == ["q1", "q2"]
    assert len(queue) == 1
    assert [j.qid for j in queue.take(2)] == ["q3"]
    assert queue.take(2) == []


def test_a_refill_replaces_what_was_queued() -> None:
    queue = ScoreQueue([_job("q1")])
    queue.take(1)  # handed out, never scored: the file says so, and the refill has it again
    assert queue.refill([_job("q1"), _job("q2")]) == 2
    assert [j.qid for j in queue.take(10)] == ["q1", "q2"]


def test_an_answer_holds_its_key_and_text() -> None:
    row = attempt_row("q1", answer="[5]")
    queue = ScoreQueue()
    queue.add_answers([row])
    (job,) = queue.take(1)
    assert job.key == row.key and job.answer == "[5]"
