"""The simulator's three wire formats, one handler each: how a request is read and how every
reply — an answer, a throttle, spent quota, overload, any other error — is written.

The server decides *what* happens to a request; a :class:`WireFormat` decides how it looks on
the wire. OpenAI-compatible providers share one (their codes are OpenAI's); Gemini's errors are
``google.rpc.Status`` objects with ``QuotaFailure`` and ``RetryInfo`` details; Anthropic's are
typed (``{"type": "error", "error": {"type", "message"}}``), its overload a 529, its rate-limit
headers ``anthropic-ratelimit-*`` with an RFC 3339 reset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from runner.simulator._model import Answer

Wire = Literal["openai", "gemini", "anthropic"]
Doc = dict[str, Any]

# Gemini's RPC status for an HTTP status the simulator answers with.
_RPC = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND"}
_GEMINI_PATH = re.compile(r"/models/([^/:]+):generateContent$")
_QUOTA_MESSAGE = "You exceeded your current quota, please check your plan and billing details."


@dataclass(frozen=True)
class Parsed:
    wire: Wire
    model: str
    prompt: str
    image_b64: bytes | None
    thinking: bool
    temperature: float | None
    thinking_budget: int | None = None  # reasoning's token budget, where the request sets one
    effort: str | None = None  # reasoning's effort level, where the request names one


@dataclass(frozen=True)
class Reasoning:
    """Reasoning as a request sets it: on or off, and its token budget or effort level where
    the request gives one (None: left to the provider)."""

    thinking: bool = True
    budget: int | None = None
    effort: str | None = None


def read_reasoning(wire: Wire, doc: Doc) -> Reasoning:
    """Reasoning as ``doc`` sets it, read as each provider reads its own fields: on the
    OpenAI wire DashScope's ``enable_thinking``/``thinking_budget``, Ark's and Kimi's
    ``thinking: {type}``, OpenAI's and Ark's ``reasoning_effort``; on Gemini's the
    ``generationConfig``'s ``thinkingConfig`` (``thinkingBudget``, 0 off, −1 dynamic;
    ``thinkingLevel``); on Anthropic's ``thinking: {type, budget_tokens}``. ``doc`` is the
    request body (Gemini: its ``generationConfig``), or the fields a backend adds to it.

    >>> read_reasoning("openai", {"enable_thinking": True, "thinking_budget": 4096})
    Reasoning(thinking=True, budget=4096, effort=None)
    >>> read_reasoning("gemini", {"thinkingConfig": {"thinkingLevel": "high"}})
    Reasoning(thinking=True, budget=None, effort='high')
    """
    if wire == "gemini":
        config = doc.get("thinkingConfig") or {}
        budget = config.get("thinkingBudget")
        if budget == 0:
            return Reasoning(False)
        budget = budget if isinstance(budget, int) and budget > 0 else None
        return Reasoning(True, budget, _text(config.get("thinkingLevel")))
    if wire == "anthropic":
        thinking = doc.get("thinking") or {}
        if thinking.get("type") != "enabled":
            return Reasoning(False)
        return Reasoning(True, thinking.get("budget_tokens"))
    on = doc.get("enable_thinking", True) is not False
    if isinstance(doc.get("thinking"), dict):
        on = doc["thinking"].get("type") != "disabled"
    effort = _text(doc.get("reasoning_effort"))
    if not on or effort == "none":
        return Reasoning(False)
    budget = doc.get("thinking_budget")
    return Reasoning(True, budget if isinstance(budget, int) else None, effort)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class BadRequest(Exception):
    """The request is not one the real API would accept (answered with a 400)."""


@dataclass(frozen=True)
class Usage:
    """What a reply's tokens were, as the simulator counts them."""

    input: int
    output: int
    reasoning: int


