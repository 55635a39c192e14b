"""Aggregates of a cell and paired contrasts between cells (PROTOCOL §7).

A cell is (configuration, condition, budget); its inputs are one view-locked score per question
(``None`` for a question with no parseable answer in the view). Aggregates are in points
(0–100), per-response scores in fractions (0–1).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from scoring._raster import mask_iou
from scoring._referent import Referent
from scoring._score import BoxScore, PolygonScore

THRESHOLDS: tuple[float, ...] = (0.25, 0.5, 0.75, 0.9)
"""The ``τ`` of ``Acc@τ``: an answer counts when its IoU is at least ``τ``."""

Metric = Literal[
    "iou", "iou_part", "iou_union", "iou_cont", "legal_iou", "legal", "sel", "parseable"
]
K = TypeVar("K", bound=Hashable)
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Pair:
    """One metric under both denominators: ``fixed`` counts every question of the cell (an
    unparseable answer scores 0); ``parseable`` only the parseable ones (NaN if none)."""

    fixed: float
    parseable: float


@dataclass(frozen=True)
class CellSummary:
    """The aggregates of one polygon cell, in points.

    ``iou_p`` is the part IoU ("IoUp"); ``iou_n = 100·iou_p / C_N`` (NaN when ``C_N`` is not
    given) may exceed 100. ``sel`` is the % of questions whose answer is selected; ``con`` the
    mean ``iou`` over the selected ones.
    """

    questions: int
    parseable: int
    parse_rate: float
    iou: Pair
    iou_p: Pair
    iou_n: Pair
    iou_union: Pair
    iou_cont: Pair
    acc: Mapping[float, Pair]
    legal_coverage: Pair
    legal_iou: Pair
    sel: float
    con: float


@dataclass(frozen=True)
class BoxCellSummary:
    """The aggregates of one box cell, in points (the control is a polygon cell of its own)."""

    questions: int
    parseable: int
    parse_rate: float
    box_iou: Pair
    acc: Mapping[float, Pair]


@dataclass(frozen=True, slots=True)
class Contrast:
    """A paired difference ``a − b`` over the questions both cells answered, with its interval.
    ``alike``: every paired difference is 0 (the two sides scored alike on every question)."""

    questions: int
    delta: float
    low: float
    high: float
    alike: bool = False


def summarise_cell(scores: Sequence[PolygonScore | None], c_n: float | None = None) -> CellSummary:
    """Aggregate one cell from its questions' view-locked scores.

    ``c_n`` is the cell's budget's construction fidelity in points (see
    :func:`construction_fidelity`), needed only for ``iou_n``.
    """
    parsed = [s for s in scores if s is not None and s.parseable]
    total = len(scores)

    def pair(values: Iterable[float]) -> Pair:
        return _pair(np.fromiter(values, dtype=float, count=len(parsed)), total)

    iou = np.fromiter((s.iou for s in parsed), dtype=float, count=len(parsed))
    iou_p = pair(s.iou_part for s in parsed)
    selected = [s.iou for s in parsed if s.sel]
    return CellSummary(
        questions=total,
        parseable=len(parsed),
        parse_rate=_percent(len(parsed), total),
        iou=_pair(iou, total),
        iou_p=iou_p,
        iou_n=_fidelity_normalised(iou_p, c_n),
        iou_union=pair(s.iou_union for s in parsed),
        iou_cont=pair(s.iou_cont for s in parsed),
        acc={t: _pair(iou >= t, total) for t in THRESHOLDS},
        legal_coverage=pair(float(s.legal) for s in parsed),
        legal_iou=pair(s.legal_iou for s in parsed),
        sel=_percent(len(selected), total),
        con=100.0 * float(np.mean(selected)) if selected else NAN,
    )


def summarise_box_cell(scores: Sequence[BoxScore | None]) -> BoxCellSummary:
    """Aggregate one box cell from its questions' view-locked box scores."""
    parsed = [s for s in scores if s is not None and s.parseable]
    total = len(scores)
    box_iou = np.fromiter((s.box_iou for s in parsed), dtype=float, count=len(parsed))
    return BoxCellSummary(
        questions=total,
        parseable=len(parsed),
        parse_rate=_percent(len(parsed), total),
        box_iou=_pair(box_iou, total),
        acc={t: _pair(box_iou >= t, total) for t in THRESHOLDS},
    )


