"""The phase audit and the alternate references on hand-made data, every figure worked by hand."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping

import pytest

from runner.reports import (
    ALTERNATE_REFERENCES,
    PHASE_REFERENCES,
    Cell,
    ReportData,
    ReportTable,
    Rescored,
    ViewScores,
    alternate_reference_figures,
    alternate_references_table,
    phase_audit_figures,
    phase_audit_table,
    phase_claims_table,
    render,
)
from runner.reports._render import csv_columns
from scoring import PolygonScore

RESCORE = "`groundbench rescore STORE`"
Key = tuple[str, int]  # (configuration, N) of a base cell
Values = tuple[float | None, ...]  # per question q0, q1, …; None: unparseable / no row


def _data(
    answers: Mapping[Key, Values],
    overrides: Mapping[tuple[str, str, int], Values] | None = None,
    drop: Iterable[tuple[str, str, int, str]] = (),
    grid: Mapping[Key, int] | None = None,
) -> ReportData:
    """Headline IoU2 answers per base cell; every reference re-scores them to the same IoU
    unless ``overrides[(reference, configuration, N)]`` says otherwise (a value given for an
    unparseable question is a stray row the tables must ignore); ``drop`` removes rows."""
    headline = ViewScores("iou2")
    for (configuration, n), values in answers.items():
        cell = Cell(configuration, "base", n)
        headline.polygons[cell] = {
            f"q{i}": None if v is None else PolygonScore(parseable=True, iou=v)
            for i, v in enumerate(values)
        }
        headline.grid[cell] = (grid or {}).get((configuration, n), len(values))
    ious: dict[str, dict[Cell, dict[str, float]]] = {}
    for reference in (*PHASE_REFERENCES, *ALTERNATE_REFERENCES):
        for (configuration, n), values in answers.items():
            given = (overrides or {}).get((reference, configuration, n), values)
            row = {f"q{i}": v for i, v in enumerate(given) if v is not None}
            ious.setdefault(reference, {})[Cell(configuration, "base", n)] = row
    for reference, configuration, n, qid in drop:
        del ious[reference][Cell(configuration, "base", n)][qid]
    return ReportData(headline, ViewScores("best_effort"), {}, {}, Rescored(ious))


# -- the phase audit ---------------------------------------------------------------------------

PHASE_ANSWERS: dict[Key, Values] = {
    ("alpha", 8): (0.6, 0.3, None),  # (60 + 30 + 0) / 3 = 30.0: q2 unparseable, counts 0
    ("alpha", 16): (0.9, 0.6, 0.3),  # 60.0
    ("alpha", 64): (0.3, 0.3, 0.3),  # 30.0
    ("beta", 8): (0.3, 0.3, 0.0),  # 20.0
    ("beta", 16): (0.6, 0.3, 0.0),  # 30.0
    ("beta", 64): (0.0, 0.3, 0.3),  # 20.0
    ("gamma", 8): (0.0, 0.3, 0.0),  # 10.0; gamma has one budget only
}
# Phase 3 moves alpha N=8 to (60 + 60 + 0) / 3 = 40.0 (q2's stray 0.9 must count 0): the
# ordering at N=8 stays alpha > beta > gamma and alpha still peaks at 16.
STABLE = {("phase3", "alpha", 8): (0.6, 0.6, 0.9)}
# Phase 5 also lifts beta N=64 to 60.0, above alpha's 30.0: the ordering at N=64 swaps, and
# beta's phase-5 curve 20 / 30 / 60 peaks at 64, so its reversal fails there.
SWAPPED = {**STABLE, ("phase5", "beta", 64): (0.6, 0.6, 0.6)}


def test_the_phase_audit_rows_are_the_fixed_iou_per_phase() -> None:
    t = phase_audit_table(_data(PHASE_ANSWERS, SWAPPED))
    rows = {(r[0], r[1]): r for r in t.rows}
    assert len(t.rows) == 7 and t.columns[3] == "Phase 0" and t.columns[-1] == "Spread"
    assert rows["alpha", "8"][2:] == ("3", "30.0", "30.0", "30.0", "40.0", *["30.0"] * 4, "10.0")
    assert rows["alpha", "16"][3:] == (*["60.0"] * 8, "0.0")
    assert rows["beta", "64"][3:] == (*["20.0"] * 5, "60.0", "20.0", "20.0", "40.0")
    assert rows["gamma", "8"][3:] == (*["10.0"] * 8, "0.0")
    assert any("fixed denominator" in n and "IoU2" in n for n in t.notes)


def test_the_ordering_and_the_reversal_hold_in_all_eight_phases() -> None:
    audit = phase_audit_figures(_data(PHASE_ANSWERS, STABLE))
    assert [o.budget for o in audit.orderings] == [8, 16, 64]
    assert audit.orderings[0].orderings == (("alpha", "beta", "gamma"),) * 8
    assert audit.ordering_holds is True and audit.reversal_holds is True
    alpha, beta = audit.reversals
    assert [(p.budget, round(p.drop, 9)) for p in alpha.peaks] == [(16, 30.0)] * 8
    assert [(p.budget, round(p.drop, 9)) for p in beta.peaks] == [(16, 10.0)] * 8
    assert audit.left_out == (("gamma", "N=8 only: a reversal needs two budgets or more"),)
    t = phase_claims_table(_data(PHASE_ANSWERS, STABLE))
    assert t.rows[0] == ("ordering", "N=8", "alpha > beta > gamma", *["same"] * 7, "same in all 8")
    assert t.rows[3] == ("reversal", "alpha", *["16 (30.0)"] * 8, "holds in all 8")
    assert "ordering: the same in all eight phases at every N" in t.notes
    assert "reversal: holds in all eight phases for every configuration" in t.notes
    assert any("no reversal verdict for gamma: N=8 only" in n for n in t.notes)


def test_one_phase_swapping_two_configurations_and_breaking_a_reversal_is_named() -> None:
    audit = phase_audit_figures(_data(PHASE_ANSWERS, SWAPPED))
    n64 = audit.orderings[2]
    assert n64.budget == 64 and n64.changed_phases == (5,)
    assert n64.orderings[5] == ("beta", "alpha") and n64.swaps[5] == (("alpha", "beta"),)
    assert audit.ordering_holds is False and audit.reversal_holds is False
    beta = audit.reversals[1]
    assert beta.failing_phases == (5,) and beta.peaks[5].budget == 64 and beta.peaks[5].drop == 0
    t = phase_claims_table(_data(PHASE_ANSWERS, SWAPPED))
    assert t.rows[2] == ("ordering", "N=64", "alpha > beta", *["same"] * 4, "beta > alpha",
                         "same", "same", "changes in phase 5")  # fmt: skip
    assert t.rows[4][-4:] == ("64 (0.0)", "16 (10.0)", "16 (10.0)", "fails in phase 5")
    assert "ordering: changes at N=64 in phase 5" in t.notes
    assert "reversal: fails for beta in phase 5" in t.notes


def test_a_cell_with_missing_rescored_rows_is_left_out_by_name() -> None:
    data = _data(PHASE_ANSWERS, STABLE, drop=[("phase4", "alpha", 16, "q1")])
    audit = phase_audit_figures(data)
    assert [(u.cell, u.answers) for u in audit.unscored] == [(Cell("alpha", "base", 16), 1)]
    assert Cell("alpha", "base", 16) not in [c.cell for c in audit.cells]
    assert [o.budget for o in audit.orderings] == [8, 64]  # N=16 has beta alone now
    assert [r.configuration for r in audit.reversals] == ["beta"]
    assert ("alpha", "N=16 not re-scored") in audit.left_out
    notes = phase_audit_table(data).notes
    assert f"left out, not fully re-scored: alpha N=16 (1 answer(s)); run {RESCORE}" in notes
    assert not any("reversal verdict" in n for n in notes)  # the claims table says that
    assert "no reversal verdict for alpha: N=16 not re-scored" in phase_claims_table(data).notes


def test_a_phase_zero_that_disagrees_with_the_stored_iou_is_flagged() -> None:
    data = _data(PHASE_ANSWERS, {("phase0", "beta", 8): (0.3, 0.3, 0.3)})  # 30.0 against 20.0
    assert phase_audit_figures(data).official_gap == pytest.approx(10.0)
    assert any(
        "differs from the stored IoU2 by up to 10.00" in n for n in phase_audit_table(data).notes
    )
    assert not any("differs" in n for n in phase_audit_table(_data(PHASE_ANSWERS)).notes)


def test_an_incomplete_cell_is_marked() -> None:
    t = phase_audit_table(_data(PHASE_ANSWERS, grid={("beta", 8): 4}))
    (row,) = [r for r in t.rows if r[:2] == ("beta", "8")]
    assert row[2] == "3/4*" and row[3] == "20.0*"
    assert any(n.startswith("* incomplete") for n in t.notes)


# -- the alternate references ----------------------------------------------------------------

ALT_ANSWERS: dict[Key, Values] = {
    ("alpha", 8): (0.5, 0.7, None),  # G_N 40.0
    ("alpha", 64): (0.4, 0.2, 0.3),  # G_N 30.0; alpha's mean (40 + 30) / 2 = 35.0
    ("beta", 8): (0.3, 0.3, 0.3),  # G_N 30.0
    ("beta", 64): (0.3, 0.0, 0.0),  # G_N 10.0; beta's mean 20.0
}
ALT = {
    ("part", "alpha", 8): (0.5, 0.4, None),  # 30.0, with 64's 30.0: mean 30.0, shift -5.0
    ("union", "alpha", 8): (0.6, 0.9, None),  # 50.0
    ("union", "alpha", 64): (0.4, 0.2, 0.36),  # 32.0: mean 41.0, shift +6.0 (alpha's largest)
    ("continuous", "alpha", 8): (0.53, 0.7, None),  # 41.0: mean 35.5, shift +0.5
}  # beta: every alternate equals G_N, shifts 0.0
# Union lifts beta N=8 to 90.0: beta's union mean (90 + 10) / 2 = 50.0 passes alpha's 41.0.
ALT_SWAPPED = {**ALT, ("union", "beta", 8): (0.9, 0.9, 0.9)}


def test_five_budget_means_and_the_largest_shift() -> None:
    figures = alternate_reference_figures(_data(ALT_ANSWERS, ALT))
    alpha, beta = figures.configurations
    assert alpha.budgets == (8, 64)
    assert dict(alpha.means) == pytest.approx(
        {"phase0": 35.0, "part": 30.0, "union": 41.0, "continuous": 35.5}
    )
    assert alpha.largest_shift.reference == "union"
    assert alpha.largest_shift.delta == pytest.approx(6.0)
    assert beta.largest_shift.delta == 0.0 and beta.largest_shift.reference == "part"  # first tie
    shift = figures.largest_shift
    assert shift is not None and (shift.configuration, shift.reference) == ("alpha", "union")
    assert figures.ordering_holds is True
    t = alternate_references_table(_data(ALT_ANSWERS, ALT))
    assert t.columns == ("Configuration", "Budgets", "G_N", "Part", "Union", "Continuous",
                         "Largest shift", "From")  # fmt: skip
    assert t.rows[0] == ("alpha", "2", "35.0", "30.0", "41.0", "35.5", "+6.0", "Union")
    assert t.rows[1] == ("beta", "2", "20.0", "20.0", "20.0", "20.0", "+0.0", "Part")
    assert t.rows[2] == ("ordering", "", "alpha > beta", "same", "same", "same", "", "")
    assert "largest shift: 6.0 points (alpha, Union)" in t.notes
    assert "ordering: the same under every reference" in t.notes


def test_an_alternate_reference_that_reorders_configurations_is_named() -> None:
    figures = alternate_reference_figures(_data(ALT_ANSWERS, ALT_SWAPPED))
    assert figures.orderings["union"] == ("beta", "alpha")
    assert figures.swaps == {"part": (), "union": (("alpha", "beta"),), "continuous": ()}
    assert figures.ordering_holds is False
    shift = figures.largest_shift
    assert shift is not None and (shift.configuration, shift.reference) == ("beta", "union")
    assert shift.delta == pytest.approx(30.0)
    t = alternate_references_table(_data(ALT_ANSWERS, ALT_SWAPPED))
    assert t.rows[2][3:6] == ("same", "beta > alpha", "same")
    assert "ordering: changes under Union (beta > alpha)" in t.notes
    assert "largest shift: 30.0 points (beta, Union)" in t.notes


def test_a_configuration_with_a_missing_row_is_left_out_of_the_means_only() -> None:
    data = _data(ALT_ANSWERS, ALT, drop=[("continuous", "beta", 64, "q0")])
    figures = alternate_reference_figures(data)
    assert [m.configuration for m in figures.configurations] == ["alpha"]
    assert figures.left_out == ("beta",) and figures.ordering_holds is None
    t = alternate_references_table(data)
    assert [r[0] for r in t.rows] == ["alpha"]  # no ordering row with one configuration
    assert f"left out, not fully re-scored: beta N=64 (1 answer(s)); run {RESCORE}" in t.notes
    # The phase audit reads no continuous row: beta N=64 stays in it.
    assert Cell("beta", "base", 64) in [c.cell for c in phase_audit_figures(data).cells]


# -- nothing re-scored; renderings -------------------------------------------------------------


def _unscored() -> ReportData:
    data = _data(PHASE_ANSWERS)
    return ReportData(data.headline, data.best_effort, {}, {})


@pytest.mark.parametrize(
    "build", [phase_audit_table, phase_claims_table, alternate_references_table]
)
def test_nothing_rescored_is_no_rows_and_one_note(
    build: Callable[[ReportData], ReportTable],
) -> None:
    t = build(_unscored())
    assert t.rows == ()
    (note,) = t.notes
    assert note.startswith("no answer is re-scored") and note.endswith(RESCORE)


def test_nothing_rescored_gives_no_verdict() -> None:
    audit = phase_audit_figures(_unscored())
    assert not audit.rescored and audit.ordering_holds is None and audit.reversal_holds is None
    figures = alternate_reference_figures(_unscored())
    assert not figures.rescored and figures.largest_shift is None
    assert figures.ordering_holds is None


@pytest.mark.parametrize(
    "table",
    [
        phase_audit_table(_data(PHASE_ANSWERS, SWAPPED)),
        phase_claims_table(_data(PHASE_ANSWERS, SWAPPED)),
        alternate_references_table(_data(ALT_ANSWERS, ALT_SWAPPED)),
    ],
    ids=lambda t: t.name,
)
def test_the_tables_render_as_markdown_csv_and_latex(table: ReportTable) -> None:
    md = render(table, "markdown")
    assert md.splitlines()[2].count("|") == len(table.columns) + 1
    parsed = list(csv.reader(io.StringIO(render(table, "csv"))))
    names = [c.name for c in csv_columns(table)]  # figures taken apart, one value a column
    assert parsed[0] == names and len(parsed) == len(table.rows) + 1
    assert all(len(r) == len(names) for r in parsed)
    tex = render(table, "latex")
    assert tex.count(r" \\") == len(table.rows) + 1 and "_" not in tex.replace(r"\_", "")