class WireFormat(Protocol):
    name: Wire
    image_marker: bytes  # what precedes the base64 image in a request body

    def serves(self, path: str) -> bool: ...

    def given_key(self, headers: Mapping[str, str]) -> str: ...

    def parse(self, path: str, doc: Doc) -> Parsed: ...

    # ``created``: the answer's time in unix seconds, for the wires whose answer carries one.
    def answer(
        self, parsed: Parsed, reply: Answer, serial: int, usage: Usage, *, created: int
    ) -> Doc: ...

    def error(self, status: int, code: str, message: str) -> Doc: ...

    def throttled(self, wait_s: float, tells_wait: bool) -> tuple[int, Doc]: ...

    def quota_spent(self) -> tuple[int, Doc]: ...

    def overloaded(self) -> tuple[int, Doc]: ...

    def bad_key(self, message: str) -> tuple[int, Doc]:
        """A key the server refuses; ``message`` is OpenAI's words, echoing the key masked."""
        ...

    def unknown_model(self, model: str) -> tuple[int, Doc]:
        """A model the server does not serve."""
        ...

    def limit_headers(
        self, limit: float, remaining: int, reset_s: float, now: float
    ) -> dict[str, str]:
        """The rate-limit headers of a reply (``now``: unix seconds, for a reset given as a
        time)."""
        ...


def x_ratelimit(limit: float, remaining: int, reset_s: float) -> dict[str, str]:
    """OpenAI's ``x-ratelimit-*`` request headers (the simulator sends them for Gemini too)."""
    return {
        "x-ratelimit-limit-requests": f"{limit:g}",
        "x-ratelimit-remaining-requests": str(remaining),
        "x-ratelimit-reset-requests": f"{reset_s:.3f}s",
    }


class OpenAIWire:
    """``POST …/chat/completions``, whatever the prefix: any OpenAI-compatible provider."""

    name: Wire = "openai"
    image_marker = b";base64,"

    def serves(self, path: str) -> bool:
        return path.endswith("/chat/completions")

    def given_key(self, headers: Mapping[str, str]) -> str:
        return headers.get("Authorization", "").removeprefix("Bearer ")

    def parse(self, path: str, doc: Doc) -> Parsed:
        prompt, image = "", None
        for part in doc["messages"][-1]["content"]:
            if part["type"] == "text":
                prompt += part["text"]
            elif part["type"] == "image_url":
                image = part["image_url"]["url"].split(",", 1)[1].encode()
        # Each provider's own switch (DashScope, Ark/Kimi, OpenAI), whichever is sent.
        r = read_reasoning("openai", doc)
        return Parsed("openai", str(doc["model"]), prompt, image, r.thinking,
                      doc.get("temperature"), r.budget, r.effort)  # fmt: skip

    def answer(
        self, parsed: Parsed, reply: Answer, serial: int, usage: Usage, *, created: int
    ) -> Doc:
        message: Doc = {"role": "assistant", "content": reply.text}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        return {
            "id": f"chatcmpl-sim-{serial}",
            "object": "chat.completion",
            "created": created,  # unix seconds; required by the chat completion object
            "model": parsed.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": usage.input,
                "completion_tokens": usage.output + usage.reasoning,
                "total_tokens": usage.input + usage.output + usage.reasoning,
                "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
            },
        }

    def error(self, status: int, code: str, message: str) -> Doc:
        return {"error": {"message": message, "type": code, "param": None, "code": code}}

    def throttled(self, wait_s: float, tells_wait: bool) -> tuple[int, Doc]:
        # The wait itself travels in headers (retry-after), which the server sets for both.
        message = "Rate limit reached for requests per minute. Please try again later."
        return 429, self.error(429, "rate_limit_exceeded", message)

    def quota_spent(self) -> tuple[int, Doc]:
        return 429, self.error(429, "insufficient_quota", _QUOTA_MESSAGE)

    def overloaded(self) -> tuple[int, Doc]:
        message = "The engine is currently overloaded, please try again later"
        return 429, self.error(429, "engine_overloaded_error", message)

    def bad_key(self, message: str) -> tuple[int, Doc]:
        return 401, self.error(401, "invalid_api_key", message)

    def unknown_model(self, model: str) -> tuple[int, Doc]:
        # OpenAI's words and code for a model the key cannot see.
        message = f"The model `{model}` does not exist or you do not have access to it."
        doc = self.error(404, "invalid_request_error", message)
        doc["error"]["code"] = "model_not_found"
        return 404, doc

    def limit_headers(
        self, limit: float, remaining: int, reset_s: float, now: float
    ) -> dict[str, str]:
        return x_ratelimit(limit, remaining, reset_s)


