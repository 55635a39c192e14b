"""A profile's simulated model: traces the object it settles on, by its parameters and its luck.

Where :mod:`runner.simulator._model` draws as it goes, this model reads every draw from a
:class:`~runner.simulator._luck.Luck` made before it answers: the shared luck of (question,
budget, attempt) mixed with its cell's own (:func:`cell_key`: the model and what the request's
condition changes) at the profile's ρ, so the cells of a grid answer one question with partly
common luck, and a condition or a model changes an answer through its parameters
(:mod:`runner.simulator._profiles`) and through its own share of the luck. In the order they
act:

1. **Selection** (the question's luck, a share of it each budget's own): the referent, or a
   same-category distractor at the configuration's rate for the budget, scaled by the
   question's difficulty; a wrong hint that wins, greyscale and reasoning move it, a true hint
   lowers it a little.
2. **Placement** (the question's luck): the outline is shifted, scaled and smoothly misread by
   the same draw at every budget and in the box answer: where the model thinks the object is.
3. **Tracing** (the budget's luck): ``N`` points evenly spaced along the seen contour (blurred,
   misread) from a random start, not ``G_N``'s Visvalingam–Whyatt vertices; sometimes over only
   part of it (a cut: the closing edge a chord), or drawn too small; each vertex jittered.
4. **Delivery** (the budget's luck): the answer may not parse (a wrong vertex count, or a
   refusal), go round the object twice with every other vertex (a tangle: its even-odd fill a
   thin band), or carry one small illegality (a repeated vertex, two vertices swapped).

Without the image it guesses from the words: a small ellipse in the third of the frame they name.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

from shapely.geometry import Polygon
from shapely.ops import unary_union

from conditions import Cohort, Question
from runner.simulator._luck import (
    WOBBLE_HARMONICS,
    BudgetLuck,
    Luck,
    QuestionLuck,
    draw_luck,
    mixed_uniform,
)
from runner.simulator._model import (
    COLOUR_WORDS,
    Answer,
    Seen,
    ellipse,
    guess_ring,
    numbers,
    polygon_text,
    reasoning_text,
)
from runner.simulator._profiles import Effects, Profile, Tracing, at, graded
from scoring import SCALE, Point, ring_from_flat, select_part

Parts = tuple[tuple[float, ...], ...]
_REFUSAL = "I'm sorry, but I cannot outline that object in this image."
_DENSE = 240  # points of the contour the model sees, before it spaces its N along it
_SMALLEST = 8  # the budget whose rates a box answer takes
_CLOSING = 0.05  # × √area: gaps up to a tenth of an object's size close in whole_outline
# Reasoning the request shrinks: a token budget below this (the grid's thinking-budget
# condition sets 4,096), or an effort level below "high".
_FULL_THINKING_TOKENS = 16384
_REDUCED_EFFORTS = frozenset({"minimal", "low", "medium"})


@dataclass(frozen=True)
class Moves:
    """What a request's condition does to the configuration's parameters."""

    distractor: float = 0.0  # added to the rate
    distractor_scale: float = 1.0  # × the rate (after the addition)
    unparseable: float = 0.0  # added to the per-attempt rate
    shape: float = 1.0  # × placement and misreading
    jitter: float = 1.0  # × vertex jitter
    blur: float = 0.0  # added


@dataclass(frozen=True)
class Rates:
    """One call's parameters: the configuration's at its budget, the condition and the
    question's difficulty applied, and its luck's choices of cut and contraction made."""

    distractor: float
    placement: float
    wobble: float
    blur: float
    jitter: float
    span: float  # the share of the contour its points cover
    size: float  # the share of its size the outline is drawn at
    unparseable: float
    tangle: float
    defect: float
    fooled: bool  # a wrong hint wins over the image
    whole: bool  # an object an occluder splits is outlined as one (gap closed)


def question_key(seen: Seen) -> str:
    """What a profile's luck is keyed by: the question when the image names it, else the
    expression (without the image the model knows only the words)."""
    return seen.qid if seen.qid is not None else f"words:{seen.expression}"


def cell_key(seen: Seen, model: str, replicate: int = 0) -> str:
    """The grid cell a request belongs to, as its luck knows it: the model and everything in
    the request a condition changes (image variant, the hints' truth, reasoning on or off and
    its budget or effort, temperature) and the replicate. Not the budget, the question or the
    attempt: those key the shared luck."""
    return (
        f"{model}|{seen.variant}|s:{seen.spatial}|c:{seen.colour}|t:{seen.thinking}"
        f"|b:{seen.thinking_budget}|e:{seen.effort}|T:{seen.temperature}|r{replicate}"
    )


def profile_answer(
    seen: Seen,
    cohort: Cohort,
    profile: Profile,
    tracing: Tracing,
    seed: int,
    attempt: int,
    replicate: int = 0,
    *,
    model: str | None = None,
) -> Answer:
    """The answer of the model ``tracing`` describes (``model``, by default the id the profile
    keys ``tracing`` by), with the luck of (question, budget, attempt) mixed with its cell's
    own at the profile's ρ."""
    if model is None:
        model = next((m for m, t in profile.tracings.items() if t is tracing), "")
    luck = draw_luck(seed, question_key(seen), seen.budget, attempt,
                     cell_key(seen, model, replicate), profile.effects.shared)  # fmt: skip
    return traced_answer(seen, cohort, profile, tracing, luck)


