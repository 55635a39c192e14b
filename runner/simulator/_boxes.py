"""The simulated model on the box benchmarks: a box or "absent", in each benchmark's form.

It answers a :class:`conditions.BoxQuestion` the way each benchmark's prompt asks (GroundingME:
``{"bbox_2d": …}`` or ``null``; Ref-Adv: a fenced ``{"bboxes": [[…]]}``; RefBench-PRO: a
fenced Qwen-style list), in the coordinate convention of the configuration, with edge noise,
now and then the wrong region, and — as the papers find of hosted models — a box even when
the described object is not there. Pure: the caller supplies the generator.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from conditions import Benchmark, BoxQuestion
from runner.simulator._model import Answer
from runner.simulator._spec import BoxBehaviour
from scoring import Box, Convention

_SCALE: dict[Convention, float] = {"norm999": 999.0, "norm1000": 1000.0, "unit": 1.0}


def box_answer(
    question: BoxQuestion,
    benchmark: Benchmark,
    convention: Convention,
    behaviour: BoxBehaviour,
    rng: random.Random,
    *,
    thinking: bool = False,
    sent_scale: float = 1.0,
) -> Answer:
    """The simulated answer to ``question`` as ``benchmark`` asks it."""
    hallucinate = behaviour.hallucinate_thinking if thinking else behaviour.hallucinate
    if question.box is None:
        box = _elsewhere(question, rng) if rng.random() < hallucinate else None
    elif rng.random() < behaviour.false_absent:
        box = None
    elif rng.random() < behaviour.wrong_object:
        box = _elsewhere(question, rng)
    else:
        box = _noisy(question.box, question, behaviour.edge_noise, rng)
    reasoning = _reasoning(question, box) if thinking else ""
    if box is None:
        return Answer(_absent_text(benchmark), reasoning)
    values = _in_convention(box, convention, question, sent_scale)
    return Answer(_box_text(benchmark, values, question.expression), reasoning)


def _noisy(box: Box, q: BoxQuestion, sigma: float, rng: random.Random) -> Box:
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    x1, x2 = sorted((x1 + rng.gauss(0, sigma * w), x2 + rng.gauss(0, sigma * w)))
    y1, y2 = sorted((y1 + rng.gauss(0, sigma * h), y2 + rng.gauss(0, sigma * h)))
    return _inside((x1, y1, x2, y2), q)


def _elsewhere(q: BoxQuestion, rng: random.Random) -> Box:
    """A plausible box on some other part of the image."""
    w = rng.uniform(0.1, 0.4) * q.width
    h = rng.uniform(0.1, 0.4) * q.height
    x1, y1 = rng.uniform(0, q.width - w), rng.uniform(0, q.height - h)
    return (x1, y1, x1 + w, y1 + h)


def _inside(box: Box, q: BoxQuestion) -> Box:
    x1, y1, x2, y2 = box
    return (
        min(max(x1, 0.0), q.width),
        min(max(y1, 0.0), q.height),
        min(max(x2, 0.0), q.width),
        min(max(y2, 0.0), q.height),
    )


def _in_convention(
    box: Box, convention: Convention, q: BoxQuestion, sent_scale: float
) -> Sequence[float]:
    """``box`` (original pixels) as the model writes it: integers, or three decimals in 0–1."""
    if convention == "pixels":
        return [round(v * sent_scale) for v in box]
    scale = _SCALE[convention]
    x1, y1, x2, y2 = box
    values = [x1 / q.width * scale, y1 / q.height * scale, x2 / q.width * scale,
              y2 / q.height * scale]  # fmt: skip
    return [round(v, 3) for v in values] if convention == "unit" else [round(v) for v in values]


def _box_text(benchmark: Benchmark, values: Sequence[float], expression: str) -> str:
    if benchmark == "groundingme":
        return json.dumps({"bbox_2d": list(values)})
    if benchmark == "ref-adv":
        return "```json\n" + json.dumps({"bboxes": [list(values)]}) + "\n```"
    # Qwen's own layout: one object per line inside the list.
    item = json.dumps({"bbox_2d": list(values), "label": expression})
    return "```json\n[\n\t" + item + "\n]\n```"


def _absent_text(benchmark: Benchmark) -> str:
    if benchmark == "groundingme":
        return json.dumps({"bbox_2d": None})
    if benchmark == "ref-adv":
        return "```json\n" + json.dumps({"bboxes": []}) + "\n```"
    return "There is no object matching that description in the image."


def _reasoning(q: BoxQuestion, box: Box | None) -> str:
    """Reasoning text with numbers in it: a reader that parsed it would be caught out."""
    guess = "none of the candidates fits" if box is None else "the best candidate is found"
    return (
        f'The description is "{q.expression}". I compare the candidates, e.g. one near '
        f"[10, 10, 50, 50]; {guess}."
    )
