"""Calibrates the simulator's ``paper`` profile without a run: the pure model, scored in process.

Builds a synthetic cohort (the demo's 300 questions, or the paper's 1,500), answers every request
of the paper's grid by calling the profile's model directly (no HTTP, no Ray) with the attempts a
run would make (a parse failure triggers the next, up to ``IoU2``'s three and Gemini's
best-effort fourth), scores each answer as the run's scorer does (and the base cells' locked
answers against the audits' references, as ``groundbench rescore`` does), builds the
:class:`ReportData` a report reads, and prints

- a calibration table: per configuration, condition and budget, fixed and parseable-only IoU,
  parse %, legal %, legal IoU, Acc@.5 and Sel, in points;
- each effect issue 40 asks the profile to show, as the paired contrast (95% bootstrap) the
  report judges it by, with whether it holds;
- the paper's calibrated numbers beside this cohort's;
- with ``--findings``, the report's verdicts (``runner.reports.findings``) on these answers.

The answers are a run's (the same luck, the same scoring): on the demo's cohort its tables
match ``groundbench demo``'s store. Run (about 1 min for the demo's cohort, under 5 min for the
paper's, on 2 cores):

    .venv/bin/python -m benchmarks.paper_profile [--questions 300|1500] [--profile paper]
        [--findings]
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from conditions import (
    BOX,
    BOX_CONDITIONS,
    PAPER_CONFIGURATIONS,
    Cohort,
    CohortSpec,
    Configuration,
    DataRoot,
    SynthSpec,
    build_cohort,
    condition_named,
    generate_synthetic,
)
from runner import demo
from runner.reports import findings
from runner.reports._data import Cell, Question, ReportData, Rescored, ViewScores
from runner.simulator import PROFILES, Seen, profile_answer
from runner.simulator._model import Truth
from scoring import (
    BUDGETS,
    REFERENCES,
    VIEW_ATTEMPTS,
    BoxScore,
    Contrast,
    PolygonScore,
    Reference,
    Referent,
    View,
    locked_attempt,
    paired_contrast,
    score_box,
    score_polygon,
    score_references,
    summarise_cell,
    unpaired_contrast,
)

SEED = 0  # the demo's and the paper grid's simulator seed
HEADLINE_ATTEMPTS = VIEW_ATTEMPTS["iou2"]  # the attempts IoU2 may lock
VIEWS: tuple[View, ...] = ("iou0", "iou1", "iou2", "best_effort")


# -- the cohort ---------------------------------------------------------------------------------


def cohort_for(questions: int, work: Path) -> Path:
    """The demo's cohort (300 questions: 600 images, 100 per source) or the paper's (1,500),
    pickled under ``work`` (made once)."""
    path = work / f"cohort-{questions}.pkl"
    if path.exists():
        return path
    per_source = questions // 3
    images = demo.IMAGES if per_source <= demo.PER_SOURCE else SynthSpec().images
    data = work / f"data-{images}"
    if not (data / "refcoco").is_dir():
        generate_synthetic(data, SynthSpec(seed=0, images=images))
    matched = per_source if per_source <= demo.PER_SOURCE else CohortSpec().matched
    cohort = build_cohort(DataRoot.at(data), CohortSpec(per_source=per_source, matched=matched))
    path.write_bytes(pickle.dumps(cohort))
    return path


# -- answering and scoring ------------------------------------------------------------------------


def seen_for(configuration: Configuration, condition: str, qid: str, cohort: Cohort,
             budget: int) -> tuple[Seen, int]:  # fmt: skip
    """What the simulator reads from this request (as its server reads it), and the replicate."""
    c = condition_named(condition)
    q = cohort.question(qid)
    decoding = c.decoding(configuration.decoding)
    spatial = colour = None
    for cue in c.cues:
        kind, truth = cue.rsplit("-", 1)
        value: Truth = "true" if truth == "true" else "wrong"
        spatial, colour = (value, colour) if kind == "spatial" else (spatial, value)
    seen = Seen(
        qid=None if c.image == "none" else qid,
        expression=q.expression,
        budget=budget,
        variant=c.image,
        spatial=spatial,
        colour=colour,
        thinking=decoding.thinking.mode != "off",
        temperature=decoding.temperature,
    )
    return seen, c.replicate


_COHORT: Cohort | None = None


def _load(path: Path) -> None:
    global _COHORT
    _COHORT = pickle.loads(path.read_bytes())


@dataclass(frozen=True)
class CellAnswers:
    """One cell's answers: every attempt's score per question (a polygon or a box cell's),
    and for a base polygon cell the answer ``IoU2`` locks re-scored against each reference
    (``groundbench rescore``)."""

    cell: Cell
    polygons: dict[str, list[PolygonScore]] = field(default_factory=dict)
    boxes: dict[str, list[BoxScore]] = field(default_factory=dict)
    references: dict[str, dict[str, float]] = field(default_factory=dict)


def _answer_cell(job: tuple[str, str, str, int]) -> CellAnswers:
    """Every attempt of one cell's questions, scored: the attempts a run makes (the next only
    after a parse failure; a fourth for a best-effort configuration)."""
    profile_name, name, condition, budget = job
    assert _COHORT is not None
    cohort, profile = _COHORT, PROFILES[profile_name]  # type: ignore[index]
    configuration = next(c for c in PAPER_CONFIGURATIONS if c.name == name)
    tracing = profile.tracing(configuration.model)
    assert tracing is not None, f"{profile_name} has no tracing for {configuration.model}"
    attempts = 4 if configuration.best_effort else 3
    subset = condition_named(condition).subset
    out = CellAnswers(Cell(name, condition, budget))
    for q in cohort.questions:
        if subset == "matched" and not q.matched:
            continue
        seen, replicate = seen_for(configuration, condition, q.qid, cohort, budget)
        texts = (
            profile_answer(seen, cohort, profile, tracing, SEED, attempt, replicate).text
            for attempt in range(attempts)
        )
        if budget == BOX:
            out.boxes[q.qid] = _box_attempts(texts, cohort.referent(q.qid))
            continue
        scored = _polygon_attempts(texts, cohort.referent(q.qid).reference(budget))
        out.polygons[q.qid] = [s for s, _ in scored]
        locked = next((t for s, t in scored[:HEADLINE_ATTEMPTS] if s.parseable), None)
        if condition == "base" and locked is not None:  # the audits' rows (groundbench rescore)
            rescored = score_references(locked, cohort.referent(q.qid), budget)
            out.references[q.qid] = dict(rescored or {})  # a plain dict pickles
    return out


def _polygon_attempts(texts: Iterable[str], reference: Reference) -> list[tuple[PolygonScore, str]]:
    """The attempts a run makes, scored with their texts: each, until one parses."""
    out: list[tuple[PolygonScore, str]] = []
    for text in texts:
        out.append((score_polygon(text, reference), text))
        if out[-1][0].parseable:
            break
    return out


def _box_attempts(texts: Iterable[str], referent: Referent) -> list[BoxScore]:
    out: list[BoxScore] = []
    for text in texts:
        out.append(score_box(text, referent, BUDGETS))
        if out[-1].parseable:
            break
    return out


def simulate(cohort_path: Path, profile: str, workers: int = 2) -> tuple[Cohort, ReportData]:
    """The paper's grid answered by ``profile`` on the pickled cohort, as a report reads it."""
    jobs = [
        (profile, c.name, condition, budget)
        for c in PAPER_CONFIGURATIONS
        for condition in c.conditions
        for budget in (*BUDGETS, *([BOX] if condition in BOX_CONDITIONS else []))
    ]
    with multiprocessing.get_context("fork").Pool(workers, _load, (cohort_path,)) as pool:
        found = list(pool.imap_unordered(_answer_cell, jobs))
    _load(cohort_path)
    assert _COHORT is not None
    return _COHORT, report_data(_COHORT, found)


