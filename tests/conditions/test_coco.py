"""Reading COCO instances.json files and PROTOCOL §8 eligibility."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conditions import DataFileError, eligible_referents, load_instances


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(data))
    return path


SQUARE = [[10, 10, 50, 10, 50, 50, 10, 50]]


def annotation(ann_id: int, category: int = 1, **extra: Any) -> dict[str, Any]:
    return {"id": ann_id, "image_id": 1, "category_id": category, "segmentation": SQUARE,
            "iscrowd": 0, "bbox": [10, 10, 40, 40], "area": 1600.0, **extra}  # fmt: skip


def instances(*annotations: dict[str, Any]) -> dict[str, Any]:
    return {
        "images": [{"id": 1, "width": 100, "height": 80, "file_name": "a.jpg"}],
        "annotations": list(annotations),
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    }


def test_eligibility_needs_a_same_category_non_crowd_distractor(tmp_path: Path) -> None:
    crowd = annotation(4, iscrowd=1, segmentation={"size": [80, 100], "counts": "abc"})
    data = instances(annotation(1), annotation(2), annotation(3, category=2), crowd)
    referents = eligible_referents(load_instances(write(tmp_path, data)))
    assert [r.ann_id for r in referents] == [1, 2]
    assert [d.ann_id for d in referents[0].distractors] == [2]


def test_degenerate_referents_are_not_eligible_but_stay_distractors(tmp_path: Path) -> None:
    flat = annotation(2, segmentation=[[10, 10, 20, 20, 30, 30]])
    referents = eligible_referents(load_instances(write(tmp_path, instances(annotation(1), flat))))
    assert [r.ann_id for r in referents] == [1]
    assert referents[0].distractors[0].ann_id == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe\x00", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON: arrays or objects nested too deep"),
        (json.dumps({"images": []}).encode(), "annotations: Field required"),
        (json.dumps(instances(annotation(1, bbox=[1, 2]))).encode(), "annotations.0.bbox"),
        (json.dumps(instances(annotation(1, image_id=9))).encode(),
         "annotation 1 points to unknown image 9"),
        # Damaged numbers: refused at the file, not met later in a hash or a cue.
        (json.dumps(instances(annotation(1, segmentation=[[10, 10, 1e308, 10, 50, 50]])))
         .encode(), "annotations.0.segmentation"),
        (json.dumps(instances(annotation(1, bbox=[float("nan"), 1, 2, 3]))).encode(),
         "annotations.0.bbox.0: Input should be a finite number"),
    ],
)  # fmt: skip
def test_bad_files_get_one_line_naming_file_and_place(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "instances.json"
    path.write_bytes(content)
    with pytest.raises(DataFileError, match=message) as info:
        load_instances(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="cannot read"):
        load_instances(tmp_path / "nope.json")


def test_a_malformed_polygon_names_the_file_and_the_annotation(tmp_path: Path) -> None:
    odd = annotation(2, segmentation=[[10, 10, 50, 10, 50]])
    path = write(tmp_path, instances(annotation(1), odd))
    with pytest.raises(DataFileError, match=r"instances\.json: annotation 2: part 0"):
        eligible_referents(load_instances(path), path)
