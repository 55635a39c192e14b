"""The simulated model: answers a question from the cohort's own geometry, imperfectly.

It outlines the referent's canonical target ``G_N`` (or, now and then, a same-category
distractor), with vertex noise, and sometimes breaks the answer the ways hosted models do:
wrong vertex count, a repeated vertex, a self-intersection, decimals, a refusal, prose around
the list. The conditions move it the way the paper's ablations expect: without the image it
guesses from the words; at half resolution it is noisier; in greyscale it confuses objects
named by colour; a wrong hint misleads it and a true one helps; reasoning sharpens it and a
higher temperature blurs it. Everything here is pure: the server supplies the generator.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from conditions import COLOURS, Cohort, Question, Variant
from runner.simulator._spec import Behaviour
from scoring import PHASES, SCALE, Point, canonical_target, select_part

Truth = Literal["true", "wrong"]
COLOUR_WORDS = re.compile(r"\b(" + "|".join([*COLOURS, "gray"]) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Seen:
    """What the simulated model can tell from one request."""

    qid: str | None  # None: no image, or an image it does not know
    expression: str
    budget: int  # 0: the box question
    variant: Variant
    spatial: Truth | None = None
    colour: Truth | None = None
    thinking: bool = True
    temperature: float | None = None
    # Reasoning's size as the request sets it, where it does: a token budget (DashScope's
    # thinking_budget, Gemini's thinkingBudget, Anthropic's budget_tokens) or an effort level
    # (reasoning_effort, thinkingLevel); None where the request leaves it to the provider.
    thinking_budget: int | None = None
    effort: str | None = None


@dataclass(frozen=True)
class Answer:
    text: str
    reasoning: str


def answer(seen: Seen, cohort: Cohort, behaviour: Behaviour, rng: random.Random) -> Answer:
    """The simulated model's answer to ``seen``."""
    if rng.random() < behaviour.refusal:
        return Answer("I'm sorry, but I cannot outline that object in this image.", "")
    q = cohort.question(seen.qid) if seen.qid is not None else None
    if q is None or seen.variant == "none":
        ring = guess_ring(seen.expression, max(seen.budget, 4), rng)
        why = "There is no image I can see, so I place the shape where the words suggest."
    else:
        ring, why = _look(seen, q, cohort, behaviour, rng)
    if seen.budget == 0:
        return Answer(_box_text(ring, rng, behaviour), reasoning_text(seen, why))
    ring = _spoil(ring, seen.budget, behaviour, rng)
    return Answer(_polygon_text(ring, seen.expression, rng, behaviour), reasoning_text(seen, why))


def _look(
    seen: Seen, q: Question, cohort: Cohort, behaviour: Behaviour, rng: random.Random
) -> tuple[list[Point], str]:
    """The outline in 0–999 units of the object the model settles on, and why."""
    n = seen.budget or 8
    p_other = behaviour.distractor
    if seen.variant == "grey" and COLOUR_WORDS.search(seen.expression):
        p_other += behaviour.greyscale_colour_confusion
    if "wrong" in (seen.spatial, seen.colour):
        p_other += behaviour.wrong_cue_follow
    elif "true" in (seen.spatial, seen.colour):
        p_other *= 1.0 - behaviour.true_cue_help
    others = [i for i in cohort.instances_of(q.qid) if i.role == "distractor"]
    if others and rng.random() < min(1.0, p_other):
        other = rng.choice(others)
        pixels = _outline(other.parts, n)
        why = "Several objects match; I pick the one that fits the description best."
    else:
        pixels = cohort.target(q.qid, n, rng.randrange(PHASES))
        why = f"The object is in the {q.cell} of the image."
    ring = [(x * SCALE / q.width, y * SCALE / q.height) for x, y in pixels]
    w, h = q.box[2], q.box[3]
    sigma = behaviour.vertex_noise * math.sqrt(max(w * h, 1.0)) * SCALE / max(q.width, q.height)
    sigma *= _noise_factor(seen, behaviour)
    return [(x + rng.gauss(0, sigma), y + rng.gauss(0, sigma)) for x, y in ring], why


@lru_cache(maxsize=8192)
def _outline(parts: tuple[tuple[float, ...], ...], n: int) -> list[Point]:
    """A distractor's ``n``-vertex outline, as the cohort's targets are made (cached)."""
    return canonical_target(parts[select_part(parts)], n)


