"""Each box benchmark's main table, from simulated answers judged by its own reader."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from conditions import (
    BENCHMARK_DIMENSIONS as DIMENSIONS,
)
from conditions import (
    FILE_LOADERS,
    Benchmark,
    BoxQuestion,
    box_set,
    generate_box_benchmark,
    write_box_set,
)
from conditions import (
    REJECTION_DIMENSIONS as REJECTING,
)
from runner.reports import BoxRun, box_benchmark_table, load_box_report, render
from runner.simulator import BoxBehaviour, box_answer
from runner.store import GridRow, Registration, ScoreRow, Store, read_only
from scoring import BOX_READERS, JudgedQuestion, judge_box
from tests.runner.store.rows import attempt_row


def _run(benchmark: Benchmark, behaviour: BoxBehaviour, thinking: bool) -> list[JudgedQuestion]:
    rng = random.Random(7)
    judged = []
    for k in range(120):
        dimension = DIMENSIONS[benchmark][k % len(DIMENSIONS[benchmark])]
        box = None if dimension in REJECTING else (40.0 + k, 30.0, 300.0 + k, 260.0)
        q = BoxQuestion(qid=f"q{k}", benchmark=benchmark, image_file="a.jpg", width=640,
                        height=480, expression="the cup", box=box, dimension=dimension,
                        distractors=2 + k % 8)  # fmt: skip
        said = box_answer(q, benchmark, "norm1000", behaviour, rng, thinking=thinking)
        verdict = judge_box(said.text, box, BOX_READERS[benchmark], "norm1000", 640, 480)
        judged.append(JudgedQuestion(q.qid, dimension, None, q.distractors, box is None, verdict))
    return judged


@pytest.mark.parametrize(
    ("benchmark", "columns"),
    [
        ("ref-adv", ("Acc0.5", "Acc0.75", "Acc0.9", "mAcc", "4–6", "Δ", "≥7", "Δ")),
        ("groundingme", ("Discriminative", "Spatial", "Limited", "Rejection", "Total")),
        ("refbench-pro", ("Acc_p", "Acc_o", "Attribute", "Position", "Interaction", "Acc_API",
                          "Relation", "Commonsense", "Reject", "Acc_RC")),
    ],
)  # fmt: skip
def test_each_table_has_the_papers_columns_and_a_row_per_run(
    benchmark: Benchmark, columns: tuple[str, ...]
) -> None:
    perfect = BoxBehaviour(edge_noise=0.0, wrong_object=0.0, hallucinate=0.0,
                           hallucinate_thinking=0.0, false_absent=0.0)  # fmt: skip
    runs = [
        BoxRun("simulated-perfect", "direct", _run(benchmark, perfect, False)),
        BoxRun("simulated", "cot", _run(benchmark, BoxBehaviour(), True)),
    ]
    table = box_benchmark_table(benchmark, runs)
    assert table.columns == ("Model", "CoT?", *columns)
    perfect_row, noisy_row = table.rows
    assert perfect_row[:2] == ("simulated-perfect", "✗") and noisy_row[1] == "✓"
    values = dict(zip(table.columns[2:], perfect_row[2:], strict=True))
    for column, value in values.items():
        if column != "Δ":
            assert value == "100.0", (column, value)  # a perfect model scores 100 everywhere
    noisy = dict(zip(table.columns[2:], noisy_row[2:], strict=True))
    rejection = {"groundingme": "Rejection", "refbench-pro": "Reject"}.get(benchmark)
    if rejection:
        assert float(noisy[rejection]) < 40.0  # the simulated model seldom says absent
    markdown = render(table, "markdown")
    assert markdown.count("\n|") >= 3 and "simulated-perfect" in markdown


def test_a_store_reports_complete_runs_and_names_the_others(tmp_path: Path) -> None:
    file, images = generate_box_benchmark("groundingme", tmp_path / "data", questions=8)
    questions = box_set("groundingme", FILE_LOADERS["groundingme"](file, images), images)
    path = tmp_path / "exp.duckdb"
    write_box_set(path, questions)
    qids = [q.qid for q in questions.questions]
    grid = [
        GridRow(configuration=c, condition=r, budget=0, qid=q, attempts=1)
        for c in ("a", "b")
        for r in ("direct", "cot")
        for q in qids
    ]
    answered = [g for g in grid if not (g.configuration == "b" and g.condition == "cot")]
    answered += [
        GridRow(configuration="b", condition="cot", budget=0, qid=qids[0], attempts=1)
    ]  # one of b's cot answers is in
    with Store(path) as s:
        s.register(
            [Registration(c, "p", "qwen", "m", 1, "{}", f"groundingme reader, {convention}")
             for c, convention in (("a", "norm1000"), ("b", "pixels"))],
            grid,
        )  # fmt: skip
        s.write_responses(
            [attempt_row(g.qid, configuration=g.configuration, condition=g.condition, budget=0)
             for g in answered]
        )  # fmt: skip
        jobs = s.score_queue.take(100)
        # Every answer right: the box where there is one, "absent" where there is none.
        rejection = {j.qid: questions.question(j.qid).rejection for j in jobs}
        s.repository.write_scores(
            [ScoreRow.of(j.key, parseable=True, box_iou=None if rejection[j.qid] else 1.0,
                         says_absent=rejection[j.qid]) for j in jobs],
            [],
        )  # fmt: skip
    with read_only(path) as con:
        report = load_box_report(con, path)
    assert report.benchmark == "groundingme"
    assert [(r.configuration, r.reasoning) for r in report.runs] == [
        ("a", "direct"), ("a", "cot"), ("b", "direct"),
    ]  # fmt: skip
    assert report.incomplete == (
        "b (cot): 1 of 8 questions scored; left out until its run completes",
    )
    table = report.table()
    assert table.notes[-3:] == (
        "Read by: a: groundingme reader, norm1000; b: groundingme reader, pixels.",
        "a, b: read by an earlier revision of the reader (PROTOCOL §10); run the experiment "
        "again to read the stored answers anew — no call is sent.",
        report.incomplete[0],
    )  # a store scored before readers carried a revision
    assert all(row[-1] == "100.0" for row in table.rows)  # Total: every answer right
