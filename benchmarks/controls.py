"""Controls: store transformations that each remove one effect the report's findings rest on.

Each control takes a grid's answers (:mod:`benchmarks._answers`: per cell and question, the
attempts' texts a run stored) and returns new answers with one effect of the paper gone — the
collapse at N = 64, Doubao above Kimi, reasoning's gain, … — sharing every cell it leaves alone
(so that scoring it re-scores only the cells it changed). Scored as a report reads a store, the
claims that rest on that effect should read "does not hold" and no other verdict should change:
:data:`CONTROLS` names, for each, the claims expected to flip.

Run on a finished store (``groundbench demo`` writes ``groundbench-demo/demo.duckdb``; about
15 s for a 60-question demo store, a minute for the demo's 300 questions, on 2 cores):

    .venv/bin/python -m benchmarks.controls STORE [--control NAME ...] [--workers 2]

It reads the store's answers and cohort, scores them in process (re-scoring the base cells'
answers against the audits' references, as ``groundbench rescore`` does), checks that its
verdicts are the store's own (where the store is re-scored), and for each control prints the
verdicts that changed (claim, before → after), marking the expected flips, the flips missing
("KEPT, should flip") and the unexpected ones, then one summary line per control.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._answers import (
    AnswerSet,
    CellTexts,
    Scorer,
    Texts,
    answers,
    answers_from_store,
    attempts_allowed,
    in_order,
    score,
)
from conditions import BOX, Cohort, has_table
from runner.reports import Finding, findings, load_report_data
from runner.reports._data import Cell, ReportData
from runner.store import read_only
from scoring import SCALE, parse_answer, parse_list

__all__ = [
    "CLAIM_NAMES",
    "CONTROLS",
    "AnswerSet",
    "Check",
    "Control",
    "Flip",
    "Scorer",
    "answers",
    "answers_from_store",
    "check",
    "checks",
    "claim_name",
    "control_named",
    "controlled",
    "print_check",
    "score",
]

# The stable prefixes of the report's 21 claims (each Finding.claim starts with one).
CLAIM_NAMES: tuple[str, ...] = (
    "F1 ordering",
    "F1 gap",
    "F1 control",
    "F1 thresholds",
    "F2 non-monotone",
    "F2 collapse",
    "F2 subdivision",
    "F2 phases",
    "Rank stability (Acc@.5)",
    "Rank stability (IoU)",
    "F3 reasoning",
    "F3 largest",
    "F3 no-image",
    "F3 evidence",
    "F3 second-order",
    "F4 wrong spatial",
    "F4 wrong cues combine",
    "F4 truthful",
    "Table 4",
    "Table 5",
    "§4.3 references",
)

NOT_HOLDING = "does not hold"
REFUSAL = "I cannot outline that object."
SEED = 0  # the controls' own draws (true-cue-gain's questions, difficulty's permutation)

GEMINI, QWEN, DOUBAO, KIMI = "gemini-high", "qwen-max", "doubao", "kimi"


def claim_name(claim: str) -> str:
    """The stable prefix of a finding's claim (the text before its colon if none matches)."""
    return next((n for n in CLAIM_NAMES if claim.startswith(n)), claim.split(":")[0])


# -- the answers' texts ---------------------------------------------------------------------------


def _integers(values: Sequence[float]) -> str:
    """Coordinates as a bare line of integers clamped to 0–SCALE (0–999), as the simulator
    writes them."""
    return " ".join(str(round(min(SCALE, max(0.0, v)))) for v in values)


def subdivided(text: str, n: int) -> str:
    """An ``n``-vertex answer with the midpoint of each edge inserted after its first vertex:
    ``2n`` vertices as a bare line of integers; a text that does not parse at ``n`` is kept."""
    ring = parse_answer(text, n)
    if ring is None:
        return text
    values: list[float] = []
    for (x0, y0), (x1, y1) in zip(ring, ring[1:] + ring[:1], strict=True):
        values += [x0, y0, (x0 + x1) / 2, (y0 + y1) / 2]
    return _integers(values)


def decimated(text: str, n: int) -> str:
    """An ``n``-vertex answer with every other vertex kept (from the first): ``n / 2``
    vertices as a bare line of integers; a text that does not parse at ``n`` is kept."""
    ring = parse_answer(text, n)
    if ring is None:
        return text
    return _integers([c for point in ring[0::2] for c in point])