def traced_answer(seen: Seen, cohort: Cohort, profile: Profile, tracing: Tracing,
                  luck: Luck) -> Answer:  # fmt: skip
    """The answer of the model ``tracing`` describes, to ``seen``, drawn from ``luck``."""
    q = cohort.question(seen.qid) if seen.qid is not None else None
    b, e = luck.budget, profile.effects
    rates = rates_for(seen, q, profile, tracing, luck)
    if seen.budget > 0 and b.parse < rates.unparseable:
        return _unparseable(seen, b, e)
    if q is None or seen.variant == "none":
        ring = words_guess(seen.expression, max(seen.budget, 4), random.Random(b.guess))
        why = "There is no image I can see, so I place the shape where the words suggest."
        return _written(seen, _delivered(ring, rates, b), b, e, why)
    parts, why = _settle(q, cohort, rates, luck, e.select_kept)
    if seen.budget == 0:
        box = _box(q, parts, rates, tracing, luck.question)
        return Answer(" ".join(numbers(box)), reasoning_text(seen, why))
    ring = _trace(q, parts, seen.budget, rates, luck)
    return _written(seen, _delivered(ring, rates, b), b, e, why)


def rates_for(seen: Seen, q: Question | None, profile: Profile, tracing: Tracing,
              luck: Luck) -> Rates:  # fmt: skip
    """The parameters of this call (the box question takes the smallest budget's rates and
    its own placement factor)."""
    n = seen.budget or _SMALLEST
    moves = condition_moves(seen, profile.effects)
    hard = profile.hardness
    harder = graded(hard.error, q.difficulty) if q is not None else 1.0
    shape = (at(tracing.error, n) if seen.budget else tracing.box_error) * moves.shape * harder
    distractor = (at(tracing.distractor, n) + moves.distractor) * moves.distractor_scale
    if q is not None:
        distractor *= graded(hard.distractor, q.difficulty)
    b = luck.budget
    return Rates(
        distractor=min(1.0, distractor),
        placement=tracing.placement * shape,
        wobble=tracing.wobble * shape,
        blur=tracing.blur + moves.blur,
        jitter=at(tracing.jitter, n) * moves.jitter,
        span=profile.effects.cut_span if b.cut < at(tracing.cut, n) else 1.0,
        size=at(tracing.size, n) if b.contract < at(tracing.contract, n) else 1.0,
        unparseable=min(1.0, at(tracing.unparseable, n) + moves.unparseable),
        tangle=at(tracing.tangle, n),
        defect=at(tracing.defect, n),
        fooled=_fooled(seen, profile.effects, luck.question),
        whole=luck.question.whole < profile.effects.whole_object,
    )


def reduced_thinking(seen: Seen) -> bool:
    """Whether the request reasons with less than the provider's full chain: a token budget
    under :data:`_FULL_THINKING_TOKENS`, or an effort below "high"."""
    if not seen.thinking:
        return False
    budget = seen.thinking_budget
    return (budget is not None and budget < _FULL_THINKING_TOKENS) or (
        seen.effort in _REDUCED_EFFORTS
    )


