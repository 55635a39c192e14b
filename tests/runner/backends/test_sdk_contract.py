"""Contracts with the providers' official SDKs (test-only dependencies, never imported by the
package): the request bodies groundbench sends validate against ``openai``'s,
``google-genai``'s and ``anthropic``'s own request types, and the SDKs' clients read the
simulator's responses as groundbench's decoders read them.

The SDKs are written by the providers, independently of this project: a body they refuse, or
a response they cannot parse, is a contract broken on our side.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pydantic
import pytest
from anthropic.types import ContentBlockParam, MessageParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from anthropic.types.messages.batch_create_params import BatchCreateParams
from anthropic.types.messages.batch_create_params import Request as BatchRequest
from google import genai
from google.genai import types as gtypes
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionContentPartParam, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

from conditions import Cohort, DataRoot, Request, Thinking, VariantCache
from runner._errors import ConfigError
from runner.backends import (
    PROVIDERS,
    AnthropicMessages,
    ApiKey,
    GeminiGenerate,
    OpenAIChat,
    Origin,
    thinking_fields,
)
from runner.backends._wire import IMAGE_SLOT
from runner.batch._anthropic import AnthropicBatches
from runner.batch._anthropic import _envelope as batch_envelope
from runner.simulator import SimSpec, Simulator, serving
from tests.runner.backends.test_wire import IMAGE
from tests.runner.backends.test_wire import _request as _wire_request
from tests.runner.test_against_simulator import CLEAN, GEMINI, KEY, QWEN
from tests.runner.test_against_simulator import _requests as _simulator_requests
from tests.runner.test_anthropic_against_simulator import CLAUDE

OPENAI_WIRE = sorted(name for name, p in PROVIDERS.items() if p.wire == "openai")
THINKING = [
    Thinking(mode="off"),
    Thinking(mode="on"),
    Thinking(mode="on", effort="high"),
    Thinking(mode="on", budget_tokens=2048),
    Thinking(mode="on", effort="max"),
    Thinking(mode="on", budget_tokens=1024),
]
PARAMS = pydantic.TypeAdapter(CompletionCreateParamsNonStreaming)
# The SDK types ``messages`` and a message's parts as Iterables, which pydantic checks only as
# they are consumed: each is checked as a list of its own.
MESSAGES = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
PARTS = pydantic.TypeAdapter(list[ChatCompletionContentPartParam])
# Anthropic's, the same way: the params, the messages, and each message's content blocks.
CLAUDE_PARAMS = pydantic.TypeAdapter(MessageCreateParamsNonStreaming)
CLAUDE_MESSAGES = pydantic.TypeAdapter(list[MessageParam])
CLAUDE_BLOCKS = pydantic.TypeAdapter(list[ContentBlockParam])
# BatchCreateParams's ``requests`` is an Iterable, which pydantic validates only as it is
# iterated: the list of requests is validated as a list of the SDK's Request.
BATCH_CREATE = pydantic.TypeAdapter(BatchCreateParams)
BATCH_REQUESTS = pydantic.TypeAdapter(list[BatchRequest])
# A TypedDict takes unknown keys silently: the body's keys are checked against its own. The API
# reference lists ``temperature`` (0 to 1); the SDK's 2.x types no longer carry it, so the SDK
# sends it as an extra field, as groundbench does.
CLAUDE_KEYS = (
    MessageCreateParamsNonStreaming.__required_keys__
    | MessageCreateParamsNonStreaming.__optional_keys__
    | {"temperature"}
)


def _cases(providers: list[str]) -> list[tuple[str, Thinking]]:
    """Each provider with each reasoning setting its API can express (the others are refused
    when the backend is made, before any body exists)."""
    return [(p, t) for p in providers for t in THINKING if _expressible(p, t)]


def _request(thinking: Thinking) -> Request:
    return _wire_request(thinking, temperature=0.0)


def _expressible(provider: str, thinking: Thinking) -> bool:
    try:
        thinking_fields(provider, thinking)
    except ConfigError:  # a setting the provider's API cannot express is refused earlier
        return False
    return True


def _filled(value: Any, image: str) -> Any:
    """``value`` with the image slot filled, as the bytes sent have it."""
    if isinstance(value, dict):
        return {k: _filled(v, image) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, image) for v in value]
    return image if value == IMAGE_SLOT else value


def _text(value: str | bytes) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else value


# -- request bodies ------------------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "thinking"), _cases(OPENAI_WIRE), ids=str)
def test_an_openai_wire_body_is_a_valid_chat_completion_request(
    provider: str, thinking: Thinking
) -> None:
    body = _filled(OpenAIChat(PROVIDERS[provider], "m").payload(_request(thinking)),
                   _text(IMAGE.data_url))  # fmt: skip
    PARAMS.validate_python(body)
    MESSAGES.validate_python(body["messages"])
    for message in body["messages"]:
        PARTS.validate_python(message["content"])


def test_the_openai_check_can_fail() -> None:
    body = _filled(OpenAIChat(PROVIDERS["openai"], "m").payload(_request(THINKING[0])), "x")
    with pytest.raises(pydantic.ValidationError):
        PARAMS.validate_python({**body, "reasoning_effort": "maximal"})
    with pytest.raises(pydantic.ValidationError):
        PARTS.validate_python([{"type": "image_url", "image_url": {"uri": "x"}}])


@pytest.mark.parametrize(("provider", "thinking"), _cases(["gemini"]), ids=str)
def test_a_gemini_body_is_a_valid_generate_content_request(
    provider: str, thinking: Thinking
) -> None:
    body = _filled(GeminiGenerate("m").payload(_request(thinking)), _text(IMAGE.base64))
    assert set(body) <= {"contents", "generationConfig", "systemInstruction", "safetySettings"}
    # google-genai's models forbid unknown fields: a misspelt or misplaced key fails here.
    for content in body["contents"]:
        gtypes.Content.model_validate(content)
    config = gtypes.GenerationConfig.model_validate(body["generationConfig"])
    assert config.max_output_tokens == 4096


def test_the_gemini_check_can_fail() -> None:
    with pytest.raises(pydantic.ValidationError):
        gtypes.GenerationConfig.model_validate({"maxTokens": 10})
    with pytest.raises(pydantic.ValidationError):
        gtypes.GenerationConfig.model_validate({"thinkingConfig": {"budget": 0}})


@pytest.mark.parametrize(("provider", "thinking"), _cases(["anthropic"]), ids=str)
def test_an_anthropic_body_is_a_valid_message_create_request(
    provider: str, thinking: Thinking
) -> None:
    temperature = None if thinking.mode == "on" else 0.0  # the API takes none with thinking
    request = _wire_request(thinking, temperature=temperature)
    body = _filled(AnthropicMessages("m").payload(request), _text(IMAGE.base64))
    assert set(body) <= CLAUDE_KEYS
    CLAUDE_PARAMS.validate_python(body)
    CLAUDE_MESSAGES.validate_python(body["messages"])
    for message in body["messages"]:
        CLAUDE_BLOCKS.validate_python(message["content"])
    assert [b["type"] for b in body["messages"][0]["content"]] == ["image", "text"]


def test_the_anthropic_check_can_fail() -> None:
    body = _filled(AnthropicMessages("m").payload(_request(THINKING[0])), "x")
    with pytest.raises(pydantic.ValidationError):
        CLAUDE_PARAMS.validate_python({**body, "thinking": {"type": "enabled"}})  # no budget
    with pytest.raises(pydantic.ValidationError):
        CLAUDE_PARAMS.validate_python({k: v for k, v in body.items() if k != "max_tokens"})
    tiff = {"type": "base64", "media_type": "image/tiff", "data": "x"}
    with pytest.raises(pydantic.ValidationError):
        CLAUDE_BLOCKS.validate_python([{"type": "image", "source": tiff}])
    assert "thinking_config" not in CLAUDE_KEYS  # a misspelt field would be caught by the keys


@pytest.mark.parametrize(("provider", "thinking"), _cases(["anthropic"]), ids=str)
def test_an_anthropic_batch_create_is_a_valid_batch_create_request(
    provider: str, thinking: Thinking, tmp_path: Path
) -> None:
    """The create's body, as streamed from the file of lines, is the SDK's BatchCreateParams:
    each request ``{custom_id, params}``, its params a valid Messages request."""
    temperature = None if thinking.mode == "on" else 0.0
    request = _wire_request(thinking, temperature=temperature)
    api = AnthropicBatches(None, "m", "http://x", ApiKey("k" * 20), origin=Origin.of("http://x"))  # type: ignore[arg-type]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(bytes(api.line(f"gb-{n}", request)) for n in range(3)))
    body = json.loads(b"".join(asyncio.run(_collected(batch_envelope(path)))))
    BATCH_CREATE.validate_python(body)
    BATCH_REQUESTS.validate_python(body["requests"])
    assert set(body) == {"requests"} and [r["custom_id"] for r in body["requests"]] == [
        "gb-0", "gb-1", "gb-2"
    ]  # fmt: skip
    for item in body["requests"]:
        assert set(item) == {"custom_id", "params"}  # a TypedDict lets others pass
        assert set(item["params"]) <= CLAUDE_KEYS
        CLAUDE_PARAMS.validate_python(item["params"])
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", item["custom_id"])  # the documented id


def test_the_anthropic_batch_check_can_fail() -> None:
    with pytest.raises(pydantic.ValidationError):
        BATCH_REQUESTS.validate_python([{"custom_id": "a"}])  # no params
    with pytest.raises(pydantic.ValidationError):
        BATCH_REQUESTS.validate_python([{"params": {}}])  # no custom_id
    with pytest.raises(pydantic.ValidationError):
        BATCH_CREATE.validate_python({"reqs": []})  # no requests


async def _collected(chunks: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in chunks]


# -- the simulator's responses through the SDKs' clients -----------------------------------------


def test_the_openai_client_reads_the_simulators_answers_as_groundbench_does(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "v")
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN))
    wire = OpenAIChat(PROVIDERS["qwen"], QWEN.model)
    requests = _simulator_requests(small_cohort, small_root, cache, QWEN, 6)

    async def main() -> int:
        checked = 0
        async with serving(sim) as url:
            client = AsyncOpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
            for request in requests:
                image = request.image.data_url if request.image is not None else b""
                body = _filled(wire.payload(request), _text(image))
                standard = {k: body.pop(k) for k in ("model", "messages", "max_tokens")}
                raw = await client.chat.completions.with_raw_response.create(
                    **standard, temperature=body.pop("temperature", None), extra_body=body
                )
                parsed = raw.parse()
                ours = wire.decode(raw.http_response.content)
                message = parsed.choices[0].message
                assert message.content == ours.answer and ours.answer
                assert (message.model_extra or {}).get("reasoning_content", "") == ours.reasoning
                assert parsed.choices[0].finish_reason == ours.finish_reason
                assert parsed.id == ours.response_id and parsed.model == ours.model
                assert parsed.usage is not None
                assert parsed.usage.prompt_tokens == ours.usage.input_tokens
                assert parsed.usage.completion_tokens == ours.usage.output_tokens
                checked += 1
            await client.close()
        return checked

    assert asyncio.run(main()) == len(requests) > 0


def test_the_gemini_client_reads_the_simulators_answers_as_groundbench_does(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "v")
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN))
    requests = _simulator_requests(small_cohort, small_root, cache, GEMINI, 6)
    wire = GeminiGenerate(GEMINI.model)

    async def main() -> int:
        checked = 0
        async with serving(sim) as url:
            client = genai.Client(
                api_key="AIza-test",
                http_options=gtypes.HttpOptions(base_url=url, api_version="v1beta"),
            )
            for request in requests:
                image = request.image.base64 if request.image is not None else b""
                body = _filled(wire.payload(request), _text(image))
                config = gtypes.GenerationConfig.model_validate(body["generationConfig"])
                response = await client.aio.models.generate_content(
                    model=GEMINI.model,
                    contents=[gtypes.Content.model_validate(c) for c in body["contents"]],
                    config=gtypes.GenerateContentConfig(**config.model_dump(exclude_none=True)),
                )
                parts = response.candidates[0].content.parts  # type: ignore[index, union-attr]
                answer = "".join(p.text or "" for p in parts or [] if not p.thought)
                thoughts = "".join(p.text or "" for p in parts or [] if p.thought)
                assert answer and response.text == answer
                usage = response.usage_metadata
                assert usage is not None and usage.prompt_token_count
                assert response.model_version == GEMINI.model
                # The same body as groundbench reads it.
                raw = response.model_dump_json(by_alias=True, exclude_none=True).encode()
                ours = wire.decode(raw)
                assert (ours.answer, ours.reasoning) == (answer, thoughts)
                assert ours.usage.input_tokens == usage.prompt_token_count
                checked += 1
        return checked

    assert asyncio.run(main()) == len(requests) > 0


def test_the_anthropic_client_reads_the_simulators_answers_as_groundbench_does(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "v")
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN, api_key=KEY))
    requests = _simulator_requests(small_cohort, small_root, cache, CLAUDE, 8)
    wire = AnthropicMessages(CLAUDE.model)

    async def main() -> int:
        checked = 0
        async with serving(sim) as url:
            # A timeout of one's own: without it the SDK refuses a non-streaming call whose
            # max_tokens (32,768) might run past 10 minutes; the API itself does not.
            client = anthropic.AsyncAnthropic(
                base_url=url, api_key=KEY, max_retries=0, timeout=60.0
            )
            for request in requests:
                image = request.image.base64 if request.image is not None else b""
                body = _filled(wire.payload(request), _text(image))
                standard = {k: body.pop(k) for k in ("model", "messages", "max_tokens", "thinking")}
                raw = await client.messages.with_raw_response.create(**standard, extra_body=body)
                message = await raw.parse()
                # The SDK's own model, validated (parse() builds it without checking).
                anthropic.types.Message.model_validate(message.model_dump())
                ours = wire.decode(raw.http_response.content)
                texts = [b.text for b in message.content if b.type == "text"]
                thoughts = [b.thinking for b in message.content if b.type == "thinking"]
                assert "".join(texts) == ours.answer and ours.answer
                assert "".join(thoughts) == ours.reasoning
                assert bool(thoughts) == (request.decoding.thinking.mode == "on")
                assert message.stop_reason == ours.finish_reason == "end_turn"
                assert message.id == ours.response_id and message.model == ours.model
                assert message.usage.input_tokens == ours.usage.input_tokens
                assert message.usage.output_tokens == ours.usage.output_tokens
                checked += 1
            await client.close()
        return checked

    assert asyncio.run(main()) == len(requests) > 0


def test_the_anthropic_client_reads_the_simulators_errors_by_their_type(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "v")
    spec = SimSpec(behaviour=CLEAN, api_key=KEY)
    sim = Simulator(small_cohort, small_root.images, cache, spec)
    request = _simulator_requests(small_cohort, small_root, cache, CLAUDE, 1)[0]
    body = AnthropicMessages(CLAUDE.model).payload(request)
    image = request.image.base64 if request.image is not None else b""
    body = _filled(body, _text(image))

    async def main() -> list[tuple[type[Exception], int, object]]:
        seen: list[tuple[type[Exception], int, object]] = []
        async with serving(sim) as url:
            for key, extra in ((KEY + "-wrong", {}), (KEY, {"temperature": 0.5})):
                client = anthropic.AsyncAnthropic(
                    base_url=url, api_key=key, max_retries=0, timeout=60.0
                )
                try:
                    await client.messages.create(**body, extra_body=extra)
                except anthropic.APIStatusError as exc:
                    error = exc.body["error"] if isinstance(exc.body, dict) else {}
                    seen.append((type(exc), exc.status_code, error.get("type")))
                await client.close()
        return seen

    assert asyncio.run(main()) == [
        (anthropic.AuthenticationError, 401, "authentication_error"),
        (anthropic.BadRequestError, 400, "invalid_request_error"),  # temperature with thinking
    ]


def test_the_anthropic_response_check_can_fail() -> None:
    good = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "a"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    }  # fmt: skip
    anthropic.types.Message.model_validate(good)
    with pytest.raises(pydantic.ValidationError):
        anthropic.types.Message.model_validate({**good, "content": [{"type": "text"}]})
    with pytest.raises(pydantic.ValidationError):
        anthropic.types.Message.model_validate({**good, "usage": {"input_tokens": "many"}})
