"""OpenAI-compatible chat completions: Qwen (DashScope), Doubao (Ark), Kimi (Moonshot), OpenAI.

Request: one user message, the image part (a base64 data URL) before the text part, the
output allowance, the temperature when set, and the provider's reasoning fields. Response:
``choices[0].message.content`` is the answer; ``reasoning_content`` (DashScope, Ark, Kimi) is
kept apart and never parsed.

Errors are classified by the body's ``error.code`` / ``error.type`` first and the status only
after, since DashScope, Kimi and OpenAI all send 429 for throttles and for spent quota alike.
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
from runner.backends._providers import Provider, thinking_fields, wire_codes
from runner.backends._secrets import ApiKey, redact
from runner.backends._usage import Usage, count
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

# Every OpenAI-wire provider's codes (each listed in its own unit, ``_providers/``).
_CODES = wire_codes("openai")
QUOTA_CODES = _CODES.quota  # terminal: the account must be topped up or a limit raised
RATE_CODES = _CODES.rate  # throttles: wait and try again
TRANSIENT_CODES = _CODES.transient  # overload and server faults sent as a 4xx or 429
# A wrong key (401), no permission or region (403), an unknown model (404): no call can
# succeed. The codes say so where a server sends another status.
REFUSED_STATUSES = frozenset({401, 403, 404})
REFUSED_CODES = frozenset({"invalid_api_key", "model_not_found"})
# DashScope's Throttling.AllocationQuota is a per-minute allocation unless its message says a
# plan or free allocation is used up: then no wait will bring it back.
_PLAN_SPENT = re.compile(
    r"free (?:tier|allocated quota)|quota (?:has been |is )?exhausted|exceeded your current "
    r"quota|insufficient (?:balance|quota)|plan",
    re.IGNORECASE,
)


def bearer(key: ApiKey | None) -> dict[str, str]:
    """The header that carries the key, for the chat and the batch endpoints alike; none
    without a key (a local server that takes none)."""
    return {} if key is None else {"Authorization": f"Bearer {key.reveal()}"}


class OpenAIChat(ReplyReader):
    """The OpenAI-compatible wire format for one provider and model."""

    what = "chat completion"

    def __init__(
        self, provider: Provider, model: str, *, max_tokens_field: str | None = None
    ) -> None:
        self.provider = provider
        self.model = model
        # The backend's choice, else the provider's: a local server may read only one.
        self.max_tokens_field = max_tokens_field or provider.max_tokens_field

    def url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, key: ApiKey | None) -> dict[str, str]:
        return {**bearer(key), "Content-Type": "application/json"}

    def payload(self, request: Request) -> dict[str, Any]:
        """The request body, with :data:`IMAGE_SLOT` standing for the image's data URL."""
        content: list[dict[str, Any]] = []
        if request.image is not None:
            content.append({"type": "image_url", "image_url": {"url": IMAGE_SLOT}})
        content.append({"type": "text", "text": request.prompt})
        d = request.decoding
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            self.max_tokens_field: d.max_output_tokens,
        }
        if d.temperature is not None:
            body["temperature"] = d.temperature
        body.update(thinking_fields(self.provider.name, d.thinking))
        return body

    def encode(self, request: Request) -> Body:
        image = request.image.data_url if request.image is not None else None
        return splice_json(self.payload(request), image)

    def usage(self, doc: Mapping[str, Any]) -> Usage:
        usage = field_dict(doc, "usage")
        details = field_dict(usage, "completion_tokens_details")
        return Usage(
            input_tokens=count(usage.get("prompt_tokens")),
            output_tokens=count(usage.get("completion_tokens")),
            reasoning_tokens=count(details.get("reasoning_tokens")),
        )

    def reply(self, doc: Mapping[str, Any], usage: Usage) -> Reply:
        try:
            choice = doc["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise Transient("malformed chat completion: no choices[0].message") from None
        if not isinstance(message, dict):
            raise Transient("malformed chat completion: message is not an object")
        return Reply(
            answer=_text(message.get("content")),
            reasoning=_text(message.get("reasoning_content") or message.get("reasoning")),
            finish_reason=as_text(choice.get("finish_reason")),
            usage=usage,
            model=as_text(doc.get("model")),
            response_id=as_text(doc.get("id")),
        )

    def classify(self, status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError:
        return classify_openai(status, headers, body)


def classify_openai(status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError:
    """The error class of a non-2xx OpenAI-compatible response, from its body first."""
    error = body.error
    code = as_text(error.get("code")) or as_text(error.get("type"))
    kind = as_text(error.get("type"))
    message = redact(as_text(error.get("message")) or body.text or f"HTTP {status}")
    wait = retry_after(headers)
    names = {n for n in (code, kind) if n}

    def make(cls: type[CallError]) -> CallError:
        return cls(message, status=status, code=code, retry_after=wait)

    if names & QUOTA_CODES:
        return make(QuotaExhausted)
    if "Throttling.AllocationQuota" in names and _PLAN_SPENT.search(message):
        return make(QuotaExhausted)
    if names & TRANSIENT_CODES:
        return make(Transient)
    if names & RATE_CODES or status == 429:
        return make(RateLimited)
    if status >= 500 or status == 408:
        return make(Transient)
    if status in REFUSED_STATUSES or names & REFUSED_CODES:
        return make(Refused)
    return make(Fatal)


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content given as parts
        texts = (p.get("text") for p in value if isinstance(p, dict))
        return "".join(t for t in texts if isinstance(t, str))  # a part may hold anything
    return ""
