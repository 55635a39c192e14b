"""The robustness audits the paper's text rests on, from the re-scored IoU2 answers.

§4.2 F2: "Eight starting phases preserve the configuration ordering and the high-budget
reversal"; §4.3: "Alternate reference masks and a continuous-area backend shift five-budget
means by at most 1.1 points without changing the ordering". Both read
``ReportData.rescored`` (written by ``groundbench rescore STORE``): the answer IoU2 locks for
each question, scored against another reference.

Every figure is a fixed IoU2 in points on the base condition: a question settled with no
parseable answer scores 0 under every reference, so all references share one denominator.
A cell some of whose parseable answers have no re-scored IoU is left out by name (scoring
them 0 would pass a missing row off as a wrong answer). Orderings, inversions and peaks are
:mod:`scoring`'s (``ordering``, ``inversions``, ``peak``), never redefined here.

:func:`phase_audit_figures` and :func:`alternate_reference_figures` return the numbers as
frozen values, for any table that states the verdicts; the ``*_table`` functions print them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from runner.reports._data import ALTERNATE_REFERENCES, PHASE_REFERENCES, Cell, ReportData
from runner.reports._tables import INCOMPLETE, ReportTable, _fmt, _signed
from scoring import Peak, PolygonScore, inversions, ordering, peak

OFFICIAL = PHASE_REFERENCES[0]
"""``phase0``: ``G_N`` itself, the official target (its re-score equals the headline ``iou``)."""
RESCORE = "run `groundbench rescore STORE`"
_GAP = 0.05  # points: phase 0 further than this from the stored IoU2 means the scores disagree
_VIEW = "IoU2 view, fixed denominator (a question with no parseable answer scores 0 under every"

Swaps = tuple[tuple[str, str], ...]
"""Inversions ``(a, b)`` against a reference ordering: ``a`` was above ``b``, now ``b > a``."""


# -- which cells are re-scored, and their fixed IoU under a reference ------------------------


@dataclass(frozen=True)
class Unscored:
    """A base cell left out of an audit: ``answers`` of its settled parseable answers have no
    re-scored IoU under some reference the audit reads (0: no settled question yet)."""

    cell: Cell
    answers: int


def fixed_iou(data: ReportData, cell: Cell, reference: str) -> float:
    """The cell's fixed IoU2 in points under ``reference``: the mean over its settled
    questions of the re-scored IoU, 0 for a question with no parseable answer (NaN with no
    settled question). Only meaningful for a cell with nothing unscored (see :func:`_split`)."""
    locked = data.headline.polygons.get(cell, {})
    if not locked:
        return math.nan
    scored = data.rescored.ious.get(reference, {}).get(cell, {})
    return 100.0 * sum(scored[q] if _parsed(s) else 0.0 for q, s in locked.items()) / len(locked)


def _parsed(score: PolygonScore | None) -> bool:
    return score is not None and score.parseable


def _base_cells(data: ReportData) -> list[Cell]:
    return [Cell(c, "base", n) for c in data.configurations for n in data.budgets_of(c)]


def _lacking(data: ReportData, cell: Cell, references: Sequence[str]) -> int:
    """Settled parseable answers of ``cell`` without a re-scored IoU under one of
    ``references``: counted here rather than read from ``rescored.missing``, which pools
    every reference, so that a missing continuous row does not hide a complete phase audit."""
    tables = [data.rescored.ious.get(r, {}).get(cell, {}) for r in references]
    locked = data.headline.polygons.get(cell, {})
    return sum(1 for q, s in locked.items() if _parsed(s) and any(q not in t for t in tables))


def _split(data: ReportData, references: Sequence[str]) -> tuple[list[Cell], tuple[Unscored, ...]]:
    """The base cells every answer of which is re-scored under ``references``, and the rest."""
    ready, unscored = [], []
    for cell in _base_cells(data):
        lacking = _lacking(data, cell, references)
        if lacking or not data.headline.polygons.get(cell):
            unscored.append(Unscored(cell, lacking))
        else:
            ready.append(cell)
    return ready, tuple(unscored)


def _any_rescored(data: ReportData, references: Sequence[str]) -> bool:
    return any(data.rescored.ious.get(r) for r in references)


# -- the phase audit -------------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseCell:
    """One base cell's fixed IoU2 (points) against each phase's targets, phase 0 first."""

    cell: Cell
    ious: tuple[float, ...]
    complete: bool  # every question of the cell's grid has settled

    @property
    def spread(self) -> float:
        """Max minus min over the phases: how much the sampling origin alone moves the cell."""
        return max(self.ious) - min(self.ious)


@dataclass(frozen=True)
class PhaseOrdering:
    """The configuration ordering at one budget in each phase, and each phase's inversions
    against phase 0's ordering (phase 0 has none)."""

    budget: int
    orderings: tuple[tuple[str, ...], ...]
    swaps: tuple[Swaps, ...]

    @property
    def changed_phases(self) -> tuple[int, ...]:
        return tuple(k for k, s in enumerate(self.swaps) if s)

    @property
    def same(self) -> bool:
        """No phase inverts a pair of phase 0's ordering (a tie is no inversion)."""
        return not self.changed_phases


