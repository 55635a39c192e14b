"""Each box benchmark's main table, one row per configuration and reasoning setting (§10).

The columns are the papers' own: Ref-Adv's Table 7 (Acc0.5, Acc0.75, Acc0.9, mAcc, Acc0.5 of
the 4–6 and ≥ 7 distractor groups with their difference from the overall), GroundingME's
leaderboard (Acc@0.5 per L-1 dimension and the total), RefBench-PRO's Table 2 (Acc_p, Acc_o,
the perception tasks, Acc_API, the reasoning tasks, Reject, Acc_RC). Values are percentages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from conditions import REASONINGS, Benchmark, Reasoning, read_box_set, reasoning_named
from runner.reports._tables import ReportTable, _fmt, _signed
from scoring import (
    BOX_READERS,
    BoxJudgement,
    JudgedQuestion,
    groundingme_row,
    ref_adv_row,
    refbench_pro_row,
)


@dataclass(frozen=True)
class BoxRun:
    """One configuration's judged answers under one reasoning setting."""

    configuration: str
    reasoning: Reasoning
    questions: Sequence[JudgedQuestion]


# (column title, key in the scoring row) per benchmark, in the paper's order.
_COLUMNS: dict[Benchmark, tuple[tuple[str, str], ...]] = {
    "ref-adv": (("Acc0.5", "Acc0.5"), ("Acc0.75", "Acc0.75"), ("Acc0.9", "Acc0.9"),
                ("mAcc", "mAcc"), ("4–6", "4–6 Acc0.5"), ("Δ", "4–6 Δ"),
                ("≥7", "≥7 Acc0.5"), ("Δ ", "≥7 Δ")),
    "groundingme": (("Discriminative", "Discriminative"), ("Spatial", "Spatial"),
                    ("Limited", "Limited"), ("Rejection", "Rejection"), ("Total", "Total")),
    "refbench-pro": (("Acc_p", "Acc_p"), ("Acc_o", "Acc_o"), ("Attribute", "attribute"),
                     ("Position", "position"), ("Interaction", "interaction"),
                     ("Acc_API", "Acc_API"), ("Relation", "relation"),
                     ("Commonsense", "commonsense"), ("Reject", "reject"), ("Acc_RC", "Acc_RC")),
}  # fmt: skip
_TITLES: dict[Benchmark, str] = {
    "ref-adv": "Ref-Adv: accuracy at IoU 0.5 / 0.75 / 0.9, mAcc, and Acc0.5 by distractors",
    "groundingme": "GroundingME: Acc@0.5 per dimension (Rejection: answers saying absent)",
    "refbench-pro": "RefBench-PRO: mAcc per task (0.5:0.05:0.9), RejAcc, and their means",
}
_ROWS = {"ref-adv": ref_adv_row, "groundingme": groundingme_row, "refbench-pro": refbench_pro_row}


def box_benchmark_table(benchmark: Benchmark, runs: Sequence[BoxRun]) -> ReportTable:
    """``benchmark``'s main table over ``runs``, read by the benchmark's own reader."""
    reader = BOX_READERS[benchmark]
    columns = _COLUMNS[benchmark]
    rows = []
    for run in runs:
        values = _ROWS[benchmark](run.questions, reader)
        cot = "✓" if run.reasoning == "cot" else "✗"
        rows.append((run.configuration, cot, *(_number(values[key], key) for _, key in columns)))
    return ReportTable(
        name=f"box-{benchmark}",
        title=_TITLES[benchmark],
        columns=("Model", "CoT?", *(title.strip() for title, _ in columns)),
        rows=tuple(rows),
        notes=(
            f"Answers read as {benchmark}'s released evaluation code reads them "
            "(PROTOCOL §10); — where the run asked no such question.",
        ),
    )


def _number(value: float, key: str) -> str:
    return _signed(value) if key.endswith("Δ") else _fmt(value)


@dataclass(frozen=True)
class BoxReport:
    """A box experiment's store as its benchmark's table reads it."""

    benchmark: Benchmark
    runs: tuple[BoxRun, ...]  # complete runs only: the papers' denominators are every question
    incomplete: tuple[str, ...]  # one line for each run still missing answers
    readings: tuple[tuple[str, str], ...] = ()  # (configuration, reader and convention)

    def table(self) -> ReportTable:
        table = box_benchmark_table(self.benchmark, self.runs)
        read = "; ".join(f"{name}: {reading}" for name, reading in self.readings)
        outdated = ", ".join(name for name, reading in self.readings if _outdated(reading))
        notes = (
            *table.notes,
            *([f"Read by: {read}."] if read else []),
            *(
                [
                    f"{outdated}: read by an earlier revision of the reader (PROTOCOL §10); run "
                    "the experiment again to read the stored answers anew — no call is sent."
                ]
                if outdated
                else []
            ),
            *self.incomplete,
        )
        return ReportTable(table.name, table.title, table.columns, table.rows, notes)


def _outdated(reading: str) -> bool:
    """Whether ``reading`` (as a store records it: ``refbench-pro reader r2, norm1000``) names
    an earlier revision of its reader than this code's."""
    reader = BOX_READERS.get(reading.split(" reader", 1)[0])
    return reader is not None and not reading.startswith(f"{reader.label},")


def load_box_report(con: duckdb.DuckDBPyConnection, where: Path | str) -> BoxReport:
    """The scored answers of a box experiment (the latest run's grid), a run per configuration
    and reasoning setting. A run with questions not yet scored is left out and named: a
    missing answer is not an "absent"."""
    questions = read_box_set(con, where)
    scored: dict[tuple[str, str], dict[str, JudgedQuestion]] = defaultdict(dict)
    asked: dict[tuple[str, str], int] = defaultdict(int)
    rows = con.execute(
        "SELECT g.configuration, g.condition, g.qid, s.box_iou, s.says_absent "
        "FROM grid g LEFT JOIN scores s USING (configuration, condition, budget, qid) "
        "ORDER BY g.configuration, g.condition, g.qid"
    ).fetchall()
    for configuration, condition, qid, iou, says_absent in rows:
        asked[(configuration, condition)] += 1
        if says_absent is None:  # not scored yet (every box score says yes or no)
            continue
        q = questions.question(qid)
        verdict = BoxJudgement(None, bool(says_absent), float(iou or 0.0))
        scored[(configuration, condition)][qid] = JudgedQuestion(
            q.qid, q.dimension, q.subdimension, q.distractors, q.rejection, verdict
        )
    runs, incomplete = [], []
    for (configuration, condition), count in sorted(
        asked.items(), key=lambda item: (item[0][0], REASONINGS.index(reasoning_named(item[0][1])))
    ):
        judged = scored[(configuration, condition)]
        if len(judged) < count:
            incomplete.append(
                f"{configuration} ({condition}): {len(judged):,} of {count:,} questions scored; "
                "left out until its run completes"
            )
            continue
        ordered = [judged[q.qid] for q in questions.questions if q.qid in judged]
        runs.append(BoxRun(configuration, reasoning_named(condition), ordered))
    readings = con.execute(
        "SELECT name, reading FROM configurations WHERE reading IS NOT NULL "
        "AND name IN (SELECT DISTINCT configuration FROM grid) ORDER BY name"
    ).fetchall()
    return BoxReport(questions.benchmark, tuple(runs), tuple(incomplete), tuple(readings))