class GeminiWire:
    """``POST …/models/<model>:generateContent``."""

    name: Wire = "gemini"
    image_marker = b'"data":"'

    def serves(self, path: str) -> bool:
        return path.endswith(":generateContent")

    def given_key(self, headers: Mapping[str, str]) -> str:
        return headers.get("x-goog-api-key", "")

    def parse(self, path: str, doc: Doc) -> Parsed:
        match = _GEMINI_PATH.search(path)
        if match is None:
            raise BadRequest(f"no model in {path}")
        prompt, image = "", None
        for part in doc["contents"][-1]["parts"]:
            if "text" in part:
                prompt += part["text"]
            inline = part.get("inline_data") or part.get("inlineData")  # REST takes both
            if inline is not None:
                image = inline["data"].encode()
        config = doc.get("generationConfig", {})
        r = read_reasoning("gemini", config)
        return Parsed("gemini", match.group(1), prompt, image, r.thinking,
                      config.get("temperature"), r.budget, r.effort)  # fmt: skip

    def answer(
        self, parsed: Parsed, reply: Answer, serial: int, usage: Usage, *, created: int
    ) -> Doc:
        parts: list[Doc] = []
        if reply.reasoning:
            parts.append({"text": reply.reasoning, "thought": True})
        parts.append({"text": reply.text})
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": usage.input,
                "candidatesTokenCount": usage.output,
                "thoughtsTokenCount": usage.reasoning,
                "totalTokenCount": usage.input + usage.output + usage.reasoning,
            },
            "modelVersion": parsed.model,
            "responseId": f"sim-{serial}",
        }

    def error(self, status: int, code: str, message: str) -> Doc:
        return self._status(status, _RPC.get(status, "INTERNAL"), message, [])

    def throttled(self, wait_s: float, tells_wait: bool) -> tuple[int, Doc]:
        details = [_quota_failure("GenerateRequestsPerMinutePerProjectPerModel")]
        if tells_wait:
            retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo"}
            details.append({**retry, "retryDelay": f"{wait_s:.3f}s"})
        return 429, self._status(429, "RESOURCE_EXHAUSTED", "Resource exhausted.", details)

    def quota_spent(self) -> tuple[int, Doc]:
        details = [_quota_failure("GenerateRequestsPerDayPerProjectPerModel")]
        return 429, self._status(429, "RESOURCE_EXHAUSTED", _QUOTA_MESSAGE, details)

    def overloaded(self) -> tuple[int, Doc]:
        return 503, self._status(503, "UNAVAILABLE", "The model is overloaded.", [])

    def bad_key(self, message: str) -> tuple[int, Doc]:
        # As the Gemini API does: a 400, the key's fault said by an ErrorInfo reason.
        info = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        }
        said = "API key not valid. Please pass a valid API key."  # it echoes no key
        return 400, self._status(400, "INVALID_ARGUMENT", said, [info])

    def unknown_model(self, model: str) -> tuple[int, Doc]:
        said = (
            f"models/{model} is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their "
            "supported methods."
        )
        return 404, self._status(404, "NOT_FOUND", said, [])

    def limit_headers(
        self, limit: float, remaining: int, reset_s: float, now: float
    ) -> dict[str, str]:
        return x_ratelimit(limit, remaining, reset_s)

    @staticmethod
    def _status(status: int, rpc: str, message: str, details: list[Doc]) -> Doc:
        return {"error": {"code": status, "message": message, "status": rpc, "details": details}}


def _quota_failure(quota_id: str) -> Doc:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                        "quotaId": quota_id}],
    }  # fmt: skip