@dataclass(frozen=True)
class PhaseReversal:
    """One configuration's budget curve in each phase: where it peaks, how far it falls."""

    configuration: str
    peaks: tuple[Peak, ...]

    @property
    def failing_phases(self) -> tuple[int, ...]:
        return tuple(k for k, p in enumerate(self.peaks) if not p.reversal)

    @property
    def holds(self) -> bool:
        """Every phase shows the reversal (:attr:`scoring.Peak.reversal`)."""
        return not self.failing_phases


@dataclass(frozen=True)
class PhaseAudit:
    """The eight-phase audit (F2). ``unscored`` cells are in no figure; ``left_out`` names the
    configurations without a reversal verdict and why; ``rescored`` is False when no phase
    has a single re-scored answer (then everything else is empty)."""

    cells: tuple[PhaseCell, ...]
    orderings: tuple[PhaseOrdering, ...]
    reversals: tuple[PhaseReversal, ...]
    unscored: tuple[Unscored, ...]
    left_out: tuple[tuple[str, str], ...]
    rescored: bool
    official_gap: float  # largest |phase 0 − stored IoU2| over the cells, points (0 if none)

    @property
    def ordering_holds(self) -> bool | None:
        """The ordering is the same in all eight phases at every budget (None: no budget with
        two configurations to order)."""
        return all(o.same for o in self.orderings) if self.orderings else None

    @property
    def reversal_holds(self) -> bool | None:
        """Every configuration shows the reversal in all eight phases (None: none to judge)."""
        return all(r.holds for r in self.reversals) if self.reversals else None


def phase_audit_figures(data: ReportData) -> PhaseAudit:
    """The eight-phase audit's numbers and verdicts, from ``data.rescored``'s phase rows.

    A configuration's ordering at ``N`` covers every configuration with a re-scored cell at
    ``N``; a reversal needs the configuration's whole curve (two budgets or more, all
    re-scored), since a peak over part of it could sit anywhere.
    """
    if not _any_rescored(data, PHASE_REFERENCES):
        return PhaseAudit((), (), (), (), (), rescored=False, official_gap=0.0)
    ready, unscored = _split(data, PHASE_REFERENCES)
    cells = tuple(_phase_cell(data, c) for c in ready)
    reversals, left_out = _phase_reversals(data, cells)
    gap = max((_official_gap(data, c.cell) for c in cells), default=0.0)
    return PhaseAudit(cells, _phase_orderings(cells), reversals, unscored, left_out, True, gap)


def _phase_cell(data: ReportData, cell: Cell) -> PhaseCell:
    ious = tuple(fixed_iou(data, cell, r) for r in PHASE_REFERENCES)
    return PhaseCell(cell, ious, data.headline.complete(cell))


def _official_gap(data: ReportData, cell: Cell) -> float:
    """How far phase 0's re-score is from the stored IoU2 of the same answers: both are
    ``G_N``, so anything above rounding means the re-scores came from other code or answers."""
    locked = data.headline.polygons.get(cell, {})
    stored = 100.0 * sum(s.iou for s in locked.values() if s is not None and s.parseable)
    return abs(fixed_iou(data, cell, OFFICIAL) - stored / len(locked))