def control_scores(scores: Sequence[BoxScore | None], n: int) -> list[PolygonScore | None]:
    """The box-derived ``N``-polygon controls of a box cell, ready for :func:`summarise_cell`."""
    return [s.control[n] if s is not None and s.parseable else None for s in scores]


def per_question(scores: Mapping[K, PolygonScore | None], metric: Metric = "iou") -> dict[K, float]:
    """One value per question in points, for :func:`paired_contrast`: the metric ×100 (a flag
    counts 100 or 0), and 0 for a question with no parseable answer (the fixed denominator)."""
    return {
        k: 100.0 * float(getattr(s, metric)) if s is not None and s.parseable else 0.0
        for k, s in scores.items()
    }


def paired_contrast(
    a: Mapping[K, float],
    b: Mapping[K, float],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Contrast:
    """Mean of ``a − b`` over the exact intersection of their question ids, with a paired
    bootstrap percentile interval (questions resampled with replacement, ``resamples`` times).

    Keys must be sortable: the intersection is sorted so that the same ``seed`` gives the same
    interval whatever the mappings' order. With no common question, every figure is NaN.
    """
    common = sorted(a.keys() & b.keys())  # type: ignore[type-var]
    if not common:
        return Contrast(questions=0, delta=NAN, low=NAN, high=NAN)
    diffs = np.array([a[k] - b[k] for k in common], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[draws].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Contrast(
        questions=len(common),
        delta=float(diffs.mean()),
        low=float(low),
        high=float(high),
        alike=not diffs.any(),
    )


def unpaired_contrast(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Contrast:
    """Mean of ``a`` minus mean of ``b`` for two groups of different questions (Table 5's
    slices), with a bootstrap percentile interval that resamples each group on its own.

    ``questions`` counts both groups. With either group empty, every figure is NaN.
    """
    if not a or not b:
        return Contrast(questions=len(a) + len(b), delta=NAN, low=NAN, high=NAN)
    # Sorted: the same values give the same interval in whatever order a store returns them.
    x, y = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    rng = np.random.default_rng(seed)
    means_x = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    means_y = y[rng.integers(0, len(y), size=(resamples, len(y)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means_x - means_y, [tail, 1.0 - tail])
    return Contrast(
        questions=len(x) + len(y),
        delta=float(x.mean() - y.mean()),
        low=float(low),
        high=float(high),
    )


def group_by(
    scores: Mapping[K, PolygonScore | None], labels: Mapping[K, str]
) -> dict[str, list[PolygonScore | None]]:
    """Split a cell's scores into slices (difficulty, ``D``, ``Q``, ``RS`` bin, group) by label."""
    out: dict[str, list[PolygonScore | None]] = {}
    for k, s in scores.items():
        out.setdefault(labels[k], []).append(s)
    return out


def construction_fidelity(referents: Iterable[Referent], n: int, phase: int = 0) -> float:
    """``C_N = 100 · mean IoU(R(G_N), A_i)`` over ``referents``, in points (NaN if none)."""
    ious = [mask_iou(r.reference(n, phase).target_mask, r.part_mask) for r in referents]
    return 100.0 * float(np.mean(ious)) if ious else NAN


def _pair(values: npt.NDArray[np.float64] | npt.NDArray[np.bool_], total: int) -> Pair:
    s = float(np.sum(values))
    n = len(values)
    return Pair(
        fixed=100.0 * s / total if total else NAN,
        parseable=100.0 * s / n if n else NAN,
    )


def _percent(count: int, total: int) -> float:
    return 100.0 * count / total if total else NAN


def _fidelity_normalised(iou_p: Pair, c_n: float | None) -> Pair:
    if c_n is None or not math.isfinite(c_n) or c_n <= 0:
        return Pair(NAN, NAN)
    return Pair(100.0 * iou_p.fixed / c_n, 100.0 * iou_p.parseable / c_n)
