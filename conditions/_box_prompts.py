"""The prompts of the box benchmarks, as their released evaluation code sends them (§10).

Each benchmark asks in its own words and for its own output form; the words enter the
protocol hash like GroundBench's own templates. Chain-of-thought is a condition: Ref-Adv has
a think-first prompt of its own; GroundingME and RefBench-PRO turn reasoning on through the
model's thinking mode with the same prompt, as their papers do **(decided: one prompt for both
settings there)**. None of them states a coordinate convention: each model answers in its
own, which the configuration names.
"""

from __future__ import annotations

from typing import Literal

from conditions._boxsets import Benchmark

Reasoning = Literal["direct", "cot"]

_REF_ADV_ASK = 'Locate every object that matches the description "{expression}" in the image.'
BOX_BENCHMARK_PROMPTS: dict[Benchmark, dict[Reasoning, str]] = {
    "ref-adv": {
        "direct": _REF_ADV_ASK + "\nReport bbox coordinates in JSON format.",
        "cot": _REF_ADV_ASK
        + "\nThink first, then answer.\nFinally report bbox coordinates in JSON format.",
    },
    "groundingme": dict.fromkeys(
        ("direct", "cot"),
        "All spatial relationships are defined from the viewer's perspective, where 'front' "
        "means closer to the viewer and 'back' means farther from the viewer. Please provide "
        "the bounding box coordinate of the object the following statement describes:\n"
        "{expression}\n"
        "Ensure that all details mentioned about the object are accurate. Provide at most one "
        "bounding box. If a matching object is found, provide its bounding box as a JSON in "
        'the format {{"bbox_2d": [x1, y1, x2, y2]}}. If no matching object is found, output '
        '{{"bbox_2d": null}}.',
    ),
    "refbench-pro": dict.fromkeys(
        ("direct", "cot"), "Locate {expression}, output its bbox coordinates using JSON format."
    ),
}


def box_benchmark_prompt(benchmark: Benchmark, expression: str, reasoning: Reasoning) -> str:
    """The question ``benchmark`` asks about ``expression``.

    >>> box_benchmark_prompt("refbench-pro", "the red cup", "direct")
    'Locate the red cup, output its bbox coordinates using JSON format.'
    """
    return BOX_BENCHMARK_PROMPTS[benchmark][reasoning].format(expression=expression)
