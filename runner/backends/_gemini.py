"""Gemini's native ``generateContent``.

Request: one user turn, the image as ``inline_data`` before the text, ``generationConfig`` with
the output allowance, the temperature when set, and ``thinkingConfig``; the key goes in the
``x-goog-api-key`` header, never in the URL. Response: the parts of ``candidates[0]`` marked
``thought: true`` are reasoning, the others the answer. A prompt the API blocks comes back with
no candidate and a ``promptFeedback.blockReason``: a completed response with an empty answer.

Errors are ``google.rpc.Status`` objects: ``RESOURCE_EXHAUSTED`` is a throttle (with
``RetryInfo.retryDelay``) unless a ``QuotaFailure`` names a per-day quota id, which no wait
within the run brings back; ``FAILED_PRECONDITION`` (billing or region) is terminal too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from conditions import Request
from runner.backends._errors import (
    CallError,
    Fatal,
    QuotaExhausted,
    RateLimited,
    Refused,
    Transient,
)
from runner.backends._providers import thinking_fields
from runner.backends._secrets import ApiKey, redact
from runner.backends._wire import (
    IMAGE_SLOT,
    Body,
    Reply,
    Usage,
    as_int,
    error_json,
    field_dict,
    load_json,
    retry_after,
    splice_json,
)

_TRANSIENT_STATUSES = frozenset({"INTERNAL", "UNAVAILABLE", "DEADLINE_EXCEEDED", "ABORTED"})
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


class GeminiGenerate:
    """The Gemini ``generateContent`` wire format for one model."""

    def __init__(self, model: str) -> None:
        self.model = model

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/models/{self.model}:generateContent"

    def headers(self, key: ApiKey) -> dict[str, str]:
        return {"x-goog-api-key": key.reveal(), "Content-Type": "application/json"}

    def payload(self, request: Request) -> dict[str, Any]:
        """The request body, with :data:`IMAGE_SLOT` standing for the base64 image data."""
        parts: list[dict[str, Any]] = []
        if request.image is not None:
            parts.append(
                {"inline_data": {"mime_type": request.image.media_type, "data": IMAGE_SLOT}}
            )
        parts.append({"text": request.prompt})
        d = request.decoding
        config: dict[str, Any] = {"maxOutputTokens": d.max_output_tokens}
        if d.temperature is not None:
            config["temperature"] = d.temperature
        config.update(thinking_fields("gemini", d.thinking))
        return {"contents": [{"role": "user", "parts": parts}], "generationConfig": config}

    def encode(self, request: Request) -> Body:
        image = request.image.base64 if request.image is not None else None
        return splice_json(self.payload(request), image)

    def decode(self, body: bytes) -> Reply:
        doc = load_json(body, "generateContent")
        meta = field_dict(doc, "usageMetadata")
        usage = Usage(
            input_tokens=as_int(meta.get("promptTokenCount")),
            output_tokens=_sum(meta.get("candidatesTokenCount"), meta.get("thoughtsTokenCount")),
            reasoning_tokens=as_int(meta.get("thoughtsTokenCount")),
        )
        model = doc.get("modelVersion") if isinstance(doc.get("modelVersion"), str) else None
        rid = doc.get("responseId") if isinstance(doc.get("responseId"), str) else None
        candidates = doc.get("candidates")
        if not candidates:
            feedback = doc.get("promptFeedback")
            reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
            if not isinstance(reason, str):
                raise Transient("malformed generateContent: no candidates and no blockReason")
            return Reply("", "", f"blocked:{reason}", usage, model, rid)
        candidate = candidates[0] if isinstance(candidates, list) else None
        if not isinstance(candidate, dict):
            raise Transient("malformed generateContent: candidates[0] is not an object")
        content = candidate.get("content")
        parts = content.get("parts", []) if isinstance(content, dict) else []
        answer: list[str] = []
        reasoning: list[str] = []
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                (reasoning if part.get("thought") is True else answer).append(part["text"])
        finish = candidate.get("finishReason")
        return Reply(
            "".join(answer),
            "".join(reasoning),
            finish if isinstance(finish, str) else None,
            usage,
            model,
            rid,
        )

    def classify(self, status: int, headers: Mapping[str, str], body: bytes) -> CallError:
        return classify_gemini(status, headers, body)


def classify_gemini(status: int, headers: Mapping[str, str], body: bytes) -> CallError:
    """The error class of a non-2xx ``generateContent`` response, from its ``google.rpc.Status``."""
    error = error_json(body).get("error")
    error = error if isinstance(error, dict) else {}
    rpc = error.get("status") if isinstance(error.get("status"), str) else None
    raw_message = error.get("message")
    message = redact(raw_message if isinstance(raw_message, str) else f"HTTP {status}")
    listed = error.get("details")  # a server may put anything here
    details = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    wait = _retry_delay(details)
    if wait is None:
        wait = retry_after(headers)

    def make(cls: type[CallError], code: str | None = rpc) -> CallError:
        return cls(message, status=status, code=code, retry_after=wait)

    if rpc == "RESOURCE_EXHAUSTED" or status == 429:
        return make(QuotaExhausted if _per_day(details) else RateLimited)
    if rpc == "FAILED_PRECONDITION":
        return make(QuotaExhausted)
    if rpc in _TRANSIENT_STATUSES or status >= 500 or status == 408:
        return make(Transient)
    refused = _refused_reason(details)  # a wrong key is a 400 INVALID_ARGUMENT
    if refused is not None:
        return make(Refused, refused)
    if rpc in _REFUSED_STATUSES or status in (401, 403, 404):
        return make(Refused)
    return make(Fatal)


# A wrong key (401), no permission (403), an unknown model (404): no call can succeed.
_REFUSED_STATUSES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND"})
# google.rpc.ErrorInfo reasons of a key no call can succeed with (sent as 400 INVALID_ARGUMENT).
_REFUSED_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED"})


def _is(detail: dict[str, Any], kind: str) -> bool:
    """Whether ``detail`` is a ``google.rpc`` detail of ``kind`` (``@type`` may be anything)."""
    return str(detail.get("@type", "")).endswith(f"google.rpc.{kind}")


def _refused_reason(details: list[dict[str, Any]]) -> str | None:
    for detail in details:
        if _is(detail, "ErrorInfo"):
            reason = detail.get("reason")
            if isinstance(reason, str) and reason in _REFUSED_REASONS:
                return str(reason)
    return None


def _per_day(details: list[dict[str, Any]]) -> bool:
    for detail in details:
        if _is(detail, "QuotaFailure"):
            violations = detail.get("violations")
            for violation in violations if isinstance(violations, list) else []:
                if isinstance(violation, dict) and "PerDay" in str(violation.get("quotaId", "")):
                    return True
    return False


def _retry_delay(details: list[dict[str, Any]]) -> float | None:
    for detail in details:
        if _is(detail, "RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _sum(*values: object) -> int | None:
    counts = [as_int(v) for v in values]
    present = [c for c in counts if c is not None]
    return sum(present) if present else None
