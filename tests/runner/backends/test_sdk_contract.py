"""Contracts with the providers' official SDKs (test-only dependencies, never imported by the
package): the request bodies groundbench sends validate against ``openai``'s and
``google-genai``'s own request types, and both SDKs' clients read the simulator's responses
as groundbench's decoders read them.

The SDKs are written by the providers, independently of this project: a body they refuse, or
a response they cannot parse, is a contract broken on our side.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pydantic
import pytest
from google import genai
from google.genai import types as gtypes
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionContentPartParam, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

from conditions import Cohort, DataRoot, Request, Thinking, VariantCache
from runner._errors import ConfigError
from runner.backends import PROVIDERS, GeminiGenerate, OpenAIChat, thinking_fields
from runner.backends._wire import IMAGE_SLOT
from runner.simulator import SimSpec, Simulator, serving
from tests.runner.backends.test_wire import IMAGE
from tests.runner.backends.test_wire import _request as _wire_request
from tests.runner.test_against_simulator import CLEAN, GEMINI, QWEN
from tests.runner.test_against_simulator import _requests as _simulator_requests

OPENAI_WIRE = sorted(name for name, p in PROVIDERS.items() if p.wire == "openai")
THINKING = [
    Thinking(mode="off"),
    Thinking(mode="on"),
    Thinking(mode="on", effort="high"),
    Thinking(mode="on", budget_tokens=2048),
    Thinking(mode="on", effort="max"),
]
PARAMS = pydantic.TypeAdapter(CompletionCreateParamsNonStreaming)
# The SDK types ``messages`` and a message's parts as Iterables, which pydantic checks only as
# they are consumed: each is checked as a list of its own.
MESSAGES = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
PARTS = pydantic.TypeAdapter(list[ChatCompletionContentPartParam])


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
