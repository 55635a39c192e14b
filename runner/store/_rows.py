"""Rows as the store takes them: named records, one per table, in the table's column order.

They are named tuples so that they stay cheap to ship between processes and load into Arrow
column by column, while every reader and writer names the fields it uses. Each record's fields
are its table's columns (a test holds them to the schema).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from runner.backends import AttemptRecord


class AttemptKey(NamedTuple):
    """Which attempt a response or score row is: the store's key (:data:`KEY`)."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int


class ResponseRow(NamedTuple):
    """One attempt's raw response or error (``responses``, in ``RESPONSE_COLUMNS`` order)."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    replicate: int
    protocol: str
    fingerprint: str
    provider: str
    model: str
    image_sha256: str | None
    outcome: str
    parseable: bool
    answer: str | None
    reasoning: str | None
    finish_reason: str | None
    http_status: int | None
    error_code: str | None
    error_message: str | None
    input_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    latency_s: float | None
    transport_retries: int
    started_at: datetime
    response_id: str | None
    reported_model: str | None

    @property
    def key(self) -> AttemptKey:
        return AttemptKey(self.configuration, self.condition, self.budget, self.qid, self.attempt)


class ScoreRow(NamedTuple):
    """One answer's scores (``scores``): a polygon answer's metrics, or a box answer's."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    parseable: bool
    iou: float | None = None
    iou_part: float | None = None
    iou_union: float | None = None
    iou_cont: float | None = None
    iou_distractor: float | None = None
    legal: bool | None = None
    legal_iou: float | None = None
    sel: bool | None = None
    defect: str | None = None
    box_iou: float | None = None  # box questions only (a rejection question has none)
    says_absent: bool | None = None  # a box benchmark's answer says "absent" (§10)

    @property
    def key(self) -> AttemptKey:
        return AttemptKey(self.configuration, self.condition, self.budget, self.qid, self.attempt)


class ControlRow(NamedTuple):
    """A box answer's polygon control at budget ``n`` (``controls``)."""

    configuration: str
    condition: str
    qid: str
    attempt: int
    n: int
    parseable: bool
    iou: float
    iou_part: float
    iou_union: float
    iou_cont: float
    iou_distractor: float
    legal: bool
    legal_iou: float
    sel: bool
    defect: str | None

    def answer_key(self, box_budget: int) -> AttemptKey:
        """The key of the box answer this control was derived from."""
        return AttemptKey(self.configuration, self.condition, box_budget, self.qid, self.attempt)


class ReferenceRow(NamedTuple):
    """A stored polygon answer's IoU with one other reference (``reference_scores``)."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    reference: str
    iou: float


def response_row(record: AttemptRecord) -> ResponseRow:
    """``record`` as the store's row."""
    return ResponseRow._make(getattr(record, name) for name in ResponseRow._fields)