def _phase_orderings(cells: Sequence[PhaseCell]) -> tuple[PhaseOrdering, ...]:
    """Per budget with two configurations or more: each phase's ordering and inversions."""
    by_budget: dict[int, list[PhaseCell]] = {}
    for c in cells:
        by_budget.setdefault(c.cell.budget, []).append(c)
    out = []
    for n, group in sorted(by_budget.items()):
        if len(group) < 2:
            continue
        values = [
            {c.cell.configuration: c.ious[k] for c in group} for k in range(len(group[0].ious))
        ]
        orders = tuple(ordering(v) for v in values)
        swaps = tuple(tuple(inversions(orders[0], v)) for v in values)
        out.append(PhaseOrdering(n, orders, swaps))
    return tuple(out)


def _phase_reversals(
    data: ReportData, cells: Sequence[PhaseCell]
) -> tuple[tuple[PhaseReversal, ...], tuple[tuple[str, str], ...]]:
    """Each configuration's peak per phase, or why it has no reversal verdict."""
    reversals, left_out = [], []
    for configuration in data.configurations:
        budgets = data.budgets_of(configuration)
        if not budgets:
            continue  # no polygon budget at all (a box-only configuration): nothing to judge
        mine = {c.cell.budget: c for c in cells if c.cell.configuration == configuration}
        why = _no_curve(budgets, mine)
        if why:
            left_out.append((configuration, why))
            continue
        phases = range(len(PHASE_REFERENCES))
        peaks = tuple(peak({n: c.ious[k] for n, c in mine.items()}) for k in phases)
        reversals.append(PhaseReversal(configuration, peaks))
    return tuple(reversals), tuple(left_out)


def _no_curve(budgets: Sequence[int], ready: Mapping[int, PhaseCell]) -> str:
    """Why a configuration's budget curve cannot be judged ("" when it can)."""
    if len(budgets) < 2:
        return f"{_budgets(budgets)} only: a reversal needs two budgets or more"
    absent = [n for n in budgets if n not in ready]
    return f"{_budgets(absent)} not re-scored" if absent else ""


# -- the phase audit's tables ----------------------------------------------------------------


def phase_audit_table(data: ReportData) -> ReportTable:
    """Configuration × N: fixed IoU2 against each phase's targets, and the spread."""
    audit = phase_audit_figures(data)
    columns = ("Configuration", "N", "Questions",
               *(f"Phase {k}" for k in range(len(PHASE_REFERENCES))), "Spread")  # fmt: skip
    rows = tuple(_phase_row(data, c) for c in audit.cells)
    notes = _phase_notes(audit, _phase_audit_notes(audit), claims=False)
    title = "Phase audit: fixed IoU2 against the targets of eight sampling phases (points)"
    return ReportTable("phase_audit", title, columns, rows, notes)


def _phase_row(data: ReportData, c: PhaseCell) -> tuple[str, ...]:
    mark = "" if c.complete else INCOMPLETE
    questions = f"{len(data.headline.polygons.get(c.cell, {}))}"
    if not c.complete:
        questions += f"/{data.headline.grid.get(c.cell, 0)}{INCOMPLETE}"
    phases = (_fmt(v) + mark for v in c.ious)
    return (c.cell.configuration, str(c.cell.budget), questions, *phases, _fmt(c.spread))


def _phase_audit_notes(audit: PhaseAudit) -> list[str]:
    notes = [
        f"base condition; {_VIEW} phase)",
        "phase k rebuilds G_N from the sampling origin floor(k·V/8) of the selected part "
        "(PROTOCOL §2); phase 0 is the official target, as in Table 1; spread: max - min "
        "over the eight phases",
    ]
    if audit.official_gap > _GAP:
        notes.append(
            f"phase 0 differs from the stored IoU2 by up to {audit.official_gap:.2f} points: "
            "the run scored its answers against other targets than the re-scoring did (a "
            "groundbench of another target rule); written rows are never changed, so "
            "re-score into a copy of the store made by one groundbench"
        )
    return notes


