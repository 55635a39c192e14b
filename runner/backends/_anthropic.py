"""Anthropic's Messages API (``POST /v1/messages``).

Request: one user turn, the image as a base64 ``source`` block before the text block (the order
Anthropic recommends), ``max_tokens`` (required), the temperature when set, and ``thinking``
(enabled with its budget, or disabled); the key goes in ``x-api-key``, with
``anthropic-version: 2023-06-01``.
Response: the ``text`` blocks joined are the answer, the ``thinking`` blocks the reasoning
(``redacted_thinking`` blocks are encrypted: kept as neither); ``stop_reason`` is the finish
reason. Input tokens are what the call billed as input: ``input_tokens`` plus the cache's
``cache_creation_input_tokens`` and ``cache_read_input_tokens`` (groundbench sets no cache
breakpoint, so both are normally 0). The thinking tokens are counted in ``output_tokens`` and
not reported apart.

Errors are typed, ``{"type": "error", "error": {"type": ..., "message": ...}}``, and the type is
read before the status: ``rate_limit_error`` (429) a throttle, ``overloaded_error`` (529),
``api_error`` (500) and ``timeout_error`` (504) transient, ``authentication_error`` (401),
``permission_error`` (403) and ``not_found_error`` (404, an unknown model) refused,
``billing_error`` (402) and a 400 that says the credit balance is too low spent quota, and
``invalid_request_error`` (400) and ``request_too_large`` (413) fatal.
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
from runner.backends._usage import Usage, count, count_sum
from runner.backends._wire import (
    IMAGE_SLOT,
    Body,
    ErrorBody,
    Reply,
    ReplyReader,
    as_text,
    field_dict,
    retry_after,
    splice_json,
)

API_VERSION = "2023-06-01"

# The documented error types (docs.claude.com/en/api/errors), by what they mean.
RATE_TYPES = frozenset({"rate_limit_error"})
TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "timeout_error"})
REFUSED_TYPES = frozenset({"authentication_error", "permission_error", "not_found_error"})
QUOTA_TYPES = frozenset({"billing_error"})
FATAL_TYPES = frozenset({"invalid_request_error", "request_too_large"})
# Out of credit is sent as a 400 invalid_request_error; only its message tells it apart.
_NO_CREDIT = re.compile(r"credit balance is too low|spend limit|billing", re.IGNORECASE)


def anthropic_headers(key: ApiKey | None) -> dict[str, str]:
    """The key and API version headers, for the messages and the batch endpoints alike."""
    auth = {} if key is None else {"x-api-key": key.reveal()}
    return {**auth, "anthropic-version": API_VERSION}


class AnthropicMessages(ReplyReader):
    """The Anthropic Messages wire format for one model."""

    what = "message"

    def __init__(self, model: str) -> None:
        self.model = model

    def url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/v1/messages"

    def headers(self, key: ApiKey | None) -> dict[str, str]:
        return {**anthropic_headers(key), "content-type": "application/json"}

    def payload(self, request: Request) -> dict[str, Any]:
        """The request body, with :data:`IMAGE_SLOT` standing for the base64 image data."""
        content: list[dict[str, Any]] = []
        if request.image is not None:
            source = {"type": "base64", "media_type": request.image.media_type}
            content.append({"type": "image", "source": {**source, "data": IMAGE_SLOT}})
        content.append({"type": "text", "text": request.prompt})
        d = request.decoding
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": d.max_output_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        if d.temperature is not None:
            body["temperature"] = d.temperature
        body.update(thinking_fields("anthropic", d.thinking))
        return body

    def encode(self, request: Request) -> Body:
        image = request.image.base64 if request.image is not None else None
        return splice_json(self.payload(request), image)

    def usage(self, doc: Mapping[str, Any]) -> Usage:
        # The input billed is the uncached input plus what was written to and read from
        # the prompt cache (each reported apart).
        usage = field_dict(doc, "usage")
        return Usage(
            input_tokens=count_sum(
                usage.get("input_tokens"),
                usage.get("cache_creation_input_tokens"),
                usage.get("cache_read_input_tokens"),
            ),
            output_tokens=count(usage.get("output_tokens")),
        )

    def reply(self, doc: Mapping[str, Any], usage: Usage) -> Reply:
        blocks = doc.get("content")
        if not isinstance(blocks, list):
            raise Transient("malformed message: content is not a list")
        answer: list[str] = []
        reasoning: list[str] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                answer.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                reasoning.append(block["thinking"])
        return Reply(
            answer="".join(answer),
            reasoning="".join(reasoning),
            finish_reason=as_text(doc.get("stop_reason")),
            usage=usage,
            model=as_text(doc.get("model")),
            response_id=as_text(doc.get("id")),
        )

    def classify(self, status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError:
        return classify_anthropic(status, headers, body)


def classify_anthropic(status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError:
    """The error class of a non-2xx Messages response, from its ``error.type`` first."""
    error = body.error
    kind = as_text(error.get("type"))
    message = redact(as_text(error.get("message")) or body.text or f"HTTP {status}")
    wait = retry_after(headers)

    def make(cls: type[CallError]) -> CallError:
        return cls(message, status=status, code=kind, retry_after=wait)

    if kind in QUOTA_TYPES or (kind == "invalid_request_error" and _NO_CREDIT.search(message)):
        return make(QuotaExhausted)
    if kind in RATE_TYPES:
        return make(RateLimited)
    # A server fault is never the request's fault, whatever type it names.
    if kind in TRANSIENT_TYPES or status >= 500 or status == 408:
        return make(Transient)
    if kind in REFUSED_TYPES:
        return make(Refused)
    if kind in FATAL_TYPES:
        return make(Fatal)
    # No documented type (a proxy's page, a type added later): the status decides.
    if status == 402:
        return make(QuotaExhausted)
    if status == 429:
        return make(RateLimited)
    if status in (401, 403, 404):
        return make(Refused)
    return make(Fatal)
