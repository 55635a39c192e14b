"""The §4 findings as verdicts, on hand-made data whose every figure is computed by hand.

Per-question differences are made constant wherever a verdict is checked, so that every
bootstrap resample has the same mean and the interval is exactly ``[Δ, Δ]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from conditions import BOX
from runner.reports import (
    ALTERNATE_REFERENCES,
    PHASE_REFERENCES,
    Cell,
    ReportData,
    Rescored,
    ViewScores,
)
from runner.reports._findings import CLAIMS, PAPER_ORDER, findings, findings_table
from scoring import BoxScore, PolygonScore

QIDS = ("q0", "q1", "q2")
Level = Mapping[str, float | None]  # qid → IoU (None: no parseable answer)


def polygon(iou: float, legal: bool = True) -> PolygonScore:
    return PolygonScore(parseable=True, iou=iou, iou_part=iou, iou_union=iou, iou_cont=iou,
                        legal=legal, legal_iou=iou if legal else 0.0, sel=True)  # fmt: skip


def view(cells: Mapping[Cell, Level], legal: Mapping[Cell, set[str]] | None = None) -> ViewScores:
    out = ViewScores("iou2")
    for cell, level in cells.items():
        out.grid[cell] = len(QIDS)
        ok = (legal or {}).get(cell, set(QIDS))
        out.polygons[cell] = {
            q: None if v is None else polygon(v, q in ok) for q, v in level.items()
        }
    return out


def data_of(
    v: ViewScores,
    shifts: Mapping[tuple[str, Cell], float] | None = None,
    part_vertices: Mapping[str, int] | None = None,
) -> ReportData:
    """``v`` with every parseable answer re-scored: each phase gives the headline IoU and each
    alternate reference 0.005 more, plus ``shifts[(reference, cell)]``."""
    ious: dict[str, dict[Cell, dict[str, float]]] = {}
    for reference in (*PHASE_REFERENCES, *ALTERNATE_REFERENCES):
        base = 0.005 if reference in ALTERNATE_REFERENCES else 0.0
        ious[reference] = {
            cell: {
                q: s.iou + base + (shifts or {}).get((reference, cell), 0.0)
                for q, s in scores.items()
                if s is not None
            }
            for cell, scores in v.polygons.items()
        }
    rescored = Rescored(ious, {})
    return ReportData(
        headline=v,
        best_effort=v,
        questions={},
        fidelity={},
        rescored=rescored,
        part_vertices=dict(part_vertices or {}),
    )


def flat(x: float) -> Level:
    return dict.fromkeys(QIDS, x)


def raised(level: Level, by: float) -> Level:
    return {q: None if v is None else v + by for q, v in level.items()}


def paper_like() -> dict[Cell, Level]:
    """The four paper configurations at N = 8, 16, 32, 64, levels 0.1 apart in the paper's
    order; each peaks at 16 and falls by 0.2 to 64. Qwen-max runs the condition grid."""
    cells: dict[Cell, Level] = {}
    shape = {8: 0.0, 16: 0.1, 32: 0.05, 64: -0.1}
    for rank, name in enumerate(PAPER_ORDER):
        for n, bump in shape.items():
            cells[Cell(name, "base", n)] = flat(0.6 - 0.1 * rank + bump)
    qwen = {n: 0.5 + bump for n, bump in shape.items()}
    # Losses against base: no-image 0.3, half-res 0.1, greyscale 0.05; spatial-wrong 0.2,
    # colour-wrong 0.1, both 0.25 (< 0.3); truthful cues +0.0; thinking-off 0.15.
    for condition, delta in (("thinking-off", -0.15), ("no-image", -0.3), ("half-res", -0.1),
                             ("greyscale", -0.05), ("cue-spatial-wrong", -0.2),
                             ("cue-colour-wrong", -0.1), ("cue-both-wrong", -0.25),
                             ("cue-spatial-true", 0.0), ("cue-colour-true", 0.0)):  # fmt: skip
        for n, level in qwen.items():
            cells[Cell("qwen-max", condition, n)] = flat(level + delta)
    return cells


NO_LEGAL_AT_64 = {Cell(name, "base", 64): set[str]() for name in PAPER_ORDER}


def test_every_claim_holds_on_a_store_built_to_the_paper() -> None:
    parts = {"q0": 20, "q1": 40, "q2": 12}  # q0 and q2: G_64 only subdivides G_32
    found = findings(data_of(view(paper_like(), NO_LEGAL_AT_64), part_vertices=parts))
    verdicts = {f.claim: f.verdict for f in found}
    # No box cells: the two box claims cannot be tested; every other claim holds.
    assert {c.split(":")[0] for c, v in verdicts.items() if v != "holds"} == {
        "F1 gap",
        "F1 control",
    }
    assert {v for c, v in verdicts.items() if c.startswith(("F1 gap", "F1 control"))} == {
        "not testable"
    }
    collapse = next(f for f in found if f.claim.startswith("F2 collapse"))
    # Every answer legal at 32, none at 64: −100 points on every question.
    assert collapse.here.startswith("doubao: legal % at 64 0.0, 64 − 32 -100.0 [-100.0, -100.0]")
    ordering = next(f for f in found if f.claim.startswith("F1 ordering"))
    # Adjacent pairs 0.1 apart at every (budget, question): Δ = +10.0, interval [10, 10].
    assert ordering.here == (
        "gemini-high − qwen-max +10.0 [+10.0, +10.0]; qwen-max − doubao +10.0 [+10.0, +10.0]; "
        "doubao − kimi +10.0 [+10.0, +10.0]"
    )
    peak = next(f for f in found if f.claim.startswith("F2 non-monotone"))
    assert peak.here.startswith("doubao: peak N=16, −64 +20.0 [+20.0, +20.0]")
    evidence = next(f for f in found if f.claim.startswith("F3 evidence"))
    # half-res − no-image = 0.3 − 0.1 = +20 points; greyscale − half-res = +5 points.
    assert evidence.here == (
        "qwen-max: half-res − no-image +20.0 [+20.0, +20.0], greyscale − half-res +5.0 [+5.0, +5.0]"
    )
    additive = next(f for f in found if f.claim.startswith("F4 wrong cues"))
    # (both − base) − (spatial − base) − (colour − base) = −0.25 + 0.2 + 0.1 = +5 points.
    assert additive.here == "qwen-max: +5.0 [+5.0, +5.0]"
    phases = next(f for f in found if f.claim.startswith("F2 phases"))
    assert phases.here == "ordering same in all 8; reversal in all 8; largest spread 0.0"
    references = next(f for f in found if f.claim.startswith("§4.3"))
    # Every alternate reference 0.005 above G_N on every answer: +0.5 points, exactly.
    assert references.here.startswith("largest shift doubao, part +0.5 [+0.5, +0.5];")
    subdivision = next(f for f in found if f.claim.startswith("F2 subdivision"))
    # 0.65 at N = 32, 0.5 at 64 for gemini-high (and 0.1 lower for each next one): −15 points.
    assert subdivision.here.startswith("doubao: 64 − 32 -15.0 [-15.0, -15.0] (2 q);")
    ranks = next(f for f in found if f.claim.startswith("Rank stability"))
    # Acc@.5: gemini-high and qwen-max 100 at every N (qwen-max at 64: 0.5 ≥ .5), doubao
    # 100/100/100/0, kimi 0/100/0/0 — ties, but no pair strictly reversed.
    assert ranks.here == "Acc@.5: 0 inversion(s), 0 reliable; IoU: 0 inversion(s)"
    reasoning = next(f for f in found if f.claim.startswith("F3 reasoning"))
    assert reasoning.here == "qwen-max: " + ", ".join(
        f"N={n} +15.0 [+15.0, +15.0]" for n in (8, 16, 32, 64)
    )


def test_a_claim_that_fails_names_what_fails() -> None:
    cells = paper_like()
    for n in (8, 16, 32, 64):  # kimi overtakes doubao by 0.05 at every budget
        cells[Cell("kimi", "base", n)] = raised(cells[Cell("kimi", "base", n)], 0.15)
        # A truthful colour cue gains 0.1.
        cells[Cell("qwen-max", "cue-colour-true", n)] = raised(
            cells[Cell("qwen-max", "base", n)], 0.1
        )
    # Phase 5 costs gemini-high 0.3 at N = 64 (0.5 → 0.2, below qwen-max's 0.4); the union
    # of parts lifts kimi by 0.02 more at every budget: a shift of 0.5 + 2.0 = 2.5 points.
    shifts = {("phase5", Cell("gemini-high", "base", 64)): -0.3}
    shifts |= {("union", Cell("kimi", "base", n)): 0.02 for n in (8, 16, 32, 64)}
    found = {f.claim.split(":")[0]: f for f in findings(data_of(view(cells), shifts))}
    phases = found["F2 phases"]
    assert phases.verdict == "does not hold"
    assert phases.here.startswith("ordering changes at N=64 in phase 5; reversal in all 8;")
    references = found["§4.3 references"]
    assert references.verdict == "does not hold"
    assert references.here == "largest shift kimi, union +2.5 [+2.5, +2.5]; ordering unchanged"
    assert references.test.endswith("fails: kimi")
    # All answers legal at 64 as at 32: no collapse, Δ 0 on every question.
    assert found["F2 collapse"].verdict == "does not hold"
    assert "kimi: legal % at 64 100.0, 64 − 32 +0.0 [+0.0, +0.0]" in found["F2 collapse"].here
    ordering = found["F1 ordering"]
    assert ordering.verdict == "does not hold"
    assert "doubao − kimi -5.0 [-5.0, -5.0]" in ordering.here
    assert ordering.test.endswith("fails: doubao > kimi")
    truthful = found["F4 truthful cues"]
    assert truthful.verdict == "does not hold"
    assert truthful.test.endswith("fails: qwen-max cue-colour-true")


def test_a_reliable_acc_inversion_breaks_rank_stability() -> None:
    # a: 0.9, 0.9, 0.3 and b: 0.3, 0.6, 0.6 at N = 8, 16, 64. Acc@.5 means tie at 66.7, so the
    # reference is a > b (name order); at N = 64 b is right on all three questions and a on
    # none: Δ(b − a) = +100 [+100, +100]. Fixed IoU: a 70 > b 50, inverted at 64 too.
    levels = {"a": (0.9, 0.9, 0.3), "b": (0.3, 0.6, 0.6)}
    cells = {Cell(c, "base", n): flat(x) for c, xs in levels.items()
             for n, x in zip((8, 16, 64), xs, strict=True)}  # fmt: skip
    found = {f.claim.split(":")[0]: f for f in findings(data_of(view(cells)))}
    ranks = found["Rank stability"]
    assert ranks.verdict == "does not hold"
    assert (
        ranks.here == "Acc@.5: 1 inversion(s), 1 reliable; IoU: 1 inversion(s); b above a at N=64"
    )
    assert ranks.test.endswith("fails: b over a at N=64 +100.0 [+100.0, +100.0]")


def test_missing_or_running_cells_make_a_claim_untestable_and_are_named() -> None:
    cells = paper_like()
    for n in (8, 16, 32, 64):
        del cells[Cell("kimi", "base", n)]
    v = view(cells)
    del v.polygons[Cell("qwen-max", "greyscale", 64)]["q2"]  # still running
    found = {f.claim.split(":")[0]: f for f in findings(data_of(v))}
    assert found["F1 ordering"].verdict == "not testable"
    assert found["F2 phases"].verdict == "holds"  # three configurations are enough
    assert found["F1 ordering"].test == "needs kimi/base"
    evidence = found["F3 evidence ≫ resolution ≫ colour"]
    assert evidence.verdict == "not testable"
    assert evidence.test == "needs qwen-max/greyscale/N=64 (incomplete)"


def test_the_box_control_and_the_gap() -> None:
    # gemini-high: polygons 0.5 at N = 8 and 64; its box answers 0.9 (IoU with the COCO box),
    # each drawn as an N-gon scoring 0.5 (q0, q1) and 0.45 (q2) against G_N.
    cells = {Cell("gemini-high", "base", n): flat(0.5) for n in (8, 64)}
    v = view(cells)
    box = Cell("gemini-high", "base", BOX)
    v.grid[box] = 3
    controls = {"q0": 0.5, "q1": 0.5, "q2": 0.45}
    v.boxes[box] = {
        q: BoxScore(True, 0.9, {n: polygon(c) for n in (8, 64)}) for q, c in controls.items()
    }
    found = {f.claim.split(":")[0]: f for f in findings(data_of(v))}
    gap = found["F1 gap"]
    assert (gap.verdict, gap.here) == ("holds", "gemini-high: box − polygon +40.0 [+40.0, +40.0]")
    control = found["F1 control"]
    # direct − control per (budget, question): 0, 0, +5 at both budgets: mean +1.7. A
    # resample of the six keys misses both +5s with chance (4/6)^6 = 8.8% > 2.5%, so the
    # interval starts at 0 and holds it: no reliable difference.
    assert control.here.startswith("gemini-high: direct − control +1.7 [+0.0, ")
    assert control.verdict == "holds"


def test_the_table_has_one_row_per_claim_and_renders() -> None:
    table = findings_table(data_of(view(paper_like())))
    assert table.columns == ("Claim", "Paper", "This store [95% CI]", "Verdict", "Test")
    assert len(table.rows) == len(CLAIMS) == 14


def test_claims_on_references_wait_for_the_rescore() -> None:
    v = view(paper_like(), NO_LEGAL_AT_64)
    bare = ReportData(headline=v, best_effort=v, questions={}, fidelity={})  # not re-scored
    found = {f.claim.split(":")[0]: f for f in findings(bare)}
    for claim in ("F2 phases", "§4.3 references"):
        assert found[claim].verdict == "not testable"
        assert found[claim].test == "needs `groundbench rescore STORE`"
    assert found["F1 ordering"].verdict == "holds"  # the headline claims need no rescore


def test_audits_over_running_or_unscored_cells_are_not_testable() -> None:
    cells = paper_like()
    v = view(cells, NO_LEGAL_AT_64)
    data = data_of(v)
    del data.rescored.ious["phase3"][Cell("kimi", "base", 16)]["q1"]  # one answer not re-scored
    found = {f.claim.split(":")[0]: f for f in findings(data)}
    assert found["F2 phases"].verdict == "not testable"
    assert found["F2 phases"].test == "needs kimi/base/N=16 (1 answers not re-scored)"
    assert found["§4.3 references"].verdict == "holds"  # it reads no phase but phase 0
    del v.polygons[Cell("doubao", "base", 8)]["q0"]  # a base question still running
    found = {f.claim.split(":")[0]: f for f in findings(data_of(v))}
    for claim in ("F2 phases", "§4.3 references", "Rank stability", "F1 ordering"):
        assert found[claim].verdict == "not testable", claim
        assert "doubao" in found[claim].test, claim


def test_a_curve_highest_at_64_has_no_reversal() -> None:
    # c rises to N = 64 (0.3, 0.4, 0.6); d peaks at 16 (0.5, 0.7, 0.4): Δ(16 − 64) = +30.
    levels = {"c": (0.3, 0.4, 0.6), "d": (0.5, 0.7, 0.4)}
    cells = {Cell(c, "base", n): flat(x) for c, xs in levels.items()
             for n, x in zip((8, 16, 64), xs, strict=True)}  # fmt: skip
    found = {f.claim.split(":")[0]: f for f in findings(data_of(view(cells)))}
    peak = found["F2 non-monotone"]
    assert peak.here == "c: peak N=64; d: peak N=16, −64 +30.0 [+30.0, +30.0]"
    assert (peak.verdict, peak.test.split("; ")[-1]) == ("does not hold", "fails: c")
