"""The simulated model reads prompts through patterns made from ``conditions``' templates."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conditions import BOX_BENCHMARK_PROMPTS, box_benchmark_prompt, box_prompt, polygon_prompt
from conditions._prompts import hint_sentences, with_hints
from runner.simulator._prompts import BOX_PROMPTS, COLOUR, SPATIAL, expression_and_budget

expressions = st.text(min_size=1, max_size=40).filter(lambda e: "\x00" not in e)


@given(expressions, st.sampled_from([8, 16, 24, 32, 64]))
def test_a_polygon_prompt_gives_back_its_expression_and_budget(expression: str, n: int) -> None:
    prompt = with_hints(polygon_prompt(expression, n), ["Hint: the object is mostly red."])
    assert expression_and_budget(prompt) == (expression, n)
    assert expression_and_budget(box_prompt(expression)) == (expression, 0)


def test_hints_are_read_as_conditions_write_them() -> None:
    hints = hint_sentences(["spatial-wrong", "colour-true"], "top left", "bottom right",
                           "green", "blue")  # fmt: skip
    prompt = with_hints(polygon_prompt("the cat", 8), hints)
    assert SPATIAL.search(prompt)[1] == "bottom right"  # type: ignore[index]
    assert COLOUR.search(prompt)[1] == "green"  # type: ignore[index]


@given(expressions)
def test_each_box_benchmarks_prompt_gives_back_its_expression(expression: str) -> None:
    for benchmark, prompts in BOX_BENCHMARK_PROMPTS.items():
        for reasoning in prompts:
            prompt = box_benchmark_prompt(benchmark, expression, reasoning)
            found = [(r, m[1]) for r, p in BOX_PROMPTS[benchmark] if (m := p.fullmatch(prompt))]
            assert (reasoning, expression) in found
