"""A box benchmark's questions in the experiment file, and the requests made of them."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conditions import (
    BOX,
    FILE_LOADERS,
    BoxRequestBuilder,
    BoxSet,
    BoxSetMismatchError,
    BoxTask,
    CohortMismatchError,
    Configuration,
    DataFileError,
    Decoding,
    PolygonTask,
    Thinking,
    Transport,
    VariantCache,
    box_benchmark_prompt,
    box_protocol_hash,
    box_set,
    generate_box_benchmark,
    load_box_set,
    plan,
    plan_boxes,
    protocol_hash,
    reasoning_decoding,
    sent_scale,
    stored_box_set_hash,
    task_of,
    write_box_set,
    write_cohort,
)
from conditions._cohort import Cohort


@pytest.fixture
def refbench(tmp_path: Path) -> tuple[BoxSet, Path]:
    file, images = generate_box_benchmark("refbench-pro", tmp_path / "data", questions=12)
    questions = FILE_LOADERS["refbench-pro"](file, images)
    return box_set("refbench-pro", questions, images, file.name), images


def test_every_image_is_bound_to_its_content(refbench: tuple[BoxSet, Path]) -> None:
    questions, images = refbench
    for q in questions.questions:
        assert q.image_sha256 is not None and len(q.image_sha256) == 64
    (images / questions.questions[0].image_file).write_bytes(b"changed")
    rebound = box_set("refbench-pro", questions.questions, images)
    assert rebound.hash != questions.hash  # an image's content is part of the set
    with pytest.raises(DataFileError, match="cannot read image"):
        box_set("refbench-pro", questions.questions, images / "elsewhere")
    with pytest.raises(ValueError, match="appears twice"):
        BoxSet("refbench-pro", questions.questions + questions.questions[:1])
    with pytest.raises(ValueError, match="has no image hash"):
        BoxSet("refbench-pro", tuple(q.model_copy(update={"image_sha256": None})
                                     for q in questions.questions))  # fmt: skip


def test_the_store_keeps_one_box_set_whole(refbench: tuple[BoxSet, Path], tmp_path: Path) -> None:
    questions, _ = refbench
    path = tmp_path / "exp.duckdb"
    assert stored_box_set_hash(path) is None
    assert write_box_set(path, questions) is True
    assert write_box_set(path, questions) is False  # the same set again: nothing to do
    assert stored_box_set_hash(path) == questions.hash
    loaded = load_box_set(path)
    assert loaded == questions and loaded.hash == questions.hash
    assert loaded.source == "annotations_test.jsonl"
    rejection = next(q for q in loaded.questions if q.rejection)
    assert rejection.box is None
    other = BoxSet("refbench-pro", questions.questions[:5])
    with pytest.raises(BoxSetMismatchError, match="already holds box set"):
        write_box_set(path, other)


def test_a_store_holds_a_cohort_or_a_box_set_never_both(
    refbench: tuple[BoxSet, Path], small_cohort: Cohort, tmp_path: Path
) -> None:
    questions, _ = refbench
    boxes, polygons = tmp_path / "boxes.duckdb", tmp_path / "polygons.duckdb"
    write_box_set(boxes, questions)
    with pytest.raises(CohortMismatchError, match="holds a box benchmark's questions"):
        write_cohort(boxes, small_cohort)
    write_cohort(polygons, small_cohort)
    with pytest.raises(BoxSetMismatchError, match="holds a GroundBench cohort"):
        write_box_set(polygons, questions)


def test_an_edited_box_set_is_refused_in_one_line(
    refbench: tuple[BoxSet, Path], tmp_path: Path
) -> None:
    questions, _ = refbench
    path = tmp_path / "exp.duckdb"
    write_box_set(path, questions)
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE box_questions SET expression = 'another thing' WHERE rowid = 0")
    with pytest.raises(DataFileError, match="no longer matches its hash") as caught:
        load_box_set(path)
    assert "\n" not in str(caught.value)
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE box_questions SET width = -3 WHERE rowid = 1")
    with pytest.raises(DataFileError, match="cannot read its box set"):
        load_box_set(path)


def test_the_sent_scale_is_the_cap_of_the_full_image(refbench: tuple[BoxSet, Path]) -> None:
    questions, _ = refbench
    scales = {(q.width, q.height): sent_scale(q) for q in questions.questions}
    assert scales[(1500, 1000)] == pytest.approx(1024 / 1500)
    assert all(s == 1.0 for (w, h), s in scales.items() if max(w, h) <= 1024)


def _configuration(
    name: str = "m", model: str = "qwen3-vl-plus", **update: object
) -> Configuration:
    settings: dict[str, object] = {"name": name, "provider": "qwen", "model": model,
                                   "conditions": ("direct", "cot")}  # fmt: skip
    settings.update(update)
    return Configuration.model_validate(settings)


def test_direct_turns_thinking_off_and_cot_on() -> None:
    off = Decoding(thinking=Thinking(mode="off"))
    high = Decoding(thinking=Thinking(mode="on", effort="high"), temperature=0.2)
    assert reasoning_decoding("direct", high).thinking.mode == "off"
    assert reasoning_decoding("direct", high).temperature == 0.2  # the rest is the model's
    assert reasoning_decoding("cot", off).thinking == Thinking(mode="on")  # provider default
    assert reasoning_decoding("cot", high).thinking == high.thinking  # its own, kept


def test_a_configuration_runs_polygon_conditions_or_reasoning_settings_not_both() -> None:
    assert _configuration().conditions == ("direct", "cot")
    with pytest.raises(ValueError, match=r"unknown conditions \['base'\]; known: direct, cot"):
        _configuration(conditions=("cot", "base"))


def test_requests_ask_as_the_benchmark_asks_once_each(
    refbench: tuple[BoxSet, Path], tmp_path: Path
) -> None:
    questions, images = refbench
    configuration = _configuration()
    keys = list(plan_boxes(questions, [configuration, _configuration("n")]))
    assert len(keys) == 2 * 2 * len(questions.questions)
    assert {k.budget for k in keys} == {BOX}
    builder = BoxRequestBuilder(questions, images, VariantCache(tmp_path / "variants"))
    mine = [k for k in keys if k.configuration == "m"]
    requests = [builder.build(k, configuration) for k in mine]
    for key, request in zip(mine, requests, strict=True):
        q = questions.question(key.qid)
        assert request.prompt == box_benchmark_prompt("refbench-pro", q.expression, key.condition)  # type: ignore[arg-type]
        assert request.attempts == 1 and request.parsing == "refbench-pro"
        assert request.image is not None and max(request.image.width, request.image.height) == max(
            round(q.width * sent_scale(q)), round(q.height * sent_scale(q))
        )
        assert request.decoding.thinking.mode == ("off" if key.condition == "direct" else "on")
    # The same prompt and image with thinking off and on are two requests.
    by_qid: dict[str, set[str]] = {}
    for r in requests:
        by_qid.setdefault(r.key.qid, set()).add(r.fingerprint)
    assert all(len(f) == 2 for f in by_qid.values())
    with pytest.raises(KeyError, match="unknown box condition 'base'"):
        builder.build(
            mine[0].__class__(configuration="m", condition="base", budget=BOX, qid=mine[0].qid),
            configuration,
        )


def test_the_box_protocol_hash_covers_the_questions_and_the_model_not_the_transport(
    refbench: tuple[BoxSet, Path],
) -> None:
    questions, _ = refbench
    base = box_protocol_hash(questions, _configuration())
    assert box_protocol_hash(questions, _configuration("renamed")) == base
    faster = _configuration(transport=Transport(requests_per_minute=9000))
    assert box_protocol_hash(questions, faster) == base
    assert box_protocol_hash(questions, _configuration(model="qwen3-vl-max")) != base
    fewer = BoxSet("refbench-pro", questions.questions[:-1])
    assert box_protocol_hash(fewer, _configuration()) != base


def test_either_task_is_asked_through_one_interface(
    refbench: tuple[BoxSet, Path], small_cohort: Cohort, tmp_path: Path
) -> None:
    questions, images = refbench
    configuration = _configuration()
    boxes, polygons = task_of(questions), task_of(small_cohort)
    assert isinstance(boxes, BoxTask) and isinstance(polygons, PolygonTask)
    assert boxes.fixed_attempts == 1 and polygons.fixed_attempts is None  # §10; §6's rule
    assert boxes.protocol_hash(configuration) == box_protocol_hash(questions, configuration)
    polygon_configuration = configuration.model_copy(update={"conditions": ("base",)})
    assert polygons.protocol_hash(polygon_configuration) == protocol_hash(
        small_cohort.hash, polygon_configuration
    )
    assert list(boxes.plan([configuration], budgets=(8,), box=False)) == list(
        plan_boxes(questions, [configuration])
    )  # the polygon grid's budgets mean nothing to a box benchmark
    assert list(polygons.plan([polygon_configuration], (8, 16), box=False)) == list(
        plan(small_cohort, [polygon_configuration], (8, 16), box=False)
    )
    cache = VariantCache(tmp_path / "variants")
    key = next(boxes.plan([configuration]))
    assert boxes.builder(images, cache).build(key, configuration) == BoxRequestBuilder(
        questions, images, cache
    ).build(key, configuration)