def shrunk(text: str, n: int, factor: float) -> str:
    """An ``n``-vertex answer scaled ``factor`` times about its vertices' centroid, as a bare
    line of integers; a text that does not parse at ``n`` is kept."""
    ring = parse_answer(text, n)
    if ring is None:
        return text
    cx, cy = sum(x for x, _ in ring) / n, sum(y for _, y in ring) / n
    return _integers([c for x, y in ring for c in (cx + factor * (x - cx), cy + factor * (y - cy))])


ENLARGE = 1.6
SHRINK = 0.75


def enlarged(text: str, factor: float = ENLARGE) -> str:
    """A box answer ``x1 y1 x2 y2`` grown ``factor`` times in width and height about its
    centre, clamped to 0–999, written as it was (integers, or one decimal); a text that does
    not parse as a box is kept."""
    parsed = parse_list(text, 4)
    if parsed is None:
        return text
    x1, y1, x2, y2 = parsed.values
    cx, cy, hw, hh = (x1 + x2) / 2, (y1 + y2) / 2, factor * (x2 - x1) / 2, factor * (y2 - y1) / 2
    box = [min(SCALE, max(0.0, v)) for v in (cx - hw, cy - hh, cx + hw, cy + hh)]
    if parsed.integers:
        return " ".join(str(round(v)) for v in box)
    return " ".join(f"{v:.1f}" for v in box)


def target_text(cohort: Cohort, qid: str, n: int) -> str:
    """``G_N`` of ``qid`` (the cohort's target, phase 0) as an answer: its pixels converted to
    0–999 as the simulator converts them, a bare line of integers."""
    q = cohort.question(qid)
    return _integers(
        [c for x, y in cohort.target(qid, n) for c in (x * SCALE / q.width, y * SCALE / q.height)]
    )