def _noise_factor(seen: Seen, behaviour: Behaviour) -> float:
    factor = behaviour.half_res_noise if seen.variant == "half" else 1.0
    factor *= behaviour.thinking_noise if seen.thinking else 1.0 / behaviour.thinking_noise
    temperature = 0.7 if seen.temperature is None else seen.temperature
    return factor * (1.0 + behaviour.temperature_noise * temperature)


def guess_ring(expression: str, n: int, rng: random.Random) -> list[Point]:
    """An ellipse where the words point (left, right, top, bottom), or near the centre."""
    words = expression.lower()
    cx = 0.25 if "left" in words else 0.75 if "right" in words else 0.5
    cy = 0.25 if ("top" in words or "upper" in words) else 0.75 if "bottom" in words else 0.5
    cx, cy = cx + rng.uniform(-0.1, 0.1), cy + rng.uniform(-0.1, 0.1)
    rx, ry = rng.uniform(0.08, 0.25), rng.uniform(0.08, 0.25)
    return ellipse(cx, cy, rx, ry, n)


def ellipse(cx: float, cy: float, rx: float, ry: float, n: int) -> list[Point]:
    """``n`` points evenly round an ellipse given in fractions of the frame, in 0–999 units."""
    return [
        (SCALE * (cx + rx * math.cos(2 * math.pi * k / n)),
         SCALE * (cy + ry * math.sin(2 * math.pi * k / n)))
        for k in range(n)
    ]  # fmt: skip


def _spoil(ring: list[Point], n: int, behaviour: Behaviour, rng: random.Random) -> list[Point]:
    """The ways a hosted model's polygon goes wrong, each with its own rate."""
    ring = list(ring)
    if rng.random() < behaviour.wrong_count:
        change = rng.choice((-2, -1, 1, 2))
        if change < 0:
            del ring[change:]
        else:
            ring.extend(ring[:change])
    if len(ring) > 2 and rng.random() < behaviour.duplicate:
        i = rng.randrange(len(ring) - 1)
        ring[i + 1] = ring[i]
    if len(ring) > 4 and rng.random() < behaviour.self_intersection:
        i = rng.randrange(len(ring) - 3)
        ring[i + 1], ring[i + 2] = ring[i + 2], ring[i + 1]
    return ring


def _clamp(v: float) -> float:
    return min(SCALE, max(0.0, v))


def _numbers(values: list[float], rng: random.Random, behaviour: Behaviour) -> list[str]:
    return numbers(values, rng.random() < behaviour.decimals)


def numbers(values: list[float], decimals: bool = False) -> list[str]:
    """Coordinates as the model writes them, clamped to 0–999: integers, or one decimal."""
    if decimals:
        return [f"{_clamp(v):.1f}" for v in values]
    return [str(round(_clamp(v))) for v in values]


def _polygon_text(
    ring: list[Point], expression: str, rng: random.Random, behaviour: Behaviour
) -> str:
    decimals = rng.random() < behaviour.decimals  # drawn first, as ever: the same answers
    return polygon_text(ring, expression, rng.random() < behaviour.prose, decimals)


def polygon_text(ring: list[Point], expression: str, prose: bool, decimals: bool = False) -> str:
    """A ring as an answer: a bracketed list of pairs in sentences, or one bare line."""
    values = numbers([c for point in ring for c in point], decimals)
    if prose:
        pairs = ", ".join(f"[{values[i]}, {values[i + 1]}]" for i in range(0, len(values), 2))
        return (
            f'The object "{expression}" is outlined by {len(ring)} vertices:\n'
            f"[{pairs}]\nEach pair is (x, y) on the 0-999 grid."
        )
    return " ".join(values)


def _box_text(ring: list[Point], rng: random.Random, behaviour: Behaviour) -> str:
    xs, ys = [p[0] for p in ring], [p[1] for p in ring]
    return " ".join(_numbers([min(xs), min(ys), max(xs), max(ys)], rng, behaviour))


def reasoning_text(seen: Seen, why: str) -> str:
    """Reasoning text, with numbers in it: a parser that read it would be caught out."""
    if not seen.thinking:
        return ""
    return (
        f'The expression is "{seen.expression}". {why} '
        "A first rough guess was 100, 100, 200, 100, 200, 200 but that is too coarse; "
        "I will trace the outline carefully."
    )
