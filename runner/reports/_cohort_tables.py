"""The cohort section: the diagnostics the paper prints about its cohort (§3.1–3.3), beside
the paper's own figures.

- targets: ``C_N`` per budget, and how many selected parts each budget simplifies or
  up-samples (PROTOCOL §2);
- slices: questions per composite-difficulty label, ``D``, ``Q`` and ``RS`` bin and semantic
  group (§8), the slices of Table 5;
- parts and length: the multi-part statistics (referents of several parts, the selected
  part's mean share of the union's area, how often it is also the largest) and the longest
  legal answer against the tightest output allowance.
"""

from __future__ import annotations

import math
from collections import Counter

from runner.reports._cohort import Example, StoredCohort, part_statistics, resampling
from runner.reports._data import ReportData
from runner.reports._tables import SLICES, ReportTable, _fmt, _natural
from scoring import BUDGETS

PAPER_FIDELITY = {8: 88.6, 16: 96.2, 24: 98.3, 32: 99.0, 64: 99.4}
"""The paper's ``C_N`` (§3.3) on its 1,500 questions."""
PAPER_D_BINS = {"D1": 705, "D2": 276, "D3+": 519}
"""The paper's questions per ``D`` bin (§3.2)."""
PAPER_QUESTIONS = 1500
PAPER_MULTI_PART = 148  # §3.1: "This affects 148/1,500 UIDs"
PAPER_SHARE = 71.76  # %: the selected part's mean share of the all-parts union
PAPER_LARGEST = 85.14  # %: the selected part is also the largest-area part
PAPER_LONGEST = 520  # characters: "the longest legal answer is about 520 characters"
PAPER_ALLOWANCE = 1280  # tokens: "a tightest allowance of 1,280 tokens"
MISSING = "—"


def cohort_tables(data: ReportData) -> list[ReportTable]:
    """The cohort section, in the paper's order of construction: targets, slices, then the
    multi-part statistics and answer length."""
    return [targets_table(data), slices_table(data), parts_table(data)]


def targets_table(data: ReportData) -> ReportTable:
    """Per budget: ``C_N`` (stored when the cohort was built) beside the paper's, and how many
    selected parts ``G_N`` simplifies, up-samples or keeps as listed."""
    shapes = data.cohort.shapes
    rows = []
    for n in sorted({*BUDGETS, *data.fidelity}):
        simplified, upsampled, kept = resampling(shapes, n)
        fidelity = data.fidelity.get(n, math.nan)
        paper = PAPER_FIDELITY.get(n, math.nan)
        rows.append((str(n), _fmt(fidelity), _fmt(paper), *map(str, (simplified, upsampled, kept))))
    notes = [
        "C_N = 100 · mean IoU(R(G_N), A_i) over the cohort's questions, phase 0 (PROTOCOL §2), "
        "computed when the cohort was built; IoU_n divides by it",
        "Simplified: the selected part lists more than N vertices (Visvalingam–Whyatt); "
        "Up-sampled: fewer (midpoints of the longest edges); As listed: exactly N",
    ]
    example = data.cohort.example
    if example is not None:
        notes.append(_figure_note(example))
    return ReportTable(
        "cohort_targets",
        "Cohort: canonical targets G_N and construction fidelity C_N (points)",
        ("N", "C_N", "Paper C_N", "Simplified", "Up-sampled", "As listed"),
        tuple(rows),
        tuple(notes),
        empty_because="the store holds no cohort",
        label_columns=1,
    )


def _figure_note(example: Example) -> str:
    """Which referent Figure 1 draws, for the terminal (which shows no figure)."""
    shape = example.shape
    parts = len(shape.parts)
    return (
        f"Figure 1 (target_construction, in --out and --html) draws {example.qid} "
        f"({example.category}): {parts} part{'s' * (parts > 1)}, the selected one of "
        f"{shape.vertices} vertices"
    )


