"""Rows as the store takes them: named records, one per table, in the table's column order;
and the records its reads return (the pending requests, the answers to score, progress).

They are named tuples so that they stay cheap to ship between processes and load into Arrow
column by column, while every reader and writer names the fields it uses. Each record's fields
are its table's columns (a test holds them to the schema).

A request has one identity, :class:`conditions.RequestKey`, and an attempt at it one key,
:class:`conditions.AttemptKey` (``request.attempt(n)``). A row that holds one gives it by
``.request`` or ``.key`` and is made from one by ``.of``; only the store turns rows into
positional tuples and back (Arrow's columns, DuckDB's rows), by the fields' names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from conditions import AttemptKey, RequestKey
from runner.backends import AttemptRecord


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
    usage_unknown: int | None  # billed calls counted at their worst case (None: not kept)

    @property
    def key(self) -> AttemptKey:
        return AttemptKey.of(self)


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

    @classmethod
    def of(cls, key: AttemptKey, *, parseable: bool, **scores: Any) -> ScoreRow:
        """The scores of the answer of ``key``, by column name."""
        return cls(**key._asdict(), parseable=parseable, **scores)

    @property
    def key(self) -> AttemptKey:
        return AttemptKey.of(self)


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

    @classmethod
    def of(cls, answer: AttemptKey, *, n: int, **metrics: Any) -> ControlRow:
        """The control at budget ``n`` of the box answer of key ``answer``, by column name."""
        return cls(
            configuration=answer.configuration,
            condition=answer.condition,
            qid=answer.qid,
            attempt=answer.attempt,
            n=n,
            **metrics,
        )

    def answer_key(self, box_budget: int) -> AttemptKey:
        """The key of the box answer this control was derived from."""
        return AttemptKey(
            configuration=self.configuration,
            condition=self.condition,
            budget=box_budget,
            qid=self.qid,
            attempt=self.attempt,
        )


class ReferenceRow(NamedTuple):
    """A stored polygon answer's IoU with one other reference (``reference_scores``)."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    reference: str
    iou: float

    @classmethod
    def of(cls, key: AttemptKey, *, reference: str, iou: float) -> ReferenceRow:
        return cls(**key._asdict(), reference=reference, iou=iou)


class Pending(NamedTuple):
    """A request still to finish, and the attempt to send next."""

    configuration: str
    condition: str
    budget: int
    qid: str
    next_attempt: int

    @classmethod
    def of(cls, key: RequestKey, *, next_attempt: int) -> Pending:
        return cls(**key.fields(), next_attempt=next_attempt)

    @property
    def request(self) -> RequestKey:
        return RequestKey.of(self)

    @property
    def attempt_key(self) -> AttemptKey:
        """The key of the attempt it sends next."""
        return self.request.attempt(self.next_attempt)


class ScoreJob(NamedTuple):
    """An answered attempt waiting for its score."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    answer: str

    @classmethod
    def of(cls, key: AttemptKey, *, answer: str) -> ScoreJob:
        return cls(**key._asdict(), answer=answer)

    @property
    def key(self) -> AttemptKey:
        return AttemptKey.of(self)


@dataclass(frozen=True)
class Registration:
    """A configuration as one run asks it: its protocol hash and how many attempts it may make."""

    name: str
    protocol: str
    provider: str
    model: str
    attempts: int
    settings: str  # JSON of the output-affecting settings, for people reading the store
    reading: str | None = None  # how its box answers are read: a coordinate convention
    fields: str | None = None  # what the protocol hash was taken of (canonical JSON)


class GridRow(NamedTuple):
    """A request of the run's grid, and how many attempts it may make (``grid``)."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempts: int

    @classmethod
    def of(cls, key: RequestKey, *, attempts: int) -> GridRow:
        return cls(**key.fields(), attempts=attempts)

    @property
    def request(self) -> RequestKey:
        return RequestKey.of(self)


@dataclass(frozen=True)
class Progress:
    """How far one configuration is: requests by status, and rows stored."""

    configuration: str
    requests: int
    complete: int
    errored: int
    responses: int
    answered: int
    scored: int
    input_tokens: int
    output_tokens: int
    batch_input_tokens: int = 0  # of those, the tokens of answers a batch brought (its price)
    batch_output_tokens: int = 0

    @property
    def pending(self) -> int:
        return self.requests - self.complete


@dataclass(frozen=True)
class CellProgress:
    """One cell of the grid as a run goes: requests by status, live parse rate and fixed IoU."""

    configuration: str
    condition: str
    budget: int
    requests: int
    complete: int
    errored: int
    settled: int | None
    parse_rate: float | None  # points, over settled questions (None: none yet)
    fixed_iou: float | None


@dataclass(frozen=True)
class ErrorCount:
    """One kind of error among the records of requests not yet complete: its class, status and
    code, how many records, and the latest message (redacted when it was stored)."""

    configuration: str
    kind: str  # the record's outcome: fatal, quota, transient, rate-limited
    status: int | None
    code: str | None
    count: int
    message: str | None


def response_row(record: AttemptRecord) -> ResponseRow:
    """``record`` as the store's row."""
    return ResponseRow._make(getattr(record, name) for name in ResponseRow._fields)
