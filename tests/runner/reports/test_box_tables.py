"""Each box benchmark's main table, from simulated answers judged by its own protocol."""

from __future__ import annotations

import random

import pytest

from conditions import Benchmark, BoxQuestion
from runner.reports import BoxRun, box_benchmark_table, render
from runner.simulator import BoxBehaviour, box_answer
from scoring import BOX_PROTOCOLS, JudgedQuestion, judge_box

DIMENSIONS: dict[Benchmark, tuple[str, ...]] = {
    "ref-adv": ("human-authored", "llm-authored"),
    "groundingme": ("Discriminative", "Spatial", "Limited", "Rejection"),
    "refbench-pro": ("attribute", "position", "interaction", "relation", "commonsense", "reject"),
}
REJECTING = {"Rejection", "reject"}


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
        verdict = judge_box(said.text, box, BOX_PROTOCOLS[benchmark], "norm1000", 640, 480)
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
