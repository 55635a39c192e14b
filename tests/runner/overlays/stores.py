"""A small store of real answers, scored by the run's own scorer: what the overlay, page and
browser tests draw. Every kind of answer a gallery sorts into is in it, and the bad input the
issue names (10⁵ vertices, 1e308, non-finite values), and an error."""

from __future__ import annotations

from pathlib import Path

from conditions import BOX, Cohort, write_cohort
from runner.distributed import Scorer
from runner.store import GridRow, Registration, ResponseRow, Store
from tests.runner.store.rows import attempt_row

CONFIGURATIONS = ("gemini", "qwen")
CONDITIONS = ("base", "greyscale", "half-res", "no-image", "cue-spatial-wrong")
BUDGETS = (8, 16)
QUESTIONS = 6


def answer_kinds(cohort: Cohort, qid: str, n: int) -> dict[str, str]:
    """One answer text of each kind for question ``qid`` at budget ``n``."""
    q = cohort.question(qid)
    target = cohort.target(qid, n)
    units = [round(v * 999 / size) for x, y in target for v, size in ((x, q.width), (y, q.height))]
    good = "[" + ", ".join(str(u) for u in units) + "]"
    square = [100, 100, 400, 100, 400, 400, 100, 400]
    bowtie = [100, 100, 400, 400, 400, 100, 100, 400]
    pad = [(500 + 7 * k) % 999 for k in range(2 * n - 8)]
    return {
        "good": good,
        "bowtie": " ".join(map(str, bowtie + pad)),
        "twice": " ".join(map(str, (square * (2 * n // 8))[: 2 * n])),
        "short": "The outline is 10 20 30 40 50 60.",
        "refusal": "I'm sorry, I can't identify that object in the image.",
        "huge": "[" + ", ".join(["1e308", "0"] + [str(u) for u in units[2:]]) + "]",
        "many": " ".join(str(k % 999) for k in range(200_000)),
        "nonfinite": "[" + ", ".join(["nan"] + [str(u) for u in units[1:]]) + "]",
        "decimal": "[" + ", ".join(f"{u}.5" for u in units) + "]",
        "script": "<script>alert(1)</script> " + good,
    }


def write_scored_store(path: Path, cohort: Cohort, images: Path | None = None) -> list[str]:
    """Write a store of ``cohort``'s first :data:`QUESTIONS` questions with every kind of
    answer, scored, recording ``images`` as its images folder; returns their qids."""
    write_cohort(path, cohort)
    qids = [q.qid for q in cohort.questions[:QUESTIONS]]
    with Store(path) as store:
        grid = [
            GridRow(configuration=c, condition=k, budget=n, qid=qid, attempts=3)
            for c in CONFIGURATIONS
            for k in CONDITIONS
            for n in (*BUDGETS, BOX)
            for qid in qids
            if n != BOX or k == "base"
        ]
        store.register(
            [Registration(c, "p" * 64, "qwen", "m", 3, "{}") for c in CONFIGURATIONS],
            grid,
            images=images,
        )
        rows = []
        for i, row in enumerate(grid):
            rows.extend(_attempts(cohort, row, i))
        store.write_responses(rows)
        scorer = Scorer(cohort)
        while jobs := store.score_queue.take(512):
            store.repository.write_scores(*scorer.score(jobs))
    return qids


def _attempts(cohort: Cohort, row: GridRow, i: int) -> list[ResponseRow]:
    def attempt(
        k: int, text: str = "", parseable: bool = True, outcome: str = "answer"
    ) -> ResponseRow:
        return attempt_row(
            row.qid, k, outcome=outcome, parseable=parseable, answer=text,
            configuration=row.configuration, condition=row.condition, budget=row.budget,
        )  # fmt: skip

    if i % 7 == 3:  # the request errored: stored as an error, no answer
        return [attempt(0, outcome="transient")]
    if row.budget == BOX:
        return [attempt(0, ["[100, 120, 600, 700]", "no box"][i % 2], parseable=i % 2 == 0)]
    kinds = answer_kinds(cohort, row.qid, row.budget)
    name, text = list(kinds.items())[i % len(kinds)]
    parseable = name in ("good", "bowtie", "twice", "huge", "decimal", "script")
    if parseable or i % 2:
        return [attempt(0, text, parseable)]
    # An unparseable answer is asked again, and the second attempt parses.
    return [attempt(0, text, parseable), attempt(1, kinds["good"])]