def condition_moves(seen: Seen, e: Effects) -> Moves:
    """What the request's reasoning setting, temperature, image and hints do (a wrong hint's
    pull is :func:`_fooled`'s)."""
    off = not seen.thinking
    reduced = reduced_thinking(seen)
    temperature = 1.0 + e.temperature_jitter * (seen.temperature or 0.0)
    half = seen.variant == "half"
    grey = seen.variant == "grey" and COLOUR_WORDS.search(seen.expression) is not None
    true_cues = (seen.spatial == "true") + (seen.colour == "true")
    return Moves(
        distractor=(e.off_distractor if off else 0.0) + (e.grey_confusion if grey else 0.0),
        distractor_scale=e.true_cue_distractor**true_cues,
        unparseable=e.off_unparseable if off else 0.0,
        shape=(e.off_shape if off else 1.0)
        * (e.half_shape if half else 1.0)
        * (e.budget_shape if reduced else 1.0),
        jitter=(e.off_jitter if off else 1.0) * (e.half_jitter if half else 1.0) * temperature,
        blur=e.half_blur if half else 0.0,
    )


def _fooled(seen: Seen, e: Effects, luck: QuestionLuck) -> bool:
    """Whether a wrong hint wins over the image. Two wrong hints point at different places and
    the model trusts each less (``both_discount``): together they mislead it less often than
    their rates added up, in IoU too, not only through the floor at 0 (the paper's
    sub-additivity)."""
    spatial, colour = seen.spatial == "wrong", seen.colour == "wrong"
    k = e.both_discount if spatial and colour else 1.0
    return (spatial and luck.spatial < k * e.spatial_follow) or (
        colour and luck.colour < k * e.colour_follow
    )


def selection_draw(luck: Luck, kept: float) -> float:
    """The uniform that decides whether the model settles on a distractor: the question's
    draw, of which a share ``kept`` of the variance (on the Gaussian scale) is kept at every
    budget, the rest this budget's own (each budget is a request of its own)."""
    if kept >= 1.0:
        return luck.question.select
    new = math.sqrt(1.0 - kept)
    return mixed_uniform(luck.question.select, luck.budget.reselect, math.sqrt(kept), new)


def _settle(q: Question, cohort: Cohort, rates: Rates, luck: Luck,
            kept: float) -> tuple[Parts, str]:  # fmt: skip
    """The parts of the object the model outlines, and why."""
    instances = cohort.instances_of(q.qid)
    others = [i for i in instances if i.role == "distractor"]
    if others and (rates.fooled or selection_draw(luck, kept) < rates.distractor):
        other = others[min(len(others) - 1, int(luck.question.other * len(others)))]
        return other.parts, "Several objects match; I pick the one that fits the description best."
    target = next(i for i in instances if i.role == "target")
    return target.parts, f"The object is in the {q.cell} of the image."


def _trace(q: Question, parts: Parts, n: int, rates: Rates, luck: Luck) -> list[Point]:
    """``n`` points along the object's contour as the model sees it, placed and jittered, in
    0–999 units."""
    contour = seen_contour(parts, rates.blur, rates.whole)
    size = _size(q)
    start, span = luck.budget.start, rates.span
    ring = even_points(contour, n, start, span)
    where = [along(k, n, start, span) for k in range(n)]
    ring = _wobbled(ring, where, rates.wobble * size, luck.question.wobble)
    ring = _placed(ring, size, rates, luck.question)
    sigma, z = rates.jitter * size, luck.budget.jitter
    ring = [(x + sigma * z[2 * k], y + sigma * z[2 * k + 1]) for k, (x, y) in enumerate(ring)]
    return [(x * SCALE / q.width, y * SCALE / q.height) for x, y in ring]


def _size(q: Question) -> float:
    """√(box area) of the referent, in pixels: what every σ is a fraction of."""
    return math.sqrt(max(q.box[2] * q.box[3], 1.0))


@lru_cache(maxsize=16384)
def seen_contour(parts: Parts, blur: float, whole: bool = False) -> list[Point]:
    """The object's contour as the model sees it: :data:`_DENSE` points evenly along the
    selected part, or with ``whole`` along :func:`whole_outline` where there is one, blurred.
    Cached: a grid asks about each object at many budgets and conditions, and this was most
    of the simulator's time per answer."""
    ring = (whole_outline(parts) if whole else None) or ring_from_flat(parts[select_part(parts)])
    return _blurred(even_points(ring, _DENSE), blur)