def phase_claims_table(data: ReportData) -> ReportTable:
    """F2's two claims, phase by phase: the ordering at each N, each configuration's peak."""
    audit = phase_audit_figures(data)
    phases = range(len(PHASE_REFERENCES))
    columns = ("Claim", "N / Configuration", *(f"Phase {k}" for k in phases), "Verdict")
    rows = (*(_ordering_row(o) for o in audit.orderings),
            *(_reversal_row(r) for r in audit.reversals))  # fmt: skip
    notes = _phase_notes(audit, _claims_notes(audit), claims=True)
    title = "Phase audit: configuration ordering and high-budget reversal in each phase (IoU2)"
    return ReportTable("phase_audit_claims", title, columns, rows, notes)


def _ordering_row(o: PhaseOrdering) -> tuple[str, ...]:
    later = (_swaps(s) if s else "same" for s in o.swaps[1:])
    verdict = f"changes in {_phases(o.changed_phases)}" if o.changed_phases else "same in all 8"
    return ("ordering", f"N={o.budget}", " > ".join(o.orderings[0]), *later, verdict)


def _reversal_row(r: PhaseReversal) -> tuple[str, ...]:
    cells = (f"{p.budget} ({_fmt(p.drop)})" for p in r.peaks)
    verdict = f"fails in {_phases(r.failing_phases)}" if r.failing_phases else "holds in all 8"
    return ("reversal", r.configuration, *cells, verdict)


def _claims_notes(audit: PhaseAudit) -> list[str]:
    return [
        f"base condition; {_VIEW} phase)",
        "ordering: configurations by fixed IoU2 at that N, highest first, under phase 0; a "
        "later phase is 'same' when it inverts no pair of it (scoring.inversions: a tie is no "
        "inversion), else it names the pairs it puts the other way round",
        "reversal: the N at which the configuration peaks (scoring.peak) and, in brackets, the "
        "drop in points from there to its largest N; it holds in a phase when the peak is "
        "below the largest N and the curve falls from there",
        _ordering_verdict(audit),
        _reversal_verdict(audit),
    ]


def _ordering_verdict(audit: PhaseAudit) -> str:
    if audit.ordering_holds is None:
        return "ordering: no budget has two configurations to order"
    changed = [o for o in audit.orderings if not o.same]
    if not changed:
        return "ordering: the same in all eight phases at every N"
    where = "; ".join(f"N={o.budget} in {_phases(o.changed_phases)}" for o in changed)
    return f"ordering: changes at {where}"


def _reversal_verdict(audit: PhaseAudit) -> str:
    if audit.reversal_holds is None:
        return "reversal: no configuration has a re-scored budget curve to judge"
    failing = [r for r in audit.reversals if not r.holds]
    if not failing:
        return "reversal: holds in all eight phases for every configuration"
    where = "; ".join(f"{r.configuration} in {_phases(r.failing_phases)}" for r in failing)
    return f"reversal: fails for {where}"


def _phase_notes(audit: PhaseAudit, notes: list[str], claims: bool) -> tuple[str, ...]:
    """The audit's notes, its exclusions (with ``claims``, the reversal's too) and its
    incomplete cells; a lone note when nothing is re-scored (the table then has no rows)."""
    if not audit.rescored:
        return (f"no answer is re-scored against the phase targets yet: {RESCORE}",)
    notes += _unscored_notes(audit.unscored)
    if claims:
        notes += [f"no reversal verdict for {c}: {why}" for c, why in audit.left_out]
    if any(not c.complete for c in audit.cells):
        notes.append(_INCOMPLETE_NOTE)
    return tuple(notes)


# -- the alternate references ----------------------------------------------------------------

REFERENCE_LABELS: Mapping[str, str] = {
    OFFICIAL: "G_N",
    "part": "Part",
    "union": "Union",
    "continuous": "Continuous",
}
"""Column labels of :func:`alternate_references_table`, ``G_N`` first."""
_REFERENCES = (OFFICIAL, *ALTERNATE_REFERENCES)


@dataclass(frozen=True)
class Shift:
    """How far an alternate reference moves a configuration's five-budget mean from ``G_N``."""

    configuration: str
    reference: str
    delta: float  # points, the reference's mean minus G_N's


