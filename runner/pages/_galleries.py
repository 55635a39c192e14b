"""Which answers the HTML report shows for each cell: its galleries.

A gallery holds every stored answer of a cell (each attempt with its own score, so a retried
question's unparseable first answer is there too) of one kind, worst first, up to ``size``:

- ``worst``: the lower half of the cell's parseable answers by IoU (the ``n // 2`` lowest of
  ``n``, at least one), lowest first (a box answer by ``box_iou``): "worst" is true of every
  answer it holds, where the lowest 48 of 60 reached IoU 70–80 (issue 39);
- ``unparseable``: answers whose last list is not exactly ``2N`` finite values, by IoU of
  nothing, in question order;
- ``refusal``: unparseable answers with no digit at all, or cut by the provider's content
  filter (``finish_reason``): the model declined rather than miscounted (decided, groundbench);
- ``illegal``: parseable polygons that break a legality rule, by defect then IoU, highest
  first (the answers that would have scored);
- ``distractor``: parseable polygons overlapping a same-category distractor more than the
  referent (``iou_distractor > iou_union``), most overlapping first;
- ``sample``: a random sample of all the cell's answers, drawn from ``seed`` and the cell's
  name, so that a report built again shows the same sample.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb

from conditions import BOX, AttemptKey

GalleryKind = Literal["worst", "unparseable", "refusal", "illegal", "distractor", "sample"]
KINDS: tuple[GalleryKind, ...] = (
    "worst", "unparseable", "refusal", "illegal", "distractor", "sample"
)  # fmt: skip
# Finish reasons that mean the provider cut the answer for its content (OpenAI's and
# DashScope's content_filter, Gemini's SAFETY, PROHIBITED_CONTENT, BLOCKLIST, SPII).
_FILTERED = ("content_filter", "safety", "prohibited_content", "blocklist", "spii", "refusal")


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a configuration's condition at one budget (:data:`BOX`: the box)."""

    configuration: str
    condition: str
    budget: int

    @property
    def is_box(self) -> bool:
        return self.budget == BOX


@dataclass(frozen=True)
class GalleryItem:
    """One answer in a gallery: its key, its IoU (``box_iou`` for a box; ``None``
    unparseable) and its defect."""

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    iou: float | None
    defect: str | None

    @property
    def key(self) -> AttemptKey:
        return AttemptKey.of(self)

    @property
    def cell(self) -> Cell:
        return Cell(configuration=self.configuration, condition=self.condition, budget=self.budget)


@dataclass(frozen=True)
class Gallery:
    """One kind of answer of one cell: up to ``size`` items, and how many the cell has;
    ``of``, for ``worst``, how many parseable answers the cell has (its lower half is
    ``total``)."""

    cell: Cell
    kind: GalleryKind
    items: tuple[GalleryItem, ...]
    total: int
    of: int | None = None


@dataclass(frozen=True)
class _Answer:
    item: GalleryItem
    parseable: bool
    refused: bool
    legal: bool | None
    iou_union: float | None
    iou_distractor: float | None


_SQL = f"""SELECT r.configuration, r.condition, r.budget, r.qid, r.attempt, s.parseable,
    CASE WHEN r.budget = {BOX} THEN s.box_iou ELSE s.iou END AS iou, s.defect, s.legal,
    s.iou_union, s.iou_distractor,
    NOT regexp_matches(coalesce(r.answer, ''), '[0-9]')
        OR lower(coalesce(r.finish_reason, '')) IN {_FILTERED} AS refused
    FROM responses r JOIN scores s USING (configuration, condition, budget, qid, attempt)
    WHERE r.outcome = 'answer'
    ORDER BY r.configuration, r.condition, r.budget, r.qid, r.attempt"""


def galleries(con: duckdb.DuckDBPyConnection, *, seed: int = 0, size: int = 48) -> list[Gallery]:
    """Every cell's galleries (cells in order, kinds in :data:`KINDS` order; a kind the cell
    has no answer of is left out), each of at most ``size`` scored answers."""
    cells: dict[Cell, list[_Answer]] = defaultdict(list)
    for (
        c,
        k,
        n,
        qid,
        attempt,
        parseable,
        iou,
        defect,
        legal,
        union,
        distractor,
        refused,
    ) in con.execute(_SQL).fetchall():
        item = GalleryItem(
            configuration=c,
            condition=k,
            budget=n,
            qid=qid,
            attempt=attempt,
            iou=iou if parseable else None,
            defect=defect,
        )
        cells[item.cell].append(_Answer(item, parseable, refused, legal, union, distractor))
    out: list[Gallery] = []
    for cell, answers in cells.items():
        for kind in KINDS:
            chosen = _CHOOSE[kind](answers, cell, seed)
            if chosen:
                items = tuple(a.item for a in chosen[:size])
                of = sum(a.parseable for a in answers) if kind == "worst" else None
                out.append(Gallery(cell=cell, kind=kind, items=items, total=len(chosen), of=of))
    return out


Chooser = Callable[[Sequence[_Answer], Cell, int], list[_Answer]]


def _worst(answers: Sequence[_Answer], cell: Cell, seed: int) -> list[_Answer]:
    """The lower half by IoU, lowest first: ranks, not a threshold, so that a cell whose
    median is 0 (most answers missing the referent) still shows its worst half."""
    ranked = sorted((a for a in answers if a.parseable), key=lambda a: (a.item.iou or 0.0, _at(a)))
    return ranked[: max(1, len(ranked) // 2)]


def _unparseable(answers: Sequence[_Answer], cell: Cell, seed: int) -> list[_Answer]:
    return [a for a in answers if not a.parseable and not a.refused]


def _refusal(answers: Sequence[_Answer], cell: Cell, seed: int) -> list[_Answer]:
    return [a for a in answers if not a.parseable and a.refused]


def _illegal(answers: Sequence[_Answer], cell: Cell, seed: int) -> list[_Answer]:
    if cell.is_box:
        return []
    wrong = (a for a in answers if a.parseable and a.legal is False)
    return sorted(wrong, key=lambda a: (a.item.defect or "", -(a.item.iou or 0.0), _at(a)))


def _distractor(answers: Sequence[_Answer], cell: Cell, seed: int) -> list[_Answer]:
    if cell.is_box:
        return []
    taken = (a for a in answers if a.parseable and _prefers_distractor(a))
    return sorted(taken, key=lambda a: (-(a.iou_distractor or 0.0), _at(a)))


def _sample(answers: Sequence[_Answer], cell: Cell, seed: int) -> list[_Answer]:
    # Seeded by the cell's name, not its position: adding a configuration to the store leaves
    # every other cell's sample as it was.
    rng = random.Random(f"{seed}:{cell.configuration}:{cell.condition}:{cell.budget}")
    return rng.sample(list(answers), len(answers))


def _prefers_distractor(a: _Answer) -> bool:
    return (a.iou_distractor or 0.0) > (a.iou_union or 0.0)


def _at(a: _Answer) -> tuple[str, int]:
    return (a.item.qid, a.item.attempt)


_CHOOSE: dict[GalleryKind, Chooser] = {
    "worst": _worst,
    "unparseable": _unparseable,
    "refusal": _refusal,
    "illegal": _illegal,
    "distractor": _distractor,
    "sample": _sample,
}


def cells_of(found: Iterable[Gallery]) -> list[Cell]:
    """The cells the galleries cover, in order."""
    return list(dict.fromkeys(g.cell for g in found))
