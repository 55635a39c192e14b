"""The cohort as the report describes it (PROTOCOL §2, §8), read from the store alone.

Each question's referent as stored (every polygon part, in its frame), the referent Figure 1
draws (:func:`example_qid`, a rule fixed before any answer), and the two sides of the paper's
"output allowances are nonbinding": the longest answer scored legal and the tightest output
allowance a configuration records. No image is read: the report works without the images.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import duckdb

from conditions import BOX
from scoring import BUDGETS, mask_area, rasterize, select_part

Flat = tuple[float, ...]


@dataclass(frozen=True)
class Shape:
    """A question's referent as the cohort stored it: every polygon part (a flat pixel list
    ``[x1, y1, …]``), in an annotation frame of ``width`` × ``height`` pixels."""

    parts: tuple[Flat, ...]
    width: int
    height: int

    @property
    def selected(self) -> int:
        """The selected part's index (§2.1: the most listed vertices, ties to the lowest)."""
        return select_part(self.parts)

    @property
    def vertices(self) -> int:
        """How many vertices the selected part lists: ``V`` of §2."""
        return len(self.parts[self.selected]) // 2


@dataclass(frozen=True)
class Example:
    """Figure 1's referent: its question, its shape, and ``G_N`` (phase 0) at each budget as
    the cohort stored it (flat pixel lists)."""

    qid: str
    expression: str
    category: str
    shape: Shape
    targets: Mapping[int, Flat]


@dataclass(frozen=True)
class LongestAnswer:
    """The longest stored answer scored legal: its length in characters and where it is."""

    characters: int
    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int


@dataclass(frozen=True)
class Allowance:
    """A configuration's output allowance (its ``max_output_tokens``), in tokens."""

    tokens: int
    configuration: str


@dataclass(frozen=True)
class StoredCohort:
    """What the cohort section and Figure 1 read: every question's referent, Figure 1's
    referent, the longest legal answer, and each configuration's output allowance
    (``unrecorded``: the configurations whose stored settings name none)."""

    shapes: Mapping[str, Shape] = field(default_factory=dict)
    example: Example | None = None
    longest_legal: LongestAnswer | None = None
    allowances: tuple[Allowance, ...] = ()
    unrecorded: tuple[str, ...] = ()

    @property
    def tightest(self) -> Allowance | None:
        """The smallest allowance recorded (on a tie, the first configuration by name)."""
        return min(self.allowances, key=lambda a: (a.tokens, a.configuration), default=None)


@dataclass(frozen=True)
class PartShare:
    """A multi-part referent's selected part against its other parts, by rasterised area
    (§3's ``R``, the region every score uses): its share of the union of all parts (NaN
    when the union covers no pixel) and whether no other part is larger."""

    share: float
    largest: bool


@dataclass(frozen=True)
class PartStatistics:
    """The paper's multi-part statistics (§3.1): of ``questions``, ``multi_part`` have a
    referent of more than one part; over those, the selected part's mean share of the union's
    area (%, NaN with none) and how many have it also the largest part by area."""

    questions: int
    multi_part: int
    mean_share: float
    largest: int

    @property
    def largest_percent(self) -> float:
        return 100.0 * self.largest / self.multi_part if self.multi_part else math.nan


def load_cohort(con: duckdb.DuckDBPyConnection) -> StoredCohort:
    """The cohort's referents, Figure 1's referent with its stored targets, the longest legal
    answer and the configurations' output allowances, from a store."""
    shapes = _shapes(con)
    qid = example_qid(shapes)
    allowances, unrecorded = _allowances(con)
    return StoredCohort(
        shapes=shapes,
        example=_example(con, qid, shapes[qid]) if qid is not None else None,
        longest_legal=_longest_legal(con),
        allowances=allowances,
        unrecorded=unrecorded,
    )


EXAMPLE_VERTICES = 48
"""Figure 1's ideal selected part: ``G_32`` removes as many of its vertices as ``G_64``
inserts midpoints (16), so simplification and up-sampling show alike."""


def example_qid(shapes: Mapping[str, Shape]) -> str | None:
    """Figure 1's referent, by a rule that reads the cohort alone (so every store of a cohort
    draws the same one): first a selected part that every budget but the largest simplifies
    and the largest up-samples (between 32 and 64 vertices, both ends excluded), else one that
    some budget simplifies and another up-samples (between 8 and 64); among those a referent of
    several parts (the selection rule at work too), then the part's vertex count closest to
    :data:`EXAMPLE_VERTICES`, then the lowest qid.

    >>> square, big = (0, 0, 1, 0, 1, 1, 0, 1), tuple(range(80))
    >>> example_qid({"b": Shape((big, square), 9, 9), "a": Shape((big,), 9, 9)})
    'b'
    >>> example_qid({})
    """

    def rank(qid: str) -> tuple[int, bool, int, str]:
        shape = shapes[qid]
        v = shape.vertices
        tier = 0 if BUDGETS[-2] < v < BUDGETS[-1] else 1 if BUDGETS[0] < v < BUDGETS[-1] else 2
        return tier, len(shape.parts) == 1, abs(v - EXAMPLE_VERTICES), qid

    return min(shapes, key=rank, default=None)