@dataclass(frozen=True)
class ReferenceMeans:
    """One configuration's five-budget means (points) under ``G_N`` and each alternate."""

    configuration: str
    budgets: tuple[int, ...]
    means: Mapping[str, float]  # reference -> unweighted mean over budgets of fixed IoU2
    complete: bool  # every cell's grid has settled

    @property
    def shifts(self) -> tuple[Shift, ...]:
        official = self.means[OFFICIAL]
        return tuple(
            Shift(self.configuration, r, self.means[r] - official) for r in ALTERNATE_REFERENCES
        )

    @property
    def largest_shift(self) -> Shift:
        """The alternate furthest from ``G_N`` in absolute value (the first such on a tie)."""
        return max(self.shifts, key=lambda s: abs(s.delta))


@dataclass(frozen=True)
class AlternateReferences:
    """The alternate-reference audit (§4.3). ``orderings[r]`` orders the configurations by
    their mean under ``r``; ``swaps[r]`` are the pairs ``r`` inverts against ``G_N``'s order.
    ``left_out`` configurations have an ``unscored`` cell; ``rescored`` is False when no
    reference has a single re-scored answer (then everything else is empty)."""

    configurations: tuple[ReferenceMeans, ...]
    orderings: Mapping[str, tuple[str, ...]]
    swaps: Mapping[str, Swaps]
    unscored: tuple[Unscored, ...]
    left_out: tuple[str, ...]
    rescored: bool

    @property
    def largest_shift(self) -> Shift | None:
        """The largest absolute shift from ``G_N`` over every configuration and reference."""
        shifts = [c.largest_shift for c in self.configurations]
        return max(shifts, key=lambda s: abs(s.delta)) if shifts else None

    @property
    def ordering_holds(self) -> bool | None:
        """No alternate reference inverts ``G_N``'s ordering (None: fewer than two
        configurations to order)."""
        if len(self.configurations) < 2:
            return None
        return not any(self.swaps.values())


def alternate_reference_figures(data: ReportData) -> AlternateReferences:
    """Five-budget means under ``G_N`` and each alternate reference, from ``data.rescored``.

    A configuration with any base cell not fully re-scored is left out whole: its mean over
    the other budgets would not be the mean the table's other rows report.
    """
    if not _any_rescored(data, _REFERENCES):
        return AlternateReferences((), {}, {}, (), (), rescored=False)
    ready, unscored = _split(data, _REFERENCES)
    left_out = tuple(sorted({u.cell.configuration for u in unscored}))
    by_configuration: dict[str, list[Cell]] = {}
    for cell in ready:
        if cell.configuration not in left_out:
            by_configuration.setdefault(cell.configuration, []).append(cell)
    means = tuple(_means(data, c, cells) for c, cells in by_configuration.items())
    orders = {r: ordering({m.configuration: m.means[r] for m in means}) for r in _REFERENCES}
    swaps = {r: _alternate_swaps(orders[OFFICIAL], means, r) for r in ALTERNATE_REFERENCES}
    return AlternateReferences(means, orders, swaps, unscored, left_out, True)


def _means(data: ReportData, configuration: str, cells: Sequence[Cell]) -> ReferenceMeans:
    """The unweighted mean over the configuration's budgets, one per reference: each budget
    counts once, whatever its number of settled questions (the paper's five-budget mean)."""
    means = {r: sum(fixed_iou(data, c, r) for c in cells) / len(cells) for r in _REFERENCES}
    complete = all(data.headline.complete(c) for c in cells)
    return ReferenceMeans(configuration, tuple(c.budget for c in cells), means, complete)


def _alternate_swaps(official: Sequence[str], means: Iterable[ReferenceMeans], r: str) -> Swaps:
    return tuple(inversions(official, {m.configuration: m.means[r] for m in means}))


def alternate_references_table(data: ReportData) -> ReportTable:
    """Per configuration: five-budget means under G_N, Part, Union and Continuous, the
    largest shift from G_N, and a last row comparing the orderings."""
    figures = alternate_reference_figures(data)
    columns = ("Configuration", "Budgets", *REFERENCE_LABELS.values(), "Largest shift", "From")
    rows = [_means_row(m) for m in figures.configurations]
    if len(figures.configurations) >= 2:
        rows.append(_references_ordering_row(figures))
    title = "Alternate references: five-budget mean fixed IoU2 under other references (points)"
    notes = _alternate_notes(figures)
    return ReportTable("alternate_references", title, columns, tuple(rows), notes)


