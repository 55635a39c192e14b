"""The simulator on the box benchmarks, read back by each benchmark's own reader."""

from __future__ import annotations

import random

import pytest

from conditions import BENCHMARKS, Benchmark, BoxQuestion
from runner.simulator import BoxBehaviour, box_answer
from scoring import BOX_READERS, Convention, judge_box, rejection_accuracy

CONVENTIONS: tuple[Convention, ...] = ("norm999", "norm1000", "unit", "pixels")
PERFECT = BoxBehaviour(edge_noise=0.0, wrong_object=0.0, hallucinate=0.0,
                       hallucinate_thinking=0.0, false_absent=0.0)  # fmt: skip


def _question(benchmark: Benchmark, box: tuple[float, float, float, float] | None) -> BoxQuestion:
    return BoxQuestion(qid="q", benchmark=benchmark, image_file="a.jpg", width=640, height=480,
                       expression="the red cup", box=box, dimension="d")  # fmt: skip


@pytest.mark.parametrize("benchmark", BENCHMARKS)
@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_perfect_answer_reads_back_as_the_true_box_or_absent(
    benchmark: Benchmark, convention: Convention
) -> None:
    reader = BOX_READERS[benchmark]
    truth = (64.0, 48.0, 320.0, 400.0)
    rng = random.Random(0)
    said = box_answer(_question(benchmark, truth), benchmark, convention, PERFECT, rng)
    judged = judge_box(said.text, truth, reader, convention, 640, 480)
    assert judged.iou > 0.99 and not judged.says_absent, said.text
    said = box_answer(_question(benchmark, None), benchmark, convention, PERFECT, rng)
    assert judge_box(said.text, None, reader, convention, 640, 480).says_absent, said.text


def test_a_half_resolution_image_is_answered_in_its_own_pixels() -> None:
    truth = (64.0, 48.0, 320.0, 400.0)
    said = box_answer(_question("refbench-pro", truth), "refbench-pro", "pixels", PERFECT,
                      random.Random(0), sent_scale=0.5)  # fmt: skip
    assert "[32, 24, 160, 200]" in said.text
    judged = judge_box(said.text, truth, BOX_READERS["refbench-pro"], "pixels", 640, 480, 0.5)
    assert judged.iou == pytest.approx(1.0)


def test_by_default_it_rarely_rejects_and_reasoning_helps_a_little() -> None:
    rng = random.Random(1)
    reader = BOX_READERS["groundingme"]

    def rejection(thinking: bool) -> float:
        judged = []
        for _ in range(2000):
            said = box_answer(_question("groundingme", None), "groundingme", "norm1000",
                              BoxBehaviour(), rng, thinking=thinking)  # fmt: skip
            judged.append(judge_box(said.text, None, reader, "norm1000", 640, 480))
        return rejection_accuracy(judged)

    direct, thinking = rejection(False), rejection(True)
    assert 2.0 < direct < 8.0 and 10.0 < thinking < 20.0  # 5% and 15% expected


def test_reasoning_text_holds_numbers_the_answer_must_not_be_read_from() -> None:
    said = box_answer(_question("ref-adv", (10, 10, 100, 100)), "ref-adv", "pixels", PERFECT,
                      random.Random(0), thinking=True)  # fmt: skip
    assert "[10, 10, 50, 50]" in said.reasoning and "[10, 10, 50, 50]" not in said.text