# Anthropic's error type for an HTTP status the simulator answers with (docs.claude.com/en/api/
# errors); a status it does not list is an invalid_request_error (4xx) or an api_error (5xx).
_ANTHROPIC_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
    429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error",
}  # fmt: skip
_NO_CREDIT = (
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing "
    "to upgrade or purchase credits."
)


class AnthropicWire:
    """``POST /v1/messages``: Anthropic's Messages API."""

    name: Wire = "anthropic"
    image_marker = b'"data":"'

    def serves(self, path: str) -> bool:
        return path.endswith("/v1/messages")

    def given_key(self, headers: Mapping[str, str]) -> str:
        # The reference's x-api-key (what groundbench sends), or a bearer token: the official
        # SDK's 2.x clients send the key so.
        bearer = headers.get("Authorization", "").removeprefix("Bearer ")
        return headers.get("x-api-key", "") or bearer

    def parse(self, path: str, doc: Doc) -> Parsed:
        if not isinstance(doc.get("max_tokens"), int):
            raise BadRequest("max_tokens: Field required")  # the API requires it
        prompt, image = "", None
        for block in doc["messages"][-1]["content"]:
            if block["type"] == "text":
                prompt += block["text"]
            elif block["type"] == "image":
                image = block["source"]["data"].encode()
        r = read_reasoning("anthropic", doc)
        if r.thinking and not 1024 <= doc["thinking"]["budget_tokens"] < doc["max_tokens"]:
            raise BadRequest("thinking.budget_tokens: must be ≥ 1024 and less than max_tokens")
        if r.thinking and doc.get("temperature", 1) != 1:
            raise BadRequest("temperature may only be set to 1 when thinking is enabled")
        return Parsed("anthropic", str(doc["model"]), prompt, image, r.thinking,
                      doc.get("temperature"), r.budget, r.effort)  # fmt: skip

    def answer(
        self, parsed: Parsed, reply: Answer, serial: int, usage: Usage, *, created: int
    ) -> Doc:
        content: list[Doc] = []
        if reply.reasoning:
            signature = f"sim-signature-{serial}"
            content.append(
                {"type": "thinking", "thinking": reply.reasoning, "signature": signature}
            )
        content.append({"type": "text", "text": reply.text})
        return {
            "id": f"msg_sim_{serial}",
            "type": "message",
            "role": "assistant",
            "model": parsed.model,
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input,
                "output_tokens": usage.output + usage.reasoning,  # thinking is billed as output
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def error(self, status: int, code: str, message: str) -> Doc:
        kind = _ANTHROPIC_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}

    def throttled(self, wait_s: float, tells_wait: bool) -> tuple[int, Doc]:
        message = "This request would exceed the rate limit for your organization."
        return 429, self.error(429, "rate_limit_error", message)

    def quota_spent(self) -> tuple[int, Doc]:
        return 400, self.error(400, "invalid_request_error", _NO_CREDIT)  # as the API sends it

    def overloaded(self) -> tuple[int, Doc]:
        return 529, self.error(529, "overloaded_error", "Overloaded")

    def bad_key(self, message: str) -> tuple[int, Doc]:
        return 401, self.error(401, "authentication_error", "invalid x-api-key")  # no key echoed

    def unknown_model(self, model: str) -> tuple[int, Doc]:
        return 404, self.error(404, "not_found_error", f"model: {model}")

    def limit_headers(
        self, limit: float, remaining: int, reset_s: float, now: float
    ) -> dict[str, str]:
        reset = datetime.fromtimestamp(now + reset_s, UTC).isoformat(timespec="seconds")
        return {
            "anthropic-ratelimit-requests-limit": f"{limit:g}",
            "anthropic-ratelimit-requests-remaining": str(remaining),
            "anthropic-ratelimit-requests-reset": reset.replace("+00:00", "Z"),
        }


WIRES: tuple[WireFormat, ...] = (OpenAIWire(), GeminiWire(), AnthropicWire())


def wire_for(path: str) -> WireFormat | None:
    """The wire format serving ``path``; None for a path neither serves."""
    return next((w for w in WIRES if w.serves(path)), None)