def _means_row(m: ReferenceMeans) -> tuple[str, ...]:
    mark = "" if m.complete else INCOMPLETE
    shift = m.largest_shift
    means = (_fmt(m.means[r]) + mark for r in _REFERENCES)
    delta = _signed(shift.delta)
    return (m.configuration, str(len(m.budgets)), *means, delta, REFERENCE_LABELS[shift.reference])


def _references_ordering_row(figures: AlternateReferences) -> tuple[str, ...]:
    alternates = (_swaps(figures.swaps[r]) or "same" for r in ALTERNATE_REFERENCES)
    return ("ordering", "", " > ".join(figures.orderings[OFFICIAL]), *alternates, "", "")


def _alternate_notes(figures: AlternateReferences) -> tuple[str, ...]:
    if not figures.rescored:
        return (f"no answer is re-scored against the alternate references yet: {RESCORE}",)
    notes = [
        f"base condition; {_VIEW} reference); each figure is the unweighted mean over the "
        "configuration's budgets (Budgets: how many) of the cell's fixed IoU2",
        "G_N: the official phase-0 target; Part: the unreduced selected part; Union: the union "
        "of all the referent's parts (both rasterised); Continuous: G_N under the "
        "continuous-area backend",
        "Largest shift: the alternate reference whose mean is furthest from G_N's, signed",
        "ordering row: configurations by G_N's mean, highest first; under each alternate, "
        "'same' or the pairs it puts the other way round (scoring.inversions)",
        *_alternate_verdicts(figures),
        *_unscored_notes(figures.unscored),
    ]
    notes += [f"left out: {c} (a budget not fully re-scored)" for c in figures.left_out]
    if any(not m.complete for m in figures.configurations):
        notes.append(_INCOMPLETE_NOTE)
    return tuple(notes)


def _alternate_verdicts(figures: AlternateReferences) -> list[str]:
    shift = figures.largest_shift
    if shift is None:
        return ["no configuration is fully re-scored under every reference"]
    label = REFERENCE_LABELS[shift.reference]
    out = [f"largest shift: {abs(shift.delta):.1f} points ({shift.configuration}, {label})"]
    if figures.ordering_holds is not None:
        changed = [f"{REFERENCE_LABELS[r]} ({_swaps(s)})" for r, s in figures.swaps.items() if s]
        out.append(
            f"ordering: changes under {'; '.join(changed)}"
            if changed
            else "ordering: the same under every reference"
        )
    return out


# -- shared wording ------------------------------------------------------------------------

_INCOMPLETE_NOTE = (
    f"{INCOMPLETE} incomplete: the cell has unsettled questions (Table 1's note says why); "
    "its figures cover the settled questions only"
)


def _unscored_notes(unscored: Sequence[Unscored]) -> list[str]:
    """Which cells are left out and what to run, word for word."""
    lacking = [u for u in unscored if u.answers]
    empty = [u for u in unscored if not u.answers]
    notes = []
    if lacking:
        which = ", ".join(f"{_cell(u.cell)} ({u.answers} answer(s))" for u in lacking)
        notes.append(f"left out, not fully re-scored: {which}; {RESCORE}")
    if empty:
        notes.append(
            f"left out, no settled question yet: {', '.join(_cell(u.cell) for u in empty)}"
        )
    return notes


def _cell(cell: Cell) -> str:
    return f"{cell.configuration} N={cell.budget}"


def _budgets(budgets: Iterable[int]) -> str:
    return ", ".join(f"N={n}" for n in budgets)


def _phases(phases: Iterable[int]) -> str:
    ks = list(phases)
    return ("phase " if len(ks) == 1 else "phases ") + ", ".join(map(str, ks))


def _swaps(swaps: Swaps) -> str:
    """Each inverted pair as the new order, ``b > a``."""
    return "; ".join(f"{b} > {a}" for a, b in swaps)
