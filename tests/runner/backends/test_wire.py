"""Each wire format writes the provider's fields and reads answer and reasoning apart."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from conditions import (
    BOX,
    Configuration,
    Decoding,
    ImageBlob,
    Request,
    RequestKey,
    Thinking,
    Transport,
)
from runner._errors import ConfigError
from runner.backends import (
    PROVIDERS,
    AnthropicMessages,
    ApiKey,
    Client,
    GeminiGenerate,
    OpenAIChat,
    Transient,
    key_from_env,
    thinking_fields,
)

IMAGE = ImageBlob(b"\xff\xd8jpeg-bytes\x00\x01", "image/jpeg", 640, 480)


def _request(
    thinking: Thinking, image: ImageBlob | None = IMAGE, temperature: float | None = None
) -> Request:
    decoding = Decoding(thinking=thinking, temperature=temperature, max_output_tokens=4096)
    key = RequestKey(configuration="c", condition="base", budget=8, qid="refcoco:1")
    return Request(key, "p" * 64, 'Outline "the cat".', image, decoding, 0)


@pytest.mark.parametrize(
    ("provider", "thinking", "fields"),
    [
        ("qwen", Thinking(mode="on", effort="max"), {"enable_thinking": True}),
        ("qwen", Thinking(mode="on", budget_tokens=4096),
         {"enable_thinking": True, "thinking_budget": 4096}),
        ("qwen", Thinking(mode="off"), {"enable_thinking": False}),
        ("doubao", Thinking(mode="on"), {"thinking": {"type": "enabled"}}),
        ("doubao", Thinking(mode="on", effort="high"),
         {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
        ("doubao", Thinking(mode="off"), {"thinking": {"type": "disabled"}}),
        ("kimi", Thinking(mode="on"), {"thinking": {"type": "enabled"}}),
        ("kimi", Thinking(mode="off"), {"thinking": {"type": "disabled"}}),
        ("openai", Thinking(mode="on", effort="low"), {"reasoning_effort": "low"}),
        ("openai", Thinking(mode="off"), {"reasoning_effort": "none"}),
        ("gemini", Thinking(mode="on", effort="high"),
         {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "high"}}),
        ("gemini", Thinking(mode="on", budget_tokens=4096),
         {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 4096}}),
        ("gemini", Thinking(mode="off"), {"thinkingConfig": {"thinkingBudget": 0}}),
        ("anthropic", Thinking(mode="on", budget_tokens=4096),
         {"thinking": {"type": "enabled", "budget_tokens": 4096}}),
        ("anthropic", Thinking(mode="off"), {"thinking": {"type": "disabled"}}),
    ],
)  # fmt: skip
def test_reasoning_maps_to_each_providers_fields(
    provider: str, thinking: Thinking, fields: dict[str, object]
) -> None:
    assert thinking_fields(provider, thinking) == fields


@pytest.mark.parametrize(
    ("provider", "thinking"),
    [
        ("qwen", Thinking(mode="on", effort="low")),
        ("doubao", Thinking(mode="on", budget_tokens=100)),
        ("kimi", Thinking(mode="on", effort="high")),
        ("openai", Thinking(mode="on", budget_tokens=100)),
        ("gemini", Thinking(mode="on", effort="high", budget_tokens=100)),
        ("gemini", Thinking(mode="on", effort="max")),
        ("anthropic", Thinking(mode="on", effort="high")),
        ("anthropic", Thinking(mode="on")),  # no budget: extended thinking has no default
        ("anthropic", Thinking(mode="on", budget_tokens=1023)),  # below the API's minimum
    ],
)
def test_a_setting_the_api_cannot_express_is_refused(provider: str, thinking: Thinking) -> None:
    with pytest.raises(ConfigError, match=provider):
        thinking_fields(provider, thinking)


def test_a_backend_refuses_a_configuration_whose_condition_it_cannot_map() -> None:
    # Kimi has no token budget, so the thinking-budget condition cannot run on it.
    configuration = Configuration(
        name="kimi", provider="kimi", model="kimi-k2.6", conditions=("base", "thinking-budget")
    )
    with pytest.raises(ConfigError, match=r"configuration kimi: .*budget"):
        Client(configuration, ApiKey("sk-x"))


def test_a_backend_refuses_a_box_configuration_whose_reasoning_it_cannot_map() -> None:
    # Qwen takes effort "max" or a budget; its cot condition keeps the configuration's "high".
    configuration = Configuration(
        name="qwen", provider="qwen", model="qwen3-vl-plus", conditions=("direct", "cot"),
        decoding=Decoding(thinking=Thinking(mode="on", effort="high")),
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"configuration qwen: .*effort 'high'"):
        Client(configuration, ApiKey("sk-x"))
    direct_only = configuration.model_copy(update={"conditions": ("direct",)})
    Client(direct_only, ApiKey("sk-x"))  # thinking off: nothing to map


def test_openai_body_carries_the_image_as_a_data_url_before_the_text() -> None:
    wire = OpenAIChat(PROVIDERS["qwen"], "qwen3-vl-plus")
    body = json.loads(
        bytes(wire.encode(_request(Thinking(mode="on", effort="max"), temperature=0.0)))
    )
    image, text = body["messages"][0]["content"]
    assert (
        image["image_url"]["url"]
        == "data:image/jpeg;base64," + base64.b64encode(IMAGE.data).decode()
    )
    assert text == {"type": "text", "text": 'Outline "the cat".'}
    assert body["max_tokens"] == 4096 and body["temperature"] == 0.0
    assert body["enable_thinking"] is True and body["model"] == "qwen3-vl-plus"


def test_openai_itself_takes_max_completion_tokens() -> None:
    body = json.loads(bytes(OpenAIChat(PROVIDERS["openai"], "gpt-5").encode(_request(Thinking()))))
    assert body["max_completion_tokens"] == 4096 and "max_tokens" not in body


def test_no_image_sends_only_the_text() -> None:
    body = json.loads(bytes(OpenAIChat(PROVIDERS["kimi"], "k").encode(_request(Thinking(), None))))
    assert [p["type"] for p in body["messages"][0]["content"]] == ["text"]
    gemini = json.loads(bytes(GeminiGenerate("g").encode(_request(Thinking(), None))))
    assert gemini["contents"][0]["parts"] == [{"text": 'Outline "the cat".'}]


def test_gemini_body_carries_inline_data_and_generation_config() -> None:
    wire = GeminiGenerate("gemini-3-pro-preview")
    body = json.loads(bytes(wire.encode(_request(Thinking(mode="on", effort="high")))))
    image, text = body["contents"][0]["parts"]
    assert base64.b64decode(image["inline_data"]["data"]) == IMAGE.data
    assert image["inline_data"]["mime_type"] == "image/jpeg"
    assert text["text"] == 'Outline "the cat".'
    assert body["generationConfig"]["maxOutputTokens"] == 4096
    assert body["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "high"
    assert wire.url("https://x/v1beta/") == (
        "https://x/v1beta/models/gemini-3-pro-preview:generateContent"
    )
    assert "x-goog-api-key" in wire.headers(ApiKey("AIza-secret"))


def test_the_image_is_base64_encoded_once_per_blob() -> None:
    blob = ImageBlob(b"abc" * 1000, "image/png", 10, 10)
    wire = OpenAIChat(PROVIDERS["qwen"], "m")
    request = _request(Thinking(), blob)
    wire.encode(request)
    first = blob.base64
    wire.encode(request)
    assert blob.base64 is first  # cached on the blob, not made again


def test_openai_answer_and_reasoning_are_kept_apart() -> None:
    body = {
        "id": "chatcmpl-1",
        "model": "qwen3-vl-plus",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "1 2 3 4", "reasoning_content": "think 5 6"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 7,
                  "completion_tokens_details": {"reasoning_tokens": 3}},
    }  # fmt: skip
    reply = OpenAIChat(PROVIDERS["qwen"], "m").decode(json.dumps(body).encode())
    assert (reply.answer, reply.reasoning, reply.finish_reason) == ("1 2 3 4", "think 5 6", "stop")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (10, 7)
    assert reply.usage.reasoning_tokens == 3 and reply.response_id == "chatcmpl-1"


def test_gemini_thought_parts_are_reasoning_not_answer() -> None:
    body = {
        "candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
            {"text": "thinking 1 2", "thought": True}, {"text": "10 20 "}, {"text": "30 40"}]}}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4,
                          "thoughtsTokenCount": 6},
        "modelVersion": "gemini-3-pro-preview", "responseId": "r1",
    }  # fmt: skip
    reply = GeminiGenerate("g").decode(json.dumps(body).encode())
    assert (reply.answer, reply.reasoning) == ("10 20 30 40", "thinking 1 2")
    assert (reply.usage.output_tokens, reply.usage.reasoning_tokens) == (10, 6)


def test_a_blocked_gemini_prompt_is_an_empty_answer_not_an_error() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}
    reply = GeminiGenerate("g").decode(json.dumps(body).encode())
    assert reply.answer == "" and reply.finish_reason == "blocked:SAFETY"


@pytest.mark.parametrize(
    "raw",
    [b'{"id": "x", "choices": [', b"<html>502</html>", b"[]", b'{"choices": []}', b""],
)
def test_a_malformed_or_truncated_body_is_transient(raw: bytes) -> None:
    with pytest.raises(Transient, match="malformed"):
        OpenAIChat(PROVIDERS["kimi"], "k").decode(raw)
    with pytest.raises(Transient, match="malformed"):
        GeminiGenerate("g").decode(raw)


def test_a_key_never_shows_in_repr_str_or_pickle() -> None:
    key = ApiKey("sk-very-secret-123456")
    assert "secret" not in repr(key) and "secret" not in str(key) and "secret" not in f"{key}"
    with pytest.raises(TypeError):
        pickle.dumps(key)
    assert key.reveal() == "sk-very-secret-123456"


def test_a_missing_key_variable_is_named_without_any_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GB_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="GB_TEST_KEY is not set"):
        key_from_env("GB_TEST_KEY")
    monkeypatch.setenv("GB_TEST_KEY", "sk-from-env-999")
    assert key_from_env("GB_TEST_KEY").reveal() == "sk-from-env-999"


def test_a_box_request_key_has_budget_zero() -> None:
    assert RequestKey(configuration="c", condition="base", budget=BOX, qid="q").is_box


def test_a_backend_reads_its_key_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    configuration = Configuration(
        name="q", provider="qwen", model="m", transport=Transport(api_key_env="MY_QWEN_KEY")
    )
    monkeypatch.delenv("MY_QWEN_KEY", raising=False)
    with pytest.raises(ConfigError, match="MY_QWEN_KEY is not set"):
        Client.from_env(configuration)
    monkeypatch.setenv("MY_QWEN_KEY", "sk-qwen-secret-1")
    backend = Client.from_env(configuration)
    assert "sk-qwen-secret-1" not in repr(backend)
    default = Configuration(name="g", provider="gemini", model="m")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-default-variable")
    assert Client.from_env(default).provider.key_variable == "GEMINI_API_KEY"


def test_an_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'acme'"):
        Client(Configuration(name="a", provider="acme", model="m"), ApiKey("k"))


def test_anthropic_body_carries_a_base64_image_block_before_the_text() -> None:
    wire = AnthropicMessages("claude-sonnet-4-5")
    body = json.loads(bytes(wire.encode(_request(Thinking(mode="off"), temperature=0.0))))
    image, text = body["messages"][0]["content"]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(image["source"]["data"]) == IMAGE.data
    assert text == {"type": "text", "text": 'Outline "the cat".'}
    assert body["max_tokens"] == 4096 and body["temperature"] == 0.0
    assert body["model"] == "claude-sonnet-4-5" and body["thinking"] == {"type": "disabled"}
    assert wire.url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages"
    headers = wire.headers(ApiKey("sk-ant-x"))
    assert headers["x-api-key"] == "sk-ant-x" and headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in headers


def test_anthropic_thinking_blocks_are_reasoning_and_cache_tokens_count_as_input() -> None:
    body = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "the cat is left", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "[[1, 2], "}, {"type": "text", "text": "[3, 4]]"},
        ],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 7,
                  "cache_read_input_tokens": 3},
    }  # fmt: skip
    reply = AnthropicMessages("m").decode(json.dumps(body).encode())
    assert reply.answer == "[[1, 2], [3, 4]]" and reply.reasoning == "the cat is left"
    assert reply.finish_reason == "end_turn" and reply.response_id == "msg_1"
    assert reply.usage.input_tokens == 110 and reply.usage.output_tokens == 50
    assert reply.model == "claude-sonnet-4-5"


def test_a_message_without_content_blocks_is_transient() -> None:
    with pytest.raises(Transient, match="content"):
        AnthropicMessages("m").decode(b'{"type": "message", "usage": {}}')


@pytest.mark.parametrize(
    ("decoding", "match"),
    [
        (Decoding(thinking=Thinking(mode="on", budget_tokens=8192), max_output_tokens=8192),
         "below max_output_tokens"),
        (Decoding(thinking=Thinking(mode="on", budget_tokens=2048), temperature=0.0),
         "temperature"),
        (Decoding(thinking=Thinking(mode="off"), temperature=1.5), "0 to 1"),
    ],
)  # fmt: skip
def test_an_anthropic_backend_refuses_what_the_api_refuses_with_thinking(
    decoding: Decoding, match: str
) -> None:
    configuration = Configuration(name="c", provider="anthropic", model="m", decoding=decoding)
    with pytest.raises(ConfigError, match=match):
        Client(configuration, ApiKey("sk-ant-x"))


def test_an_anthropic_backend_takes_temperature_1_with_thinking_and_any_without() -> None:
    # The paper's temperature condition (1.0) runs with thinking on; thinking-off takes any.
    on = Decoding(thinking=Thinking(mode="on", budget_tokens=2048), temperature=1.0)
    off = Decoding(thinking=Thinking(mode="off"), temperature=0.3)
    for decoding in (on, off):
        Client(Configuration(name="c", provider="anthropic", model="m", decoding=decoding),
               ApiKey("sk-ant-x"))  # fmt: skip