def report_data(cohort: Cohort, found: list[CellAnswers]) -> ReportData:
    """The scores as ``groundbench report`` reads them from a re-scored store, view by view."""
    views = {v: _view(v, found) for v in VIEWS}
    ious: dict[str, dict[Cell, dict[str, float]]] = {r: {} for r in REFERENCES}
    for answers in found:
        for qid, by_reference in answers.references.items():
            for reference, value in by_reference.items():
                ious[reference].setdefault(answers.cell, {})[qid] = value
    return ReportData(
        headline=views["iou2"],
        best_effort=views["best_effort"],
        questions={
            q.qid: Question(q.difficulty, q.d_bin, q.q_bin, q.rs_bin, q.group)
            for q in cohort.questions
        },
        fidelity={int(n): float(v) for n, v in cohort.fidelity.items()},
        rescored=Rescored(ious),
        part_vertices={q.qid: len(cohort.referent(q.qid).part) // 2 for q in cohort.questions},
        earlier={v: views[v] for v in ("iou0", "iou1")},
    )


def _view(view: View, found: list[CellAnswers]) -> ViewScores:
    out = ViewScores(view)
    for answers in found:
        cell = answers.cell
        if cell.budget == BOX:
            out.boxes[cell] = {q: locked_attempt(a, view) for q, a in answers.boxes.items()}
            out.grid[cell] = len(answers.boxes)
        else:
            out.polygons[cell] = {q: locked_attempt(a, view) for q, a in answers.polygons.items()}
            out.grid[cell] = len(answers.polygons)
    return out


# -- per-key values -------------------------------------------------------------------------------

Key = tuple[int, str]
Value = Callable[[PolygonScore | None], float]


def iou(s: PolygonScore | None) -> float:
    return 100.0 * s.iou if s is not None and s.parseable else 0.0


def metric(name: str) -> Value:
    def value(s: PolygonScore | None) -> float:
        return 100.0 * float(getattr(s, name)) if s is not None and s.parseable else 0.0

    return value


def hit(threshold: float) -> Value:
    return lambda s: 100.0 if s is not None and s.parseable and s.iou >= threshold else 0.0


def cell(data: ReportData, name: str, condition: str, n: int) -> dict[str, PolygonScore | None]:
    return data.headline.polygons.get(Cell(name, condition, n), {})


def per_key(data: ReportData, name: str, condition: str, value: Value = iou,
            budgets: Sequence[int] = BUDGETS) -> dict[Key, float]:  # fmt: skip
    return {(n, q): value(s) for n in budgets for q, s in cell(data, name, condition, n).items()}


def per_budget(data: ReportData, name: str, n: int, value: Value = iou,
               condition: str = "base") -> dict[str, float]:  # fmt: skip
    return {q: value(s) for q, s in cell(data, name, condition, n).items()}


def moderate(data: ReportData, name: str, value: Value) -> dict[str, float]:
    """Per question, the mean over N = 16, 24, 32."""
    curves = [per_budget(data, name, n, value) for n in (16, 24, 32)]
    return {q: sum(c[q] for c in curves) / 3 for q in curves[0]}


# -- the effects --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Effect:
    """One contrast the profile must show: its label, the contrast, and the rule it meets."""

    label: str
    contrast: Contrast
    rule: str  # ">0", "<0", "within", "<=2"

    @property
    def holds(self) -> bool:
        c = self.contrast
        return {
            ">0": c.low > 0,
            "<0": c.high < 0,
            "within": c.low >= -2.0 and c.high <= 2.0,
            "<=2": c.high <= 2.0,
        }[self.rule]


ORDER = ("gemini-high", "qwen-max", "doubao", "kimi")


def effects(data: ReportData) -> Iterator[Effect]:
    """Issue 40's item 3, effect by effect, as this module's docstring lists them."""
    yield from _ordering(data)
    yield from _curves(data)
    yield from _boxes(data)
    yield from _thresholds(data)
    yield from _qwen(data)
    yield from _cues(data)
    yield from _selection(data)
    yield from _difficulty(data)


def _ordering(data: ReportData) -> Iterator[Effect]:
    for a, b in pairwise(ORDER):
        c = paired_contrast(per_key(data, a, "base"), per_key(data, b, "base"))
        yield Effect(f"1 pooled IoU {a} > {b}", c, ">0")
    for n in BUDGETS:
        order = ("qwen-max", "gemini-high", "doubao", "kimi") if n == 64 else ORDER
        for a, b in pairwise(order):
            c = paired_contrast(per_budget(data, a, n), per_budget(data, b, n))
            yield Effect(f"2 IoU N={n} {a} > {b}", c, ">0")
        for a, b in pairwise(ORDER):
            c = paired_contrast(per_budget(data, a, n, hit(0.5)), per_budget(data, b, n, hit(0.5)))
            yield Effect(f"2 Acc@.5 N={n} {a} > {b}", c, ">0")


def _curves(data: ReportData) -> Iterator[Effect]:
    for name in ORDER:
        mid = moderate(data, name, iou)
        yield Effect(
            f"3 {name} moderate − 8", paired_contrast(mid, per_budget(data, name, 8)), ">0"
        )
        fall = paired_contrast(mid, per_budget(data, name, 64))
        yield Effect(f"3 {name} moderate − 64", fall, ">0")
        legal = metric("legal")
        drop = paired_contrast(per_budget(data, name, 64, legal), per_budget(data, name, 32, legal))
        yield Effect(f"3 {name} legal % 64 − 32", drop, "<0")
        gap = paired_contrast(
            per_budget(data, name, 64), per_budget(data, name, 64, metric("legal_iou"))
        )
        yield Effect(f"3 {name} IoU − legal IoU at 64", gap, ">0")
        small = {q for q, v in data.part_vertices.items() if v <= 32}
        sub = paired_contrast(
            {q: v for q, v in per_budget(data, name, 64).items() if q in small},
            {q: v for q, v in per_budget(data, name, 32).items() if q in small},
        )
        yield Effect(f"3 {name} 64 − 32, parts ≤ 32 vertices", sub, "<0")


def _boxes(data: ReportData) -> Iterator[Effect]:
    name = "gemini-high"
    boxes = data.headline.boxes[Cell(name, "base", BOX)]
    box = {q: 100.0 * s.box_iou if s is not None and s.parseable else 0.0 for q, s in boxes.items()}
    keys = per_key(data, name, "base")
    by_q: dict[str, list[float]] = {}
    for (_, q), v in keys.items():
        by_q.setdefault(q, []).append(v)
    polygons = {q: sum(v) / len(v) for q, v in by_q.items()}
    yield Effect("4 gemini box IoU − polygon IoU", paired_contrast(box, polygons), ">0")
    control = {(n, q): control_iou(boxes.get(q), n) for n, q in keys}
    yield Effect("4 gemini direct − box control", paired_contrast(keys, control), "within")


def control_iou(s: BoxScore | None, n: int) -> float:
    return iou(s.control[n]) if s is not None and s.parseable else 0.0


def _thresholds(data: ReportData) -> Iterator[Effect]:
    lead = {
        t: {q: hit(t)(g) - hit(t)(cell(data, "kimi", "base", 8)[q])
            for q, g in cell(data, "gemini-high", "base", 8).items()}
        for t in (0.25, 0.75)
    }  # fmt: skip
    yield Effect(
        "5 N=8 gemini lead over kimi: Acc@.75 − Acc@.25",
        paired_contrast(lead[0.75], lead[0.25]),
        ">0",
    )
    for name in ("kimi", "gemini-high"):
        c = paired_contrast(moderate(data, name, hit(0.5)), per_budget(data, name, 64, hit(0.5)))
        yield Effect(f"5 {name} Acc@.5 moderate − 64", c, ">0")


def _qwen(data: ReportData) -> Iterator[Effect]:
    q = "qwen-max"
    for n in BUDGETS:
        c = paired_contrast(
            per_budget(data, q, n), per_budget(data, q, n, condition="thinking-off")
        )
        yield Effect(f"6 qwen base − off N={n}", c, ">0")
    parsed = metric("parseable")
    c = paired_contrast(per_key(data, q, "base", parsed), per_key(data, q, "thinking-off", parsed))
    yield Effect("6 qwen parse % base − off", c, ">0")
    both = {k for k, v in per_key(data, q, "thinking-off", parsed).items() if v}
    both &= {k for k, v in per_key(data, q, "base", parsed).items() if v}
    base, off = per_key(data, q, "base"), per_key(data, q, "thinking-off")
    c = paired_contrast({k: base[k] for k in both}, {k: off[k] for k in both})
    yield Effect("6 qwen parseable-only IoU base − off", c, ">0")
    for condition in ("thinking-budget", "temperature", "repeat"):
        yield Effect(
            f"6 qwen {condition} − base",
            paired_contrast(per_key(data, q, condition), base),
            "within",
        )
    ni = per_key(data, q, "no-image")
    keys = ni.keys() & off.keys()
    loss_ni = {k: base[k] - ni[k] for k in keys}
    loss_off = {k: base[k] - off[k] for k in keys}
    yield Effect(
        "6 qwen loss_ni − ½·loss_off",
        paired_contrast(loss_ni, {k: 0.5 * loss_off[k] for k in keys}),
        ">0",
    )
    yield Effect(
        "6 qwen 2·loss_off − loss_ni",
        paired_contrast({k: 2 * loss_off[k] for k in keys}, loss_ni),
        ">0",
    )
    for name in ("qwen-max", "gemini-high"):
        half, none, grey = (per_key(data, name, c) for c in ("half-res", "no-image", "greyscale"))
        yield Effect(f"6 {name} half-res − no-image", paired_contrast(half, none), ">0")
        yield Effect(f"6 {name} greyscale − half-res", paired_contrast(grey, half), ">0")


def _cues(data: ReportData) -> Iterator[Effect]:
    q = "qwen-max"
    base = per_key(data, q, "base")
    s, c, b = (per_key(data, q, f"cue-{x}-wrong") for x in ("spatial", "colour", "both"))
    yield Effect("7 qwen colour-wrong − spatial-wrong", paired_contrast(c, s), ">0")
    floor = {k: max(0.0, s[k] + c[k] - base[k]) for k in b}
    yield Effect("7 qwen both-wrong − max(0, s + c − base)", paired_contrast(b, floor), ">0")
    for cue in ("spatial", "colour"):
        yield Effect(
            f"7 qwen cue-{cue}-true − base",
            paired_contrast(per_key(data, q, f"cue-{cue}-true"), base),
            "<=2",
        )


def _selection(data: ReportData) -> Iterator[Effect]:
    sel = metric("sel")
    for name in ORDER:
        c = paired_contrast(moderate(data, name, sel), per_budget(data, name, 64, sel))
        yield Effect(f"8 {name} Sel moderate − 64", c, ">0")
    for n in BUDGETS:
        g, k = cell(data, "gemini-high", "base", n), cell(data, "kimi", "base", n)
        chosen = [q for q in g if _selected(g[q]) and _selected(k.get(q))]
        c = paired_contrast({q: iou(g[q]) for q in chosen}, {q: iou(k[q]) for q in chosen})
        yield Effect(f"8 Con gemini − kimi N={n}", c, ">0")


def _selected(s: PolygonScore | None) -> bool:
    return s is not None and s.parseable and s.sel


def _difficulty(data: ReportData) -> Iterator[Effect]:
    for name in ORDER:
        groups: dict[str, list[PolygonScore | None]] = {}
        for n in BUDGETS:
            for q, s in cell(data, name, "base", n).items():
                groups.setdefault(data.questions[q].difficulty, []).append(s)
        for a, b in (("easy", "medium"), ("medium", "hard")):
            fixed = unpaired_contrast([iou(s) for s in groups[a]], [iou(s) for s in groups[b]])
            yield Effect(f"9 {name} {a} − {b} fixed", fixed, ">0")
            parsed = unpaired_contrast(
                [iou(s) for s in groups[a] if s is not None and s.parseable],
                [iou(s) for s in groups[b] if s is not None and s.parseable],
            )
            yield Effect(f"9 {name} {a} − {b} parseable", parsed, ">0")


# -- printing -----------------------------------------------------------------------------------


def calibration_rows(data: ReportData) -> Iterator[str]:
    yield (f"{'configuration':12} {'condition':17} {'N':>3} {'IoU':>6} {'IoU|p':>6} {'parse%':>6} "
           f"{'legal%':>6} {'lgIoU':>6} {'Acc.5':>6} {'Sel':>6}")  # fmt: skip
    for c in PAPER_CONFIGURATIONS:
        for condition in c.conditions:
            for n in BUDGETS:
                s = summarise_cell(list(cell(data, c.name, condition, n).values()))
                yield (
                    f"{c.name:12} {condition:17} {n:3} {s.iou.fixed:6.1f} {s.iou.parseable:6.1f} "
                    f"{s.parse_rate:6.1f} {s.legal_coverage.fixed:6.1f} {s.legal_iou.fixed:6.1f} "
                    f"{s.acc[0.5].fixed:6.1f} {s.sel:6.1f}"
                )


def calibrated(data: ReportData) -> Iterator[tuple[str, float, float]]:
    """The paper's numbers the profile is calibrated to, and this cohort's (point estimates)."""
    g = "gemini-high"
    pooled = per_key(data, g, "base")
    yield "Gemini pooled fixed IoU", 57.7, sum(pooled.values()) / len(pooled)
    s = summarise_cell(list(cell(data, g, "base", 64).values()))
    yield "Gemini N=64 filled IoU", 37.7, s.iou.fixed
    yield "Gemini N=64 legal coverage %", 7.5, s.legal_coverage.fixed
    yield "Gemini N=64 legal IoU", 4.2, s.legal_iou.fixed
    boxes = data.headline.boxes[Cell(g, "base", BOX)]
    control = [control_iou(boxes.get(q), n) for n, q in pooled]
    yield "Gemini pooled box-derived control", 57.3, sum(control) / len(control)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300, choices=(300, 1500))
    parser.add_argument("--profile", default="paper", choices=sorted(PROFILES))
    parser.add_argument("--work", type=Path, help="keep the data and cohort here")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quiet", action="store_true", help="no calibration table")
    parser.add_argument("--findings", action="store_true", help="the report's verdicts too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        begun = time.perf_counter()
        path = cohort_for(args.questions, work)
        _, data = simulate(path, args.profile, args.workers)
        took = time.perf_counter() - begun
    if not args.quiet:
        print("\n".join(calibration_rows(data)))
    print(f"\n{args.profile} profile, {args.questions} questions ({took:.0f} s)")
    found = list(effects(data))
    for e in found:
        c = e.contrast
        mark = "ok  " if e.holds else "FAIL"
        print(f"{mark} {e.label:48} {c.delta:7.2f} [{c.low:7.2f}, {c.high:7.2f}]  {e.rule}")
    print(f"{sum(e.holds for e in found)} of {len(found)} effects hold")
    for label, paper, here in calibrated(data):
        print(f"{label:36} paper {paper:5.1f}  here {here:5.1f}")
    if args.findings:
        print("\nthe report's findings on these answers:")
        for f in findings(data):
            print(f"{f.verdict:26} {f.claim}")
            if f.verdict != "holds":
                print(f"{'':26}   {f.here}")


if __name__ == "__main__":
    main()
