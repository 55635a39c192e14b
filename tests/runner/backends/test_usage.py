"""Usage is read once per wire, and checked: a count is an integer 0 ≤ n < 2³¹, anything else
is unknown — never an exception, never a number that lowers the spend (issue 56)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conditions import PAPER_CONFIGURATIONS
from runner.backends import (
    AnthropicMessages,
    Bill,
    GeminiGenerate,
    OpenAIChat,
    Unreadable,
    Usage,
    Worst,
    provider_named,
)
from runner.backends._usage import MAX_COUNT, count, count_sum

QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")
OPENAI = OpenAIChat(provider_named("qwen"), QWEN.model)
GEMINI = GeminiGenerate("gemini-x")
ANTHROPIC = AnthropicMessages("claude-x")

# What a server may put where a count belongs, and is none.
NOT_COUNTS: list[Any] = [-1, -(10**9), 2**31, 10**30, 10**400, True, False, 1.0, 1e3, "12", None]


@given(st.integers())
def test_law_an_integer_is_a_count_only_within_its_range(value: int) -> None:
    assert (count(value) == value) == (0 <= value < MAX_COUNT)
    assert count(value) is None or count(value) == value


@pytest.mark.parametrize("value", NOT_COUNTS, ids=repr)
def test_what_is_no_count_is_unknown(value: object) -> None:
    assert count(value) is None


def _openai(usage: object, choices: object) -> dict[str, Any]:
    return {"choices": choices, "usage": usage}


def _gemini(usage: object, choices: object) -> dict[str, Any]:
    candidates = [{"content": {"parts": [{"text": "a"}]}}] if choices else []
    return {"candidates": candidates, "usageMetadata": usage}


def _anthropic(usage: object, choices: object) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "a"}] if choices else "x", "usage": usage}


WIRES = {
    "openai": (OPENAI, _openai, ("prompt_tokens", "completion_tokens")),
    "gemini": (GEMINI, _gemini, ("promptTokenCount", "candidatesTokenCount")),
    "anthropic": (ANTHROPIC, _anthropic, ("input_tokens", "output_tokens")),
}
CHOICES = [{"message": {"content": "a"}}]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("bad", NOT_COUNTS, ids=repr)
def test_each_wire_reads_a_bad_count_as_unknown_and_the_other_as_said(
    wire: str, bad: object
) -> None:
    reader, doc, (inp, out) = WIRES[wire]
    reply = reader.read(doc({inp: bad, out: 7}, CHOICES))
    assert reply.usage.input_tokens is None and reply.usage.output_tokens == 7
    assert not reply.usage.known


@pytest.mark.parametrize("wire", WIRES)
def test_an_answer_that_cannot_be_read_still_carries_its_usage(wire: str) -> None:
    reader, doc, (inp, out) = WIRES[wire]
    with pytest.raises(Unreadable) as raised:
        reader.read(doc({inp: 1000, out: 1000}, []))
    assert raised.value.usage.input_tokens == 1000 and raised.value.usage.output_tokens == 1000
    assert not raised.value.retryable  # billed: never tried again within its attempt


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("body", [b"", b"not json", b"[1, 2]", b"[" * 100_000, b'{"usage":'])
def test_a_body_with_no_json_object_is_unreadable_with_unknown_usage(
    wire: str, body: bytes
) -> None:
    reader, _, _ = WIRES[wire]
    with pytest.raises(Unreadable) as raised:
        reader.decode(body)
    assert raised.value.usage == Usage()


def test_a_sum_of_parts_is_unknown_when_a_part_is_no_count() -> None:
    # Anthropic bills the cache's input beside the uncached input.
    usage: dict[str, int | None] = {"input_tokens": 5, "cache_read_input_tokens": -5}
    assert ANTHROPIC.read(_anthropic(usage, True)).usage.input_tokens is None
    usage["cache_read_input_tokens"] = None  # absent: none of the call's
    assert ANTHROPIC.read(_anthropic(usage, True)).usage.input_tokens == 5
    assert count_sum(2**30, 2**30) is None  # the sum past a count is none either


@given(
    inp=st.one_of(st.integers(-(2**40), 2**40), st.none(), st.booleans()),
    out=st.one_of(st.integers(-(2**40), 2**40), st.none(), st.floats()),
)
def test_law_a_bill_counts_each_count_said_and_the_worst_case_of_each_unknown(
    inp: object, out: object
) -> None:
    worst = Worst(1000, 4000)
    usage = OPENAI.read(_openai({"prompt_tokens": inp, "completion_tokens": out}, CHOICES)).usage
    bill = Bill.of(usage, worst)
    assert bill.calls == 1 and bill.input_tokens >= 0 and bill.output_tokens >= 0
    # Each count as said where it is one, else at its worst case: never below what was said.
    said = usage.input_tokens, usage.output_tokens
    assert (bill.input_tokens, bill.output_tokens) == tuple(
        w if c is None else c for c, w in zip(said, (1000, 4000), strict=True)
    )
    assert bill.unknown == int(not usage.known)
    assert usage.input_tokens in (inp, None) and usage.output_tokens in (out, None)