def slices_table(data: ReportData) -> ReportTable:
    """Questions per label of each of Table 5's slices, with the share of the cohort, and
    the paper's ``D`` bin counts."""
    questions = data.questions
    rows: list[tuple[str, ...]] = []
    for slicer, label_of, _ in SLICES:
        counts = Counter(label_of(q) for q in questions.values())
        for label in sorted(counts, key=_natural):
            paper = PAPER_D_BINS.get(label) if slicer == "D" else None
            share = 100.0 * counts[label] / len(questions)
            rows.append((slicer, label, str(counts[label]), _fmt(share),
                         MISSING if paper is None else str(paper)))  # fmt: skip
    return ReportTable(
        "cohort_slices",
        "Cohort: questions per slice (PROTOCOL §8)",
        ("Slice", "Label", "Questions", "Share %", "Paper"),
        tuple(rows),
        (
            f"{len(questions)} questions; Q and RS bins are the cohort's tertiles, so about a "
            "third each; composite difficulty: a point each for D3+, Q3 and RS1 (0 easy, "
            "1 medium, 2 or more hard)",
            f"Paper: its {PAPER_QUESTIONS:,} questions per D bin (none in D0)",
        ),
        empty_because="the store holds no questions",
    )


def parts_table(data: ReportData) -> ReportTable:
    """The multi-part statistics of §3.1 and the longest legal answer against the tightest
    output allowance, each beside the paper's figure."""
    stats = part_statistics(data.cohort.shapes)
    over = f"% of those {stats.multi_part}"
    rows = (
        ("Referents of more than one part", f"questions (of {stats.questions})",
         str(stats.multi_part), str(PAPER_MULTI_PART)),
        ("Selected part's mean share of the union's area", over, _fmt(stats.mean_share),
         f"{PAPER_SHARE:.2f}"),
        ("Selected part is also the largest part", over, _fmt(stats.largest_percent),
         f"{PAPER_LARGEST:.2f}"),
        *_length_rows(data.cohort),
    )  # fmt: skip
    return ReportTable(
        "cohort_parts",
        "Cohort: multi-part referents and answer length",
        ("Statistic", "Unit", "Value", "Paper"),
        rows,
        _parts_notes(data.cohort),
    )


def _length_rows(cohort: StoredCohort) -> tuple[tuple[str, str, str, str], ...]:
    longest, tightest = cohort.longest_legal, cohort.tightest
    allowance_unit = f"tokens ({tightest.configuration})" if tightest else "tokens (none recorded)"
    return (
        ("Longest legal answer", "characters",
         str(longest.characters) if longest else MISSING, str(PAPER_LONGEST)),
        ("Tightest output allowance", allowance_unit,
         str(tightest.tokens) if tightest else MISSING, str(PAPER_ALLOWANCE)),
    )  # fmt: skip


def _parts_notes(cohort: StoredCohort) -> tuple[str, ...]:
    notes = [
        "Part selection keeps the part with the most listed vertices (PROTOCOL §2.1); areas "
        "are rasterised as scores are (§3), the union of all the referent's parts; a tie for "
        "the largest counts as the largest",
        f"Paper: of its {PAPER_QUESTIONS:,} questions; its longest legal answer is about "
        f"{PAPER_LONGEST} characters",
    ]
    longest = cohort.longest_legal
    if longest is not None:
        notes.append(
            f"Longest legal answer: {longest.configuration}, {longest.condition}, "
            f"N = {longest.budget}, {longest.qid}, attempt {longest.attempt} (any attempt "
            "stored and scored legal)"
        )
    notes.append(
        "Output allowance: each configuration's max_output_tokens, the same under every "
        "condition; a token spans at least one character, so an answer text no longer in "
        "characters than the allowance in tokens was not cut by it (reasoning, which some "
        "providers count in the allowance, aside)"
    )
    if cohort.unrecorded:
        notes.append(f"No output allowance recorded for: {', '.join(cohort.unrecorded)}")
    return tuple(notes)
