"""A box benchmark's path without Ray: released file → questions → requests → the simulator
over HTTP → the benchmark's reader → score rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from conditions import (
    FILE_LOADERS,
    Benchmark,
    BoxRequestBuilder,
    BoxSet,
    Configuration,
    Transport,
    VariantCache,
    box_set,
    generate_box_benchmark,
    plan_boxes,
)
from runner.backends import ApiKey, AttemptRecord, Client, ask
from runner.distributed import BoxScorer
from runner.simulator import Behaviour, BoxBehaviour, SimSpec, Simulator, serving
from runner.store import ScoreJob, ScoreRow
from scoring import Convention

KEY = "sk-groundbench-test-0123456789abcdef"
# A model that is always right: every box on target, every rejection answered "absent".
EXACT = BoxBehaviour(
    edge_noise=0.0, wrong_object=0.0, hallucinate=0.0, hallucinate_thinking=0.0, false_absent=0.0
)


def _questions(benchmark: Benchmark, folder: Path) -> tuple[BoxSet, Path]:
    file, images = generate_box_benchmark(benchmark, folder, questions=12)
    return box_set(benchmark, FILE_LOADERS[benchmark](file, images), images, file.name), images


def _configuration(url: str, provider: str = "qwen") -> Configuration:
    return Configuration(
        name="m",
        provider=provider,
        model="qwen3-vl-plus" if provider == "qwen" else "gemini-2.5-pro",
        conditions=("direct", "cot"),
        transport=Transport(base_url=url, requests_per_minute=60000.0, max_concurrency=8),
    )


def _answers(
    questions: BoxSet, images: Path, tmp: Path, behaviour: BoxBehaviour, provider: str = "qwen"
) -> list[AttemptRecord]:
    cache = VariantCache(tmp / "variants")
    spec = SimSpec(seed=3, behaviour=Behaviour(boxes=behaviour))
    sim = Simulator(questions, images, cache, spec)

    async def main() -> list[AttemptRecord]:
        records: list[AttemptRecord] = []
        async with serving(sim) as url:
            configuration = _configuration(url, provider)
            builder = BoxRequestBuilder(questions, images, cache)
            requests = [
                builder.build(k, configuration) for k in plan_boxes(questions, [configuration])
            ]
            async with Client(configuration, ApiKey(KEY)) as backend:
                await asyncio.gather(*(ask(backend, r, records.append) for r in requests))
        return records

    return asyncio.run(main())


def _scores(
    questions: BoxSet, records: list[AttemptRecord], convention: Convention
) -> list[ScoreRow]:
    jobs = [
        ScoreJob(
            configuration=r.configuration,
            condition=r.condition,
            budget=r.budget,
            qid=r.qid,
            attempt=r.attempt,
            answer=r.answer or "",
        )
        for r in records
    ]
    scores, controls = BoxScorer(questions, {"m": convention}).score(jobs)
    assert controls == []
    return scores


@pytest.mark.parametrize("benchmark", ["ref-adv", "groundingme", "refbench-pro"])
def test_an_exact_model_is_read_right_on_every_question(
    benchmark: Benchmark, tmp_path: Path
) -> None:
    questions, images = _questions(benchmark, tmp_path)
    records = _answers(questions, images, tmp_path, EXACT)
    # One attempt per question and reasoning setting, each an answer its reader finds a box
    # in (or, for RefBench-PRO's absent statement, none: the only unparseable answers).
    assert sorted((r.condition, r.qid) for r in records) == sorted(
        (c, q.qid) for c in ("direct", "cot") for q in questions.questions
    )
    assert all(r.outcome == "answer" and r.attempt == 0 for r in records)
    for r in records:
        q = questions.question(r.qid)
        assert r.parseable == (not q.rejection or benchmark != "refbench-pro")
    parsed = {(r.condition, r.qid): r.parseable for r in records}
    for row in _scores(questions, records, "norm1000"):
        q = questions.question(row.qid)
        # the scorer's reading is the one at asking
        assert row.parseable == parsed[(row.condition, row.qid)]
        if q.rejection:
            assert row.box_iou is None and row.says_absent is True
        else:
            assert row.box_iou is not None and row.box_iou > 0.97 and row.says_absent is False


@pytest.mark.parametrize("convention", ["norm999", "norm1000", "unit", "pixels"])
def test_each_convention_reads_back_to_the_true_box_and_no_other_does(
    convention: Convention, tmp_path: Path
) -> None:
    questions, images = _questions("refbench-pro", tmp_path)
    records = _answers(
        questions, images, tmp_path, EXACT.model_copy(update={"convention": convention})
    )
    targets = [r for r in records if not questions.question(r.qid).rejection]
    # Images wider than the 1,024-pixel cap are sent scaled: "pixels" are the sent image's.
    assert any(questions.question(r.qid).width > 1024 for r in targets)
    right = [row.box_iou or 0.0 for row in _scores(questions, targets, convention)]
    assert min(right) > 0.97
    for other in ("norm999", "norm1000", "unit", "pixels"):
        if other in (convention, {"norm999": "norm1000", "norm1000": "norm999"}.get(convention)):
            continue  # 0–999 and 0–1000 differ by 0.1%: read either way, nearly the same box
        wrong = [row.box_iou or 0.0 for row in _scores(questions, targets, other)]
        assert sum(v > 0.5 for v in wrong) < len(wrong) / 2


def test_gemini_wire_and_thinking_reach_the_simulated_model(tmp_path: Path) -> None:
    questions, images = _questions("groundingme", tmp_path)
    records = _answers(questions, images, tmp_path, EXACT, provider="gemini")
    reasoned = {r.condition: bool(r.reasoning) for r in records}
    assert reasoned == {"direct": False, "cot": True}  # thinking off, then on


def test_a_hosted_model_that_never_says_absent_scores_no_rejection(tmp_path: Path) -> None:
    questions, images = _questions("groundingme", tmp_path)
    always = EXACT.model_copy(update={"hallucinate": 1.0, "hallucinate_thinking": 1.0})
    rows = _scores(questions, _answers(questions, images, tmp_path, always), "norm1000")
    rejections = [row for row in rows if questions.question(str(row[3])).rejection]
    assert rejections and not any(row[-1] for row in rejections)
