"""The box benchmarks' released files, in small hand-made copies of their formats."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from conditions import (
    DataFileError,
    embedded_name,
    read_groundingme,
    read_ref_adv,
    read_refbench_pro,
)


def _jpeg(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 200)).save(out, format="JPEG")
    return out.getvalue()


def _bomb() -> bytes:
    """A 20,000 × 20,000 PNG of one colour: 400 megapixels in a few hundred KB."""
    out = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(out, format="PNG")
    return out.getvalue()


_BOMB = _bomb()


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _ref_adv_rows() -> list[dict[str, Any]]:
    return [
        {"image": {"bytes": _jpeg(64, 48), "path": "coco_1.jpg"}, "file_name": "coco_1.jpg",
         "normal_caption": "the cup that is not empty", "solution": [4.0, 5.0, 30.0, 40.0],
         "width": 64, "height": 48, "image_source": "coco", "human_authored": True,
         "use_negation": True, "distractors": "[3, 7, 9]"},
        {"image": {"bytes": _jpeg(32, 32), "path": "oi_2.jpg"}, "file_name": "oi_2.jpg",
         "normal_caption": "the taller chair", "solution": [0.0, 0.0, 32.0, 32.0],
         "width": 32, "height": 32, "image_source": "openimages", "human_authored": False,
         "use_negation": False, "distractors": "5"},
    ]  # fmt: skip


def test_ref_adv_rows_become_questions_and_their_images_files(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "ref_adv_s.parquet", _ref_adv_rows())
    questions = read_ref_adv(path, tmp_path / "images")
    first, second = questions
    assert first.qid == "ref-adv:1" and first.box == (4.0, 5.0, 30.0, 40.0)
    assert first.dimension == "human-authored" and first.subdimension == "coco"
    assert first.distractors == 3 and first.negation is True and not first.rejection
    assert second.dimension == "llm-authored" and second.distractors == 5  # a count
    rows = _ref_adv_rows()
    for question, row in zip(questions, rows, strict=True):  # kept under their bytes' hash
        blob = row["image"]["bytes"]
        assert question.image_file == embedded_name(blob, row["file_name"])
        assert (tmp_path / "images" / question.image_file).read_bytes() == blob
    assert len(list((tmp_path / "images" / "embedded").iterdir())) == 2


def test_groundingme_rejections_have_no_box(tmp_path: Path) -> None:
    rows = [
        {"id": 7, "image": {"bytes": _jpeg(40, 30), "path": None}, "description": "the red mug",
         "bbox": [1.0, 2.0, 20.0, 25.0], "subtask_l1": "Discriminative",
         "subtask_l2": "Appearance", "width": 40, "height": 30},
        {"id": 8, "image": {"bytes": _jpeg(40, 30), "path": None},
         "description": "the purple giraffe", "bbox": [0.0, 0.0, 0.0, 0.0],
         "subtask_l1": "Rejection", "subtask_l2": "Appearance", "width": 40, "height": 30},
    ]  # fmt: skip
    questions = read_groundingme(_parquet(tmp_path / "test.parquet", rows), tmp_path / "img")
    assert [q.qid for q in questions] == ["groundingme:7", "groundingme:8"]
    assert questions[0].box == (1.0, 2.0, 20.0, 25.0) and questions[0].subdimension == "Appearance"
    assert questions[1].rejection and questions[1].dimension == "Rejection"
    # The two rows embed the same bytes: one file serves both.
    assert questions[0].image_file == questions[1].image_file
    assert [p.name for p in (tmp_path / "img" / "embedded").iterdir()] == [
        questions[0].image_file.removeprefix("embedded/")
    ]


def _refbench(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    (images / "a.jpg").write_bytes(_jpeg(50, 40))
    path = tmp_path / "annotations_6000.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_refbench_pro_tasks_and_its_reject_task(tmp_path: Path) -> None:
    path = _refbench(tmp_path, [
        {"image_path": "a.jpg", "expression": "the second lamp from the left",
         "bbox": [10, 10, 20, 30], "task_type": "Position", "width": 50, "height": 40},
        {"image_path": "a.jpg", "expression": "the blue dog", "bbox": [0, 0, 0, 0],
         "task_type": "reject", "width": 50, "height": 40},
    ])  # fmt: skip
    position, reject = read_refbench_pro(path, tmp_path / "images")
    assert position.dimension == "position" and position.box == (10.0, 10.0, 20.0, 30.0)
    assert reject.rejection and reject.qid == "refbench-pro:2"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"solution": [30.0, 5.0, 4.0, 40.0]}, "row 1: box [30.0, 5.0, 4.0, 40.0] is empty"),
        ({"solution": [4.0, 5.0, 300.0, 40.0]}, "leaves the 64×48 image"),
        ({"width": 65}, "row 1: image is 64×48, the row says 65×48"),
        ({"width": 10**12}, "row 1: width: Input should be less than or equal to 1000000"),
        ({"normal_caption": ""}, "row 1: expression: String should have at least 1 character"),
        ({"image": {"bytes": b"not an image", "path": "x.jpg"}}, "image bytes: not a readable"),
        ({"image": {"bytes": _BOMB, "path": "x.png"}}, "above the 64-megapixel cap"),
    ],
)
def test_a_bad_row_is_one_line_and_writes_nothing(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    rows = _ref_adv_rows()
    rows[0] = {**rows[0], **change}
    path = _parquet(tmp_path / "bad.parquet", rows)
    with pytest.raises(DataFileError) as caught:
        read_ref_adv(path, tmp_path / "images")
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text
    assert not (tmp_path / "images").exists()  # not one image written


def test_embedded_images_of_one_name_and_other_bytes_are_kept_apart(tmp_path: Path) -> None:
    first, second = _ref_adv_rows()
    rows = [  # two folders' 0001.jpg, and a name that is the images folder itself
        {**first, "image": {"bytes": _jpeg(64, 48), "path": "train/0001.jpg"}},
        {**second, "image": {"bytes": _jpeg(32, 32), "path": "val/0001.jpg"}},
        {**second, "id": 3, "image": {"bytes": _jpeg(33, 32), "path": "."}, "width": 33,
         "solution": [0.0, 0.0, 33.0, 32.0]},
    ]  # fmt: skip
    questions = read_ref_adv(_parquet(tmp_path / "f.parquet", rows), tmp_path / "images")
    assert len({q.image_file for q in questions}) == 3
    for question, row in zip(questions, rows, strict=True):  # each asked on its own image
        assert (tmp_path / "images" / question.image_file).read_bytes() == row["image"]["bytes"]


def test_a_missing_field_a_broken_line_or_a_duplicate_is_named(tmp_path: Path) -> None:
    good = {"image_path": "a.jpg", "expression": "x", "bbox": [1, 1, 2, 2],
            "task_type": "attribute", "width": 50, "height": 40, "id": 1}  # fmt: skip
    cases = [
        ([{k: v for k, v in good.items() if k != "bbox"}], "row 1: missing field 'bbox'"),
        ([good, good], "question refbench-pro:1 appears twice"),
        ([{**good, "image_path": "b.jpg"}], "row 1: image b.jpg not in"),
        ([{**good, "image_path": "../a.jpg"}], "row 1: image name '../a.jpg' is not a plain"),
        ([{**good, "image_path": "out.jpg"}], "row 1: image out.jpg leads out of"),
        ([{**good, "image_path": "bomb.png"}], "row 1: image bytes: .*above the 64-megapixel"),
        ([{**good, "image_path": "text.jpg"}], "row 1: image bytes: not a readable image"),
        ([{**good, "image_path": "."}], "row 1: image . not in"),
    ]
    outside = tmp_path / "outside.jpg"
    outside.write_bytes(_jpeg(50, 40))
    (tmp_path / "images").mkdir(exist_ok=True)
    (tmp_path / "images" / "out.jpg").symlink_to(outside)
    (tmp_path / "images" / "bomb.png").write_bytes(_BOMB)
    (tmp_path / "images" / "text.jpg").write_text("not an image")
    for rows, message in cases:
        with pytest.raises(DataFileError, match=message):
            read_refbench_pro(_refbench(tmp_path, rows), tmp_path / "images")
    path = tmp_path / "broken.jsonl"
    path.write_text('{"image_path": "a.jpg"\n')
    with pytest.raises(DataFileError, match="line 1: not JSON"):
        read_refbench_pro(path, tmp_path / "images")
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")  # json reads nesting by recursion
    with pytest.raises(DataFileError, match=r"line 1: not JSON \(nested too deep\)"):
        read_refbench_pro(path, tmp_path / "images")
