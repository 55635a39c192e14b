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
from dataclasses import dataclass
from typing import Any, Literal

from conditions import Request

# The same imports as the OpenAI wire's (_openai.py): both write a body around the image, read
# a reply and classify an error into the same classes; what each rule is stays in its own file.
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
from runner.backends._usage import Usage, count, count_sum
from runner.backends._wire import (
    IMAGE_SLOT,
    Body,
    ErrorBody,
    Reply,
    ReplyReader,
    field_dict,
    retry_after,
    splice_json,
)

Reads = Literal["throttle", "quota", "transient", "refused"]


@dataclass(frozen=True)
class RpcCode:
    """One ``google.rpc.Code`` (google/rpc/code.proto)."""

    name: str
    http: int  # the HTTP status the API maps it to
    reads: Reads | None = None  # what the name alone says (None: the HTTP status decides)


# Gemini's one code table, by number: an online error names its code (``status``), a batch
# result line's error gives its number only (:func:`classify_rpc_status`).
RPC_CODES: Mapping[int, RpcCode] = {
    1: RpcCode("CANCELLED", 499),
    2: RpcCode("UNKNOWN", 500),
    3: RpcCode("INVALID_ARGUMENT", 400),  # a wrong key too: told by its ErrorInfo reason
    4: RpcCode("DEADLINE_EXCEEDED", 504, "transient"),
    5: RpcCode("NOT_FOUND", 404, "refused"),  # an unknown model
    6: RpcCode("ALREADY_EXISTS", 409),
    7: RpcCode("PERMISSION_DENIED", 403, "refused"),
    8: RpcCode("RESOURCE_EXHAUSTED", 429, "throttle"),  # quota if a per-day quota is named
    9: RpcCode("FAILED_PRECONDITION", 400, "quota"),  # billing or region: terminal
    10: RpcCode("ABORTED", 409, "transient"),
    11: RpcCode("OUT_OF_RANGE", 400),
    12: RpcCode("UNIMPLEMENTED", 501),
    13: RpcCode("INTERNAL", 500, "transient"),
    14: RpcCode("UNAVAILABLE", 503, "transient"),
    15: RpcCode("DATA_LOSS", 500),
    16: RpcCode("UNAUTHENTICATED", 401, "refused"),  # a wrong key
}
_BY_NAME = {c.name: c for c in RPC_CODES.values()}


def _reading(reads: Reads) -> frozenset[str]:
    return frozenset(c.name for c in RPC_CODES.values() if c.reads == reads)


_TRANSIENT_STATUSES = _reading("transient")
# A wrong key (401), no permission (403), an unknown model (404): no call can succeed.
_REFUSED_STATUSES = _reading("refused")
_QUOTA_STATUSES = _reading("quota")
_THROTTLE_STATUSES = _reading("throttle")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


def goog_api_key(key: ApiKey | None) -> dict[str, str]:
    """The header that carries the key (never the URL), for every Gemini endpoint."""
    return {} if key is None else {"x-goog-api-key": key.reveal()}


class GeminiGenerate(ReplyReader):
    """The Gemini ``generateContent`` wire format for one model."""

    what = "generateContent"

    def __init__(self, model: str) -> None:
        self.model = model

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/models/{self.model}:generateContent"

    def headers(self, key: ApiKey | None) -> dict[str, str]:
        return {**goog_api_key(key), "Content-Type": "application/json"}

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

    def usage(self, doc: Mapping[str, Any]) -> Usage:
        # Reasoning is billed as output: the answer's tokens plus the thoughts'.
        meta = field_dict(doc, "usageMetadata")
        return Usage(
            input_tokens=count(meta.get("promptTokenCount")),
            output_tokens=count_sum(
                meta.get("candidatesTokenCount"), meta.get("thoughtsTokenCount")
            ),
            reasoning_tokens=count(meta.get("thoughtsTokenCount")),
        )

    def reply(self, doc: Mapping[str, Any], usage: Usage) -> Reply:
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

    def classify(self, status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError:
        return classify_gemini(status, headers, body)


def classify_gemini(status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError:
    """The error class of a non-2xx ``generateContent`` response, from its ``google.rpc.Status``."""
    error = body.error
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

    if rpc in _THROTTLE_STATUSES or status == 429:
        return make(QuotaExhausted if _per_day(details) else RateLimited)
    if rpc in _QUOTA_STATUSES:
        return make(QuotaExhausted)
    if rpc in _TRANSIENT_STATUSES or status >= 500 or status == 408:
        return make(Transient)
    refused = _refused_reason(details)  # a wrong key is a 400 INVALID_ARGUMENT
    if refused is not None:
        return make(Refused, refused)
    if rpc in _REFUSED_STATUSES or status in (401, 403, 404):
        return make(Refused)
    return make(Fatal)


def classify_rpc_status(status: Mapping[str, Any]) -> CallError:
    """A batch result line's ``google.rpc.Status`` classified as :func:`classify_gemini`
    classifies the online call's HTTP error of the same code: the number mapped to its name
    and HTTP status by :data:`RPC_CODES`."""
    number = count(status.get("code"))
    name = status.get("status") if isinstance(status.get("status"), str) else None
    if number is not None and number in RPC_CODES:
        name = name or RPC_CODES[number].name
        http = _BY_NAME[name].http if name in _BY_NAME else RPC_CODES[number].http
    elif number is not None and 400 <= number < 600:  # an HTTP status written as the code
        http = number
    else:
        http = _BY_NAME[name].http if name in _BY_NAME else 500
    error = {**status, "code": http, "status": name or "UNKNOWN"}
    return classify_gemini(http, {}, ErrorBody({"error": error}))


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
