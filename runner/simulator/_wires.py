"""The simulator's two wire formats, one handler each: how a request is read and how every
reply — an answer, a throttle, spent quota, overload, any other error — is written.

The server decides *what* happens to a request; a :class:`WireFormat` decides how it looks on
the wire. OpenAI-compatible providers share one (their codes are OpenAI's); Gemini's errors are
``google.rpc.Status`` objects with ``QuotaFailure`` and ``RetryInfo`` details.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from runner.simulator._model import Answer

Wire = Literal["openai", "gemini"]
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
        thinking = doc.get("enable_thinking", True) is not False
        if isinstance(doc.get("thinking"), dict):
            thinking = doc["thinking"].get("type") != "disabled"
        if doc.get("reasoning_effort") == "none":
            thinking = False
        return Parsed("openai", str(doc["model"]), prompt, image, thinking, doc.get("temperature"))

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
        thinking = config.get("thinkingConfig", {}).get("thinkingBudget") != 0
        return Parsed("gemini", match.group(1), prompt, image, thinking, config.get("temperature"))

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

    @staticmethod
    def _status(status: int, rpc: str, message: str, details: list[Doc]) -> Doc:
        return {"error": {"code": status, "message": message, "status": rpc, "details": details}}


def _quota_failure(quota_id: str) -> Doc:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                        "quotaId": quota_id}],
    }  # fmt: skip


WIRES: tuple[WireFormat, ...] = (OpenAIWire(), GeminiWire())


def wire_for(path: str) -> WireFormat | None:
    """The wire format serving ``path``; None for a path neither serves."""
    return next((w for w in WIRES if w.serves(path)), None)
