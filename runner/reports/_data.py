"""A store's scores, read back as the ``scoring`` package's values, one view at a time.

Only settled questions carry a score (an unsettled one is being run, or was left by a run that
stopped: ``ViewScores.open_requests`` says why); a cell with fewer settled questions than its
grid has is incomplete, and the tables say so rather than average what has come in as if it
were all.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import duckdb

from conditions import BOX, has_table
from runner.reports._cohort import StoredCohort, load_cohort
from runner.store import SNAPSHOT_TABLE, StoreError
from runner.store._errors import first_line
from scoring import ALTERNATE_REFERENCES as ALTERNATE_REFERENCES
from scoring import PHASE_REFERENCES as PHASE_REFERENCES
from scoring import (
    REFERENCES,
    BoxScore,
    PolygonScore,
    View,
)

_POLYGON = ("iou", "iou_part", "iou_union", "iou_cont", "iou_distractor", "legal", "legal_iou",
            "sel", "defect")  # fmt: skip


class Cell(NamedTuple):
    configuration: str
    condition: str
    budget: int


@dataclass(frozen=True)
class Question:
    """What the slices of Table 5 group by."""

    difficulty: str
    d_bin: str
    q_bin: str
    rs_bin: str
    group: str


@dataclass
class ViewScores:
    """Every cell's settled questions under one view: ``None`` is no parseable answer."""

    view: View
    polygons: dict[Cell, dict[str, PolygonScore | None]] = field(default_factory=dict)
    boxes: dict[Cell, dict[str, BoxScore | None]] = field(default_factory=dict)
    grid: dict[Cell, int] = field(default_factory=dict)  # questions per cell
    open_requests: dict[str, int] = field(default_factory=dict)  # see :func:`_open_requests`

    def complete(self, cell: Cell) -> bool:
        settled = self.boxes.get(cell) if cell.budget == BOX else self.polygons.get(cell)
        return len(settled or {}) == self.grid.get(cell, 0)


# The re-scored references, from scoring (re-exported for the tables): PHASE_REFERENCES,
# "phase0".."phase7", are G_N at each sampling phase (phase0 is the official target);
# ALTERNATE_REFERENCES are "part" and "union", the unreduced selected part and the union of all
# parts (both rasterised), and "continuous", G_N (phase 0) under the continuous-area backend.