def part_statistics(shapes: Mapping[str, Shape]) -> PartStatistics:
    """:class:`PartStatistics` of a cohort's referents (each multi-part one rasterised)."""
    shares = [part_share(s) for s in shapes.values() if len(s.parts) > 1]
    finite = [p.share for p in shares if not math.isnan(p.share)]
    return PartStatistics(
        questions=len(shapes),
        multi_part=len(shares),
        mean_share=100.0 * math.fsum(finite) / len(finite) if finite else math.nan,
        largest=sum(p.largest for p in shares),
    )


def part_share(shape: Shape) -> PartShare:
    """The selected part's share of the union of ``shape``'s parts and whether it is the
    largest, both by rasterised area: parts may overlap, so the union is not their sum, and a
    tie for the largest counts as the largest."""
    areas = [mask_area(rasterize([p], shape.height, shape.width)) for p in shape.parts]
    union = mask_area(rasterize(shape.parts, shape.height, shape.width))
    mine = areas[shape.selected]
    return PartShare(mine / union if union else math.nan, mine >= max(areas))


def resampling(shapes: Mapping[str, Shape], n: int) -> tuple[int, int, int]:
    """How many selected parts ``G_N`` simplifies (more than ``n`` vertices), up-samples (fewer)
    and keeps as listed (exactly ``n``)."""
    counts = [s.vertices for s in shapes.values()]
    return (sum(v > n for v in counts), sum(v < n for v in counts), sum(v == n for v in counts))


def _shapes(con: duckdb.DuckDBPyConnection) -> dict[str, Shape]:
    rows = con.execute(
        "SELECT i.qid, i.parts, q.width, q.height FROM instances i JOIN questions q "
        "USING (qid) WHERE i.role = 'target' ORDER BY i.qid"
    ).fetchall()
    return {qid: Shape(_flats(parts), int(w), int(h)) for qid, parts, w, h in rows}


def _flats(parts: Sequence[Sequence[float]]) -> tuple[Flat, ...]:
    return tuple(tuple(float(c) for c in part) for part in parts)


def _example(con: duckdb.DuckDBPyConnection, qid: str, shape: Shape) -> Example:
    """``qid``'s question and its stored phase-0 targets: what Figure 1 draws."""
    row = con.execute("SELECT expression, category FROM questions WHERE qid = ?", [qid]).fetchone()
    expression, category = row if row is not None else ("", "")
    targets = con.execute(
        "SELECT budget, vertices FROM targets WHERE qid = ? AND phase = 0 ORDER BY budget", [qid]
    ).fetchall()
    return Example(qid, str(expression), str(category), shape,
                   {int(n): tuple(float(c) for c in flat) for n, flat in targets})  # fmt: skip


def _longest_legal(con: duckdb.DuckDBPyConnection) -> LongestAnswer | None:
    """The longest answer of any attempt scored legal (polygon answers: legality is theirs);
    of equals, the first by cell, question and attempt."""
    row = con.execute(
        f"""SELECT length(r.answer) AS characters, r.configuration, r.condition, r.budget,
            r.qid, r.attempt
        FROM responses r JOIN scores s USING (configuration, condition, budget, qid, attempt)
        WHERE s.legal AND r.budget <> {BOX} AND r.answer IS NOT NULL
        ORDER BY characters DESC, r.configuration, r.condition, r.budget, r.qid, r.attempt
        LIMIT 1"""
    ).fetchone()
    if row is None:
        return None
    characters, configuration, condition, budget, qid, attempt = row
    return LongestAnswer(int(characters), configuration, condition, int(budget), qid, int(attempt))


def _allowances(con: duckdb.DuckDBPyConnection) -> tuple[tuple[Allowance, ...], tuple[str, ...]]:
    """Each configuration's ``max_output_tokens`` from the settings a run stored with it (the
    decoding the protocol hash covers; no condition changes it), and the configurations whose
    settings name none."""
    found: list[Allowance] = []
    unrecorded: list[str] = []
    for name, settings in con.execute(
        "SELECT name, settings FROM configurations ORDER BY name"
    ).fetchall():
        tokens = _max_output_tokens(settings)
        if tokens is None:
            unrecorded.append(name)
        else:
            found.append(Allowance(tokens, name))
    return tuple(found), tuple(unrecorded)


def _max_output_tokens(settings: str | None) -> int | None:
    try:
        decoding = json.loads(settings or "{}").get("decoding", {})
        tokens = decoding.get("max_output_tokens") if isinstance(decoding, dict) else None
    except (ValueError, AttributeError):  # not JSON, or not an object: recorded as none
        return None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