def whole_outline(parts: Parts) -> list[Point] | None:
    """The outline of an object whose parts a narrow occluder separates, as one sees it: the
    union of the parts closed over gaps up to a tenth of its size (morphological closing);
    None for one part, or parts too far apart to read as one object."""
    if len(parts) < 2:
        return None
    union = unary_union([Polygon(ring_from_flat(p)).buffer(0) for p in parts])
    reach = _CLOSING * math.sqrt(union.area)
    closed = union.buffer(reach).buffer(-reach)
    if not isinstance(closed, Polygon) or closed.is_empty:
        return None
    return [(float(x), float(y)) for x, y in list(closed.exterior.coords)[:-1]]


def _blurred(ring: list[Point], blur: float) -> list[Point]:
    """``ring`` averaged over a window of ``blur`` of its perimeter: concavities and spikes
    narrower than that fade, so a complex contour loses more than a convex one.

    >>> _blurred([(0.0, 0.0), (3.0, 0.0), (3.0, 3.0), (0.0, 3.0)], 0.5)
    [(1.0, 1.0), (2.0, 1.0), (2.0, 2.0), (1.0, 2.0)]
    """
    half = round(blur * len(ring) / 2)
    if half < 1:
        return ring
    m, width = len(ring), 2 * half + 1
    # running sums over the ring repeated on both sides: each window in O(1)
    padded = [ring[(i - half) % m] for i in range(m + 2 * half)]
    xs, ys = [0.0], [0.0]
    for x, y in padded:
        xs.append(xs[-1] + x)
        ys.append(ys[-1] + y)
    return [((xs[i + width] - xs[i]) / width, (ys[i + width] - ys[i]) / width) for i in range(m)]


def _wobbled(ring: list[Point], where: list[float], sigma: float,
             z: tuple[float, ...]) -> list[Point]:  # fmt: skip
    """Each point moved by a smooth field of its place along the contour (``where``, a share
    of the perimeter): the same misreading at every budget, RMS ``sigma`` per axis."""
    if sigma <= 0:
        return ring
    k = len(WOBBLE_HARMONICS)
    norm = sigma / math.sqrt(k)  # k harmonics, each cos² + sin² averaging 1
    out = []
    for (x, y), t in zip(ring, where, strict=True):
        waves = [(math.cos(2 * math.pi * h * t), math.sin(2 * math.pi * h * t))
                 for h in WOBBLE_HARMONICS]  # fmt: skip
        dx = sum(z[2 * i] * c + z[2 * i + 1] * s for i, (c, s) in enumerate(waves))
        dy = sum(z[2 * k + 2 * i] * c + z[2 * k + 2 * i + 1] * s for i, (c, s) in enumerate(waves))
        out.append((x + norm * dx, y + norm * dy))
    return out


def _placed(ring: list[Point], size: float, rates: Rates, luck: QuestionLuck) -> list[Point]:
    """The ring moved by the question's placement error: scaled about its centre (and drawn
    at ``rates.size`` of it), then shifted."""
    cx = sum(x for x, _ in ring) / len(ring)
    cy = sum(y for _, y in ring) / len(ring)
    grow = rates.size * max(0.2, 1.0 + rates.placement * luck.scale)
    dx, dy = (rates.placement * size * s for s in luck.shift)
    return [(cx + grow * (x - cx) + dx, cy + grow * (y - cy) + dy) for x, y in ring]


def along(k: int, n: int, start: float, span: float = 1.0) -> float:
    """Where point ``k`` of ``n`` lies, as a share of the perimeter: evenly round the whole
    ring, or from end to end of a ``span`` of it (the closing edge a chord across the rest).

    >>> round(along(1, 4, 0.9), 9), along(2, 3, 0.0, 0.5)
    (0.15, 0.5)
    """
    step = span / n if span >= 1.0 else span / max(n - 1, 1)
    return (start + k * step) % 1.0


