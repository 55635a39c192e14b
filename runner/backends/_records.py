"""One record per attempt: what was asked, what came back or how the call failed.

Attempts (PROTOCOL §6) are numbered from 0; transport retries happen inside an attempt and are
counted in it, never recorded as attempts, and so are the tokens of every call billed in it. An
errored call is a record whose ``outcome`` names its error class, with no answer: never a
made-up one. No record holds an API key; error messages are redacted before they get here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

Outcome = Literal["answer", "rate-limited", "quota", "transient", "fatal"]


class AttemptRecord(BaseModel):
    """One attempt at one request, as the store keeps it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    configuration: str
    condition: str
    qid: str
    budget: int = Field(ge=0)  # 0: the box question
    replicate: int = Field(ge=0)
    attempt: int = Field(ge=0, le=3)
    protocol: str  # the protocol hash the request was made under
    fingerprint: str  # sha256 of the request as sent (Request.fingerprint)
    provider: str
    model: str
    image_sha256: str | None  # None: the condition sends no image
    outcome: Outcome
    parseable: bool = False
    answer: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    http_status: int | None = None
    error_code: str | None = None
    error_message: str | None = None
    # What the attempt's billed calls (every 2xx, its answer read or not) are counted at: as
    # the provider reported, or at their worst case for the ``usage_unknown`` of them whose
    # usage was no count (None: nothing billed, an error the server answered with no 2xx).
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)
    usage_unknown: int = Field(default=0, ge=0)
    latency_s: float | None = Field(default=None, ge=0)  # the call that answered or failed last
    transport_retries: int = Field(default=0, ge=0)
    started_at: datetime
    response_id: str | None = None
    reported_model: str | None = None

    @model_validator(mode="after")
    def _answer_xor_error(self) -> Self:
        if self.outcome == "answer":
            if self.answer is None or self.error_message is not None:
                raise ValueError("an answered attempt has an answer and no error")
        elif self.answer is not None or self.parseable:
            raise ValueError(f"a {self.outcome} attempt has no answer")
        return self