def _chosen(qid: str, one_in: int = 4) -> bool:
    """One question in ``one_in``, by a fixed seeded hash of its id."""
    digest = hashlib.sha256(f"groundbench-controls-{SEED}:{qid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % one_in == 0


# -- building blocks of a transform ---------------------------------------------------------------

Transform = Callable[[AnswerSet, Cohort], dict[Cell, CellTexts]]


def _mapped(
    answer_set: AnswerSet,
    which: Callable[[Cell], bool],
    texts: Callable[[Cell, CellTexts], CellTexts],
) -> dict[Cell, CellTexts]:
    """A new answer set: ``texts`` of each cell ``which`` names, every other cell's object."""
    return {c: texts(c, t) if which(c) else t for c, t in answer_set.items()}


def _each_attempt(change: Callable[[str], str]) -> Callable[[Cell, CellTexts], CellTexts]:
    return lambda _, texts: {q: tuple(map(change, a)) for q, a in texts.items()}


def _taken(source: CellTexts, onto: CellTexts) -> CellTexts:
    """``source``'s answers to ``onto``'s questions (``source`` itself, when they are its own)."""
    if source.keys() == onto.keys():
        return source
    return {q: source.get(q, mine) for q, mine in onto.items()}


def _replaced(target: str, source: str) -> Transform:
    """``target``'s answers ← ``source``'s (same configuration, question and budget)."""

    def transform(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
        def texts(cell: Cell, mine: CellTexts) -> CellTexts:
            theirs = answer_set.get(cell._replace(condition=source))
            return mine if theirs is None else _taken(theirs, mine)

        return _mapped(answer_set, lambda c: c.condition == target, texts)

    return transform


def _swapped(a: str, b: str) -> Transform:
    """Configurations ``a``'s and ``b``'s answers exchanged in each cell both have (each
    answers object moved whole)."""

    def transform(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
        out = dict(answer_set)
        for cell, texts in answer_set.items():
            other = cell._replace(configuration=b)
            if cell.configuration == a and other in answer_set:
                out[cell], out[other] = answer_set[other], texts
        return out

    return transform


def _from_budget(source: int, target: int, change: Callable[[str, int], str]) -> Transform:
    """Every ``target``-budget cell's answers ← the same request's at ``source``, each attempt
    changed by ``change(text, source)`` (the attempts kept as the source request made them)."""

    def transform(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
        def texts(cell: Cell, mine: CellTexts) -> CellTexts:
            theirs = answer_set.get(cell._replace(budget=source))
            if theirs is None:
                return mine
            return {
                q: tuple(change(t, source) for t in theirs[q]) if q in theirs else a
                for q, a in mine.items()
            }

        return _mapped(answer_set, lambda c: c.budget == target, texts)

    return transform


def _collapse(answer_set: AnswerSet, cohort: Cohort) -> dict[Cell, CellTexts]:
    return _from_budget(32, 64, subdivided)(answer_set, cohort)


def _rise(answer_set: AnswerSet, cohort: Cohort) -> dict[Cell, CellTexts]:
    """Every N = 8 answer ← its request's N = 16 answer, every other vertex. In every
    configuration: one alone would trade places with its neighbours at N = 8 (rank stability).
    F1's thresholds, judged at the smallest budget, lose Kimi's N = 8 answers with it."""
    return _from_budget(16, 8, decimated)(answer_set, cohort)


def _qwen_smaller_at_top(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
    """Qwen-max's N = 64 answers, in every condition, drawn at :data:`SHRINK` of their size:
    its level at 64 falls below Gemini's while its conditions' contrasts with its base keep
    their sign (a swap with Gemini's base answers would move every one of them)."""

    def texts(cell: Cell, mine: CellTexts) -> CellTexts:
        return {q: tuple(shrunk(t, 64, SHRINK) for t in a) for q, a in mine.items()}

    return _mapped(answer_set, lambda c: c.configuration == QWEN and c.budget == 64, texts)


def _box_gap(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
    return _mapped(answer_set, lambda c: c.budget == BOX, _each_attempt(enlarged))


def _true_cue_gain(answer_set: AnswerSet, cohort: Cohort) -> dict[Cell, CellTexts]:
    def texts(cell: Cell, mine: CellTexts) -> CellTexts:
        return {
            q: (target_text(cohort, q, cell.budget),) if _chosen(q) else a for q, a in mine.items()
        }

    true_cue = ("cue-spatial-true", "cue-colour-true")
    return _mapped(answer_set, lambda c: c.condition in true_cue and c.budget != BOX, texts)


def _sub_additive(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
    def texts(cell: Cell, mine: CellTexts) -> CellTexts:
        refusals: Texts = (REFUSAL,) * attempts_allowed(cell.configuration)
        return dict.fromkeys(mine, refusals)

    return _mapped(answer_set, lambda c: c.condition == "cue-both-wrong", texts)


def _unchanged(answer_set: AnswerSet, _: Cohort) -> dict[Cell, CellTexts]:
    return dict(answer_set)


def _same(data: ReportData) -> ReportData:
    return data


def _permuted_difficulty(data: ReportData) -> ReportData:
    """The questions' difficulty labels permuted (seeded): each label as often, at random."""
    qids = sorted(data.questions)
    labels = [data.questions[q].difficulty for q in qids]
    random.Random(SEED).shuffle(labels)
    questions = {
        q: dataclasses.replace(data.questions[q], difficulty=label)
        for q, label in zip(qids, labels, strict=True)
    }
    return dataclasses.replace(data, questions=questions)


# -- the controls ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Control:
    """One effect removed: ``transform`` makes the answers without it (a new mapping sharing
    every cell it leaves alone), ``relabel`` the report's data (its question metadata) where
    the effect lives there; ``claims`` are the claim prefixes expected to read "does not
    hold" once it is gone."""

    name: str
    removes: str
    claims: tuple[str, ...]
    transform: Transform = _unchanged
    relabel: Callable[[ReportData], ReportData] = _same


CONTROLS: tuple[Control, ...] = (
    Control(
        "collapse",
        "the fall at N = 64: each N = 64 answer is its request's N = 32 answer subdivided",
        ("F1 control", "F1 thresholds", "F2 non-monotone", "F2 collapse", "F2 subdivision",
         "F2 phases", "Rank stability (IoU)", "Table 4"),
        _collapse,
    ),
    Control(
        "doubao-kimi",
        "Doubao above Kimi: their answers exchanged in every cell they share (rank stability "
        "judges one ordering kept across budgets, whichever it is, so it keeps)",
        ("F1 ordering",),
        _swapped(DOUBAO, KIMI),
    ),
    Control(
        "box-gap",
        "the box's lead: every box answer enlarged ×1.6 about its centre",
        ("F1 gap", "F1 control"),
        _box_gap,
    ),
    Control(
        "thinking",
        "reasoning's gain: thinking-off answers ← base answers",
        ("F3 reasoning", "F3 largest", "F3 no-image"),
        _replaced("thinking-off", "base"),
    ),
    Control(
        "cue-asymmetry",
        "a wrong location hurting more than a wrong colour: cue-colour-wrong ← cue-spatial-wrong",
        ("F4 wrong spatial",),
        _replaced("cue-colour-wrong", "cue-spatial-wrong"),
    ),
    Control(
        "inversion",
        f"the Qwen–Gemini inversion at N = 64: Qwen-max's N = 64 answers (every condition) "
        f"drawn at {SHRINK:g} of their size",
        ("Rank stability (IoU)",),
        _qwen_smaller_at_top,
    ),
    Control(
        "no-image",
        "the image's evidence: no-image answers ← base answers",
        ("F3 no-image", "F3 evidence"),
        _replaced("no-image", "base"),
    ),
    Control(
        "resolution",
        "resolution's gain: half-res answers ← base answers",
        ("F3 evidence",),
        _replaced("half-res", "base"),
    ),
    Control(
        "second-order",
        "a reduced thinking budget costing little: thinking-budget ← thinking-off answers",
        ("F3 second-order", "F3 largest"),
        _replaced("thinking-budget", "thinking-off"),
    ),
    Control(
        "true-cue-gain",
        "true hints giving nothing: one question in four of each true-cue cell answered G_N",
        ("F4 truthful",),
        _true_cue_gain,
    ),
    Control(
        "sub-additive",
        "wrong hints combining sub-additively: cue-both-wrong answers ← refusals",
        ("F4 wrong cues combine",),
        _sub_additive,
    ),
    Control(
        "difficulty",
        "difficulty's ordering: the questions' difficulty labels permuted (seeded)",
        ("Table 5",),
        relabel=_permuted_difficulty,
    ),
    Control(
        "rise",
        "the rise from the smallest budget: N = 8 answers ← the N = 16 answer's every other vertex",
        ("F2 non-monotone",),
        _rise,
    ),
)  # fmt: skip


def control_named(name: str) -> Control:
    for c in CONTROLS:
        if c.name == name:
            return c
    raise KeyError(f"unknown control {name!r}; known: {', '.join(c.name for c in CONTROLS)}")


def controlled(control: Control, answer_set: AnswerSet, scorer: Scorer) -> ReportData:
    """The report's data on ``answer_set`` with ``control``'s effect removed."""
    return control.relabel(scorer.report_data(control.transform(answer_set, scorer.cohort)))


# -- reading the flips ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Flip:
    """One claim's verdict before and after a control, and whether it was expected to flip."""

    claim: str
    before: str
    after: str
    expected: bool

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def mark(self) -> str:
        if self.expected:
            if self.after == NOT_HOLDING and self.changed:
                return "flipped (expected)"
            if self.after == NOT_HOLDING:
                return "does not hold before or after"
            return "KEPT, should flip" if not self.changed else "CHANGED, should read does not hold"
        return "FLIPPED, unexpected" if self.changed else ""


@dataclass(frozen=True)
class Check:
    """One control's effect on the findings: every claim's verdict before and after."""

    control: Control
    flips: tuple[Flip, ...]

    @property
    def flipped(self) -> list[Flip]:
        """The expected claims now reading "does not hold" that did not before."""
        return [f for f in self.flips if f.mark == "flipped (expected)"]

    @property
    def already(self) -> list[Flip]:
        """The expected claims that read "does not hold" before the control too."""
        return [f for f in self.flips if f.expected and f.before == f.after == NOT_HOLDING]

    @property
    def missing(self) -> list[Flip]:
        """The expected claims that do not read "does not hold" after the control."""
        return [f for f in self.flips if f.expected and f.after != NOT_HOLDING]

    @property
    def unexpected(self) -> list[Flip]:
        return [f for f in self.flips if not f.expected and f.changed]

    @property
    def shown(self) -> list[Flip]:
        """What a reader is shown: every change, and every expected claim."""
        return [f for f in self.flips if f.changed or f.expected]

    @property
    def exact(self) -> bool:
        """Exactly its claims read "does not hold" after it, and nothing else changed."""
        return not self.missing and not self.unexpected

    def summary(self) -> str:
        expected = [f for f in self.flips if f.expected]
        line = f"{self.control.name}: {len(self.flipped)} of {len(expected)} expected flips"
        if self.already:
            line += "; did not hold before: " + ", ".join(claim_name(f.claim) for f in self.already)
        if self.missing:
            line += "; not flipped: " + ", ".join(
                f"{claim_name(f.claim)} ({f.after})" for f in self.missing
            )
        line += f"; {len(self.unexpected)} unexpected"
        if self.unexpected:
            line += ": " + ", ".join(
                f"{claim_name(f.claim)} ({f.before} → {f.after})" for f in self.unexpected
            )
        return line


def check(control: Control, before: Sequence[Finding], after: Sequence[Finding]) -> Check:
    flips = tuple(
        Flip(f.claim, f.verdict, g.verdict, claim_name(f.claim) in control.claims)
        for f, g in zip(before, after, strict=True)
    )
    return Check(control, flips)


def checks(
    answer_set: AnswerSet,
    scorer: Scorer,
    before: Sequence[Finding],
    chosen: Sequence[Control] = CONTROLS,
) -> Iterator[Check]:
    """Each control's :class:`Check` against the findings ``before`` it."""
    for control in chosen:
        yield check(control, before, findings(controlled(control, answer_set, scorer)))


def print_check(c: Check, out: Callable[[str], None] = print) -> None:
    out(f"\n{c.control.name}: removes {c.control.removes}")
    for f in c.shown:
        out(f"  {_short(f.claim, 78):78}  {f.before:>25} → {f.after:25}  {f.mark}")


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# -- the command ----------------------------------------------------------------------------------


def _store_agrees(path: Path, found: Sequence[Finding]) -> str:
    """Whether the store's own findings (as ``groundbench report`` reads it) are these."""
    with read_only(path) as con:
        theirs = findings(in_order(load_report_data(con, path)))
        rescored = (
            has_table(con, "reference_scores")
            and (con.execute("SELECT count(*) FROM reference_scores").fetchone() or (0,))[0]
        )
    if not rescored:
        return "the store is not re-scored (`groundbench rescore STORE`): not compared"
    differ = [
        f"{claim_name(f.claim)} ({g.verdict} in the store)"
        for f, g in zip(found, theirs, strict=True)
        if (f.verdict, f.here) != (g.verdict, g.here)
    ]
    if not differ:
        return "the store's own findings are these (every verdict and figure)"
    return "DIFFERS from the store's own findings: " + "; ".join(differ)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a finished store (groundbench-demo/demo.duckdb)")
    parser.add_argument("--control", action="append", choices=[c.name for c in CONTROLS],
                        help="this control only (repeatable; default: all)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="scoring processes")
    args = parser.parse_args(argv)
    chosen = [control_named(n) for n in args.control] if args.control else list(CONTROLS)
    begun = time.perf_counter()
    cohort, answer_set = answers_from_store(args.store)
    count = sum(len(t) for t in answer_set.values())
    with Scorer(cohort, args.workers) as scorer:
        before = findings(scorer.report_data(answer_set))
        print(f"{args.store}: {len(cohort.questions):,} questions, {len(answer_set)} cells, "
              f"{count:,} requests answered; scored in process "
              f"({time.perf_counter() - begun:.0f} s)")  # fmt: skip
        print(_store_agrees(args.store, before))
        print("\nfindings:")
        for f in before:
            print(f"  {f.verdict:>25}  {_short(f.claim, 90)}")
        done = []
        for c in checks(answer_set, scorer, before, chosen):
            print_check(c)
            done.append(c)
    print("\nsummary:")
    for c in done:
        print(f"  {c.summary()}")
    exact = sum(c.exact for c in done)
    print(f"{exact} of {len(done)} controls flip exactly their claims "
          f"({math.ceil(time.perf_counter() - begun)} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