def even_points(ring: list[Point], n: int, start: float = 0.0, span: float = 1.0) -> list[Point]:
    """``n`` points at equal steps of arc length along the closed ``ring`` (see :func:`along`).

    >>> even_points([(0, 0), (4, 0), (4, 4), (0, 4)], 4)
    [(0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0)]
    >>> even_points([(0, 0), (4, 0), (4, 4), (0, 4)], 3, 0.0, 0.5)
    [(0.0, 0.0), (4.0, 0.0), (4.0, 4.0)]
    """
    edges = [(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring))]
    lengths = [math.dist(a, b) for a, b in edges]
    total = sum(lengths)
    out: list[Point] = []
    i, walked = 0, 0.0  # edge i starts at arc length `walked`
    for k in range(n):
        t = along(k, n, start, span) * total
        if t < walked:  # wrapped past the first vertex: walk from the start again
            i, walked = 0, 0.0
        while i < len(edges) - 1 and walked + lengths[i] <= t:
            walked += lengths[i]
            i += 1
        (ax, ay), (bx, by) = edges[i]
        f = (t - walked) / lengths[i] if lengths[i] > 0 else 0.0
        out.append((float(ax + f * (bx - ax)), float(ay + f * (by - ay))))
    return out


def words_guess(expression: str, n: int, rng: random.Random) -> list[Point]:
    """Without the image: a small ellipse in the third of the frame the words name (the
    centre when they name none), as a reader of the expression alone would guess."""
    words = expression.lower()
    cx = 1 / 6 if "left" in words else 5 / 6 if "right" in words else 1 / 2
    cy = 1 / 6 if ("top" in words or "upper" in words) else 1 / 2
    cy = 5 / 6 if ("bottom" in words or "lower" in words) else cy
    cx, cy = cx + rng.uniform(-0.04, 0.04), cy + rng.uniform(-0.04, 0.04)
    rx, ry = rng.uniform(0.06, 0.12), rng.uniform(0.06, 0.12)
    return ellipse(cx, cy, rx, ry, n)


def _delivered(ring: list[Point], rates: Rates, luck: BudgetLuck) -> list[Point]:
    """The traced ring as delivered: tangled, or with one small defect, at their rates."""
    ring = list(ring)
    if luck.tangle < rates.tangle and len(ring) >= 8:
        return ring[0::2] + ring[1::2]  # round twice, every other vertex on each lap
    if luck.defect < rates.defect and len(ring) >= 4:
        where = luck.defect_at * (len(ring) - 2)
        i = min(len(ring) - 3, int(where))
        if where - i < 0.5:
            ring[i + 1] = ring[i]  # a vertex repeated
        else:
            # a vertex and the next but one swapped: the ring crosses itself twice there
            ring[i], ring[i + 2] = ring[i + 2], ring[i]
    return ring


def _written(seen: Seen, ring: list[Point], luck: BudgetLuck, e: Effects, why: str) -> Answer:
    return Answer(
        polygon_text(ring, seen.expression, luck.prose < e.prose), reasoning_text(seen, why)
    )


def _unparseable(seen: Seen, luck: BudgetLuck, e: Effects) -> Answer:
    """No list of ``2N`` values: a refusal, or one or two vertices too few or too many."""
    if luck.miscount < e.refusal_share:
        return Answer(_REFUSAL, "")
    which = (luck.miscount - e.refusal_share) / (1.0 - e.refusal_share)
    n = seen.budget + (-2, -1, 1, 2)[min(3, int(4 * which))]
    ring = guess_ring(seen.expression, n, random.Random(luck.guess))
    return _written(seen, ring, luck, e, "")


def _box(q: Question, parts: Parts, rates: Rates, tracing: Tracing,
         luck: QuestionLuck) -> list[float]:  # fmt: skip
    """The object's box (all its parts), placed as its outlines are, shrunk about its centre,
    each edge off by its own error; in 0–999 units, ``x1 y1 x2 y2``."""
    size = _size(q)
    placed = _placed([p for part in parts for p in ring_from_flat(part)], size, rates, luck)
    xs, ys = [x for x, _ in placed], [y for _, y in placed]
    cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
    hw = tracing.box_shrink * (max(xs) - min(xs)) / 2
    hh = tracing.box_shrink * (max(ys) - min(ys)) / 2
    edge = tracing.box_edge * size
    corners = (cx - hw, cy - hh, cx + hw, cy + hh)
    x0, y0, x1, y1 = (v + edge * z for v, z in zip(corners, luck.edges, strict=True))
    return [
        x0 * SCALE / q.width,
        y0 * SCALE / q.height,
        x1 * SCALE / q.width,
        y1 * SCALE / q.height,
    ]