@dataclass(frozen=True)
class Rescored:
    """The headline view's locked answers re-scored against other references (PROTOCOL §5),
    written by ``groundbench rescore``.

    ``ious[reference][cell][qid]`` is the IoU (a fraction) of the answer ``iou2`` locks for
    ``qid`` in ``cell``; only parseable locked answers have one (a settled question without
    one scores 0 under every reference). ``missing[cell]`` counts the cell's settled parseable
    answers that lack a re-scored row for at least one reference: a table built on those
    says so rather than score them 0.
    """

    ious: dict[str, dict[Cell, dict[str, float]]] = field(default_factory=dict)
    missing: dict[Cell, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportData:
    """Everything the tables and figures read: two views, the questions, ``C_N``, the
    re-scored references, each question's selected-part vertex count and the cohort's
    referents as stored (the cohort section and Figure 1)."""

    headline: ViewScores  # iou2
    best_effort: ViewScores
    questions: dict[str, Question]
    fidelity: dict[int, float]  # C_N in points
    rescored: Rescored = field(default_factory=Rescored)
    part_vertices: dict[str, int] = field(default_factory=dict)  # V of the selected part
    # The views before the headline's (PROTOCOL §6): iou0 (attempt 0 alone) and iou1, for
    # Table 1's IoU0 and IoU1 columns; a view not read is "—" there.
    earlier: dict[View, ViewScores] = field(default_factory=dict)
    cohort: StoredCohort = field(default_factory=StoredCohort)

    @property
    def configurations(self) -> list[str]:
        return sorted({c.configuration for c in self.headline.grid})

    def conditions_of(self, configuration: str) -> list[str]:
        return sorted({c.condition for c in self.headline.grid if c.configuration == configuration})

    def budgets_of(self, configuration: str, condition: str = "base") -> list[int]:
        return sorted(
            c.budget
            for c in self.headline.grid
            if c.configuration == configuration and c.condition == condition and c.budget != BOX
        )


def load_report_data(con: duckdb.DuckDBPyConnection, where: object = "the store") -> ReportData:
    """Read the ``iou2``, ``iou0``, ``iou1`` and best-effort views, the questions, ``C_N``,
    the re-scored references, each question's part size and the cohort's referents (with
    the longest legal answer and the output allowances: :func:`load_cohort`) from a store.

    Raises
    ------
    StoreError
        The store has no run yet, or was last opened by an older groundbench (a run of this
        one brings its tables up to date).
    """
    try:
        return _load(con)
    except duckdb.CatalogException as exc:
        raise StoreError(
            f"{where}: no run results to report ({first_line(exc)}); run the experiment first"
        ) from None


EARLIER_VIEWS: tuple[View, ...] = ("iou0", "iou1")


def _load(con: duckdb.DuckDBPyConnection) -> ReportData:
    questions = {
        qid: Question(*rest)
        for qid, *rest in con.execute(
            'SELECT qid, difficulty, d_bin, q_bin, rs_bin, "group" FROM questions'
        ).fetchall()
    }
    row = con.execute("SELECT fidelity FROM cohort").fetchone()
    fidelity = {int(k): float(v) for k, v in json.loads(row[0]).items()} if row else {}
    controls = _controls(con)
    open_requests = _open_requests(con)
    headline = _view(con, "iou2", controls, open_requests)
    cohort = load_cohort(con)
    return ReportData(
        headline=headline,
        best_effort=_view(con, "best_effort", controls, open_requests),
        questions=questions,
        fidelity=fidelity,
        rescored=_rescored(con, headline.grid),
        part_vertices={qid: shape.vertices for qid, shape in cohort.shapes.items()},
        earlier={v: _view(con, v, controls, open_requests) for v in EARLIER_VIEWS},
        cohort=cohort,
    )


def _view(
    con: duckdb.DuckDBPyConnection,
    view: View,
    controls: dict[tuple[str, str, str, int], dict[int, PolygonScore]],
    open_requests: dict[str, int],
) -> ViewScores:
    out = ViewScores(view, open_requests=open_requests)
    for configuration, condition, budget, count in con.execute(
        "SELECT configuration, condition, budget, count(*) FROM grid GROUP BY ALL"
    ).fetchall():
        out.grid[Cell(configuration, condition, budget)] = count
    rows = con.execute(
        f"SELECT configuration, condition, budget, qid, attempt, parseable, box_iou, "
        f"{', '.join(_POLYGON)} FROM question_scores WHERE view = ? AND settled",
        [view],
    ).fetchall()
    polygons: dict[Cell, dict[str, PolygonScore | None]] = defaultdict(dict)
    boxes: dict[Cell, dict[str, BoxScore | None]] = defaultdict(dict)
    for configuration, condition, budget, qid, attempt, parseable, box_iou, *metrics in rows:
        cell = Cell(configuration, condition, budget)
        if budget == BOX:
            control = controls.get((configuration, condition, qid, attempt), {})
            boxes[cell][qid] = BoxScore(True, box_iou, control) if parseable else None
        else:
            polygons[cell][qid] = _polygon(metrics) if parseable else None
    out.polygons, out.boxes = dict(polygons), dict(boxes)
    return out


def _open_requests(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The grid's requests not complete, by why: the outcome of each one's latest error
    (``quota``, ``fatal`` — a refused key, access or model —, ``transient``, ``rate-limited``)
    or ``unsent`` (no error recorded: never sent, or its attempts so far answered).

    A report opens the file read-only, which DuckDB refuses while a run holds it: when a
    report reads them, these requests are not running but left for the next run — unless it
    reads a snapshot of a run going (``runner.store.reading``): then they are all ``running``.
    """
    if has_table(con, SNAPSHOT_TABLE):
        (running,) = con.execute(
            "SELECT count(*) FROM request_status WHERE status <> 'complete'"
        ).fetchone() or (0,)
        return {"running": int(running)}
    rows = con.execute(
        """SELECT coalesce(e.outcome, 'unsent') AS why, count(*)
        FROM request_status s LEFT JOIN (
            SELECT configuration, condition, budget, qid, arg_max(outcome, started_at) AS outcome
            FROM responses WHERE outcome <> 'answer' GROUP BY ALL) e
            USING (configuration, condition, budget, qid)
        WHERE s.status <> 'complete' GROUP BY ALL ORDER BY 2 DESC, 1"""
    ).fetchall()
    return {why: count for why, count in rows}


def _rescored(con: duckdb.DuckDBPyConnection, grid: dict[Cell, int]) -> Rescored:
    """The ``iou2``-locked answers' re-scored IoUs, and per polygon cell of the grid (0 when
    none) how many settled parseable answers lack a reference's row.

    A store written before ``reference_scores`` existed (opened read-only, so not brought up
    to date) still reports: no IoUs, every parseable answer missing.
    """
    source = _JOINED if has_table(con, "reference_scores") else _UNJOINED
    rows = con.execute(
        f"SELECT q.configuration, q.condition, q.budget, q.qid, {source} "
        f"WHERE q.view = 'iou2' AND q.settled AND q.parseable AND q.budget <> {BOX}"
    ).fetchall()
    ious: dict[str, dict[Cell, dict[str, float]]] = {}
    held: dict[tuple[Cell, str], int] = {}  # references found per locked answer
    for configuration, condition, budget, qid, reference, iou in rows:
        cell = Cell(configuration, condition, budget)
        found = reference in _WANTED and iou is not None
        held[(cell, qid)] = held.get((cell, qid), 0) + found
        if found:
            ious.setdefault(reference, {}).setdefault(cell, {})[qid] = iou
    missing = {cell: 0 for cell in grid if cell.budget != BOX}
    for (cell, _), count in held.items():
        if count < len(_WANTED):
            missing[cell] = missing.get(cell, 0) + 1
    return Rescored(ious=ious, missing=missing)


_WANTED = frozenset(REFERENCES)
# What the locked answers are joined to: the re-scored rows of the attempt iou2 locks, or (a
# store from before migration 4, which a read-only connection cannot bring up to date) nothing.
_JOINED = """r.reference, r.iou FROM question_scores q LEFT JOIN reference_scores r
    ON r.configuration = q.configuration AND r.condition = q.condition
    AND r.budget = q.budget AND r.qid = q.qid AND r.attempt = q.attempt"""
_UNJOINED = "NULL AS reference, NULL AS iou FROM question_scores q"


def _controls(
    con: duckdb.DuckDBPyConnection,
) -> dict[tuple[str, str, str, int], dict[int, PolygonScore]]:
    out: dict[tuple[str, str, str, int], dict[int, PolygonScore]] = defaultdict(dict)
    for configuration, condition, qid, attempt, n, parseable, *metrics in con.execute(
        f"SELECT configuration, condition, qid, attempt, n, parseable, {', '.join(_POLYGON)} "
        "FROM controls"
    ).fetchall():
        out[(configuration, condition, qid, attempt)][n] = _polygon(metrics, parseable)
    return dict(out)


def _polygon(metrics: list[Any], parseable: bool = True) -> PolygonScore:
    values = dict(zip(_POLYGON, metrics, strict=True))
    return PolygonScore(parseable=parseable, **values)
