"""The cohort builder (PROTOCOL §8) on the real fixture and on synthetic data."""

from __future__ import annotations

import json
import math
import pickle
from collections import Counter
from pathlib import Path

import pytest
from shapely.geometry import Polygon

from conditions import (
    Cohort,
    CohortSpec,
    DataFileError,
    DataRoot,
    SourceIndex,
    build_cohort,
    source_named,
)
from conditions._metadata import raw_metadata
from scoring import BUDGETS, PHASES, canonical_target

# The real fixture, its files byte for byte as in ../shared: a cohort hash pinned here must
# come out the same on every machine (PROTOCOL §8: same inputs and seed, same hash).
REAL_COHORT_HASH = "56fa3c25bae1fff923b1add1d1694751efd91497efcdedc566d84e760d68254b"


def test_the_real_fixture_gives_one_question_per_image_and_reports_the_shortfall(
    real_cohort: Cohort,
) -> None:
    (report,) = real_cohort.reports
    assert (report.asked, report.selected, report.eligible, report.image_taken) == (500, 1, 4, 3)
    assert report.short
    (q,) = real_cohort.questions
    assert q.ann_id in {2190839, 2190842, 1110067, 1108446}
    assert q.matched  # a one-question cohort's matched subset is that question


def test_the_real_question_has_the_documented_metadata(real_cohort: Cohort) -> None:
    q = real_cohort.questions[0]
    assert (q.qid, q.ann_id, q.category, q.group) == ("refcoco:3", 1110067, "remote", "indoor")
    assert q.expression == "the white remote lying flat at the top left"
    assert (q.d, q.d_bin, q.width, q.height) == (1, "D1", 640, 480)
    assert q.phrase_length == 9
    # The hint terms agree with what the annotator wrote.
    assert (q.cell, q.colour) == ("upper left", "white")
    assert (q.wrong_cell, q.wrong_colour) == ("lower right", "blue")


@pytest.mark.parametrize("ann_id", [2190839, 2190842, 1110067, 1108446])
def test_every_real_referent_has_d1_and_the_q_and_rs_of_its_polygon(
    real_root: DataRoot, ann_id: int
) -> None:
    index = SourceIndex.load(real_root, source_named("refcoco"))
    referent = index.referent(ann_id)
    assert not isinstance(referent, str)
    raw = raw_metadata(referent)
    polygon = Polygon(list(zip(referent.part[0::2], referent.part[1::2], strict=True)))
    _, _, w, h = index.annotations[ann_id].bbox
    assert raw.d == 1
    assert raw.q == pytest.approx(polygon.length**2 / (4 * math.pi * polygon.area), rel=1e-9)
    assert raw.rs == pytest.approx(w * h / (640 * 480), rel=1e-9)
    assert raw.q > 1.0  # no polygon is rounder than a circle


def test_targets_are_the_scoring_targets_for_every_budget_and_phase(real_cohort: Cohort) -> None:
    q = real_cohort.questions[0]
    part = real_cohort.referent(q.qid).part
    for n in BUDGETS:
        for phase in range(PHASES):
            assert real_cohort.target(q.qid, n, phase) == canonical_target(part, n, phase)


def test_instances_hold_the_referent_and_its_same_category_distractor(real_cohort: Cohort) -> None:
    roles = Counter(i.role for i in real_cohort.instances)
    assert roles == {"target": 1, "distractor": 1}
    referent = real_cohort.referent(real_cohort.questions[0].qid)
    assert [d.ann_id for d in referent.distractors] == [1108446]


def test_the_real_cohort_hash_is_pinned(real_cohort: Cohort) -> None:
    assert real_cohort.hash == REAL_COHORT_HASH


def test_the_hash_is_stable_and_follows_the_inputs(
    small_root: DataRoot, small_cohort: Cohort
) -> None:
    again = build_cohort(small_root, small_cohort.spec)
    assert again.hash == small_cohort.hash
    reseeded = build_cohort(small_root, small_cohort.spec.model_copy(update={"seed": 1}))
    assert reseeded.hash != small_cohort.hash
    assert {q.qid for q in reseeded.questions} != {q.qid for q in small_cohort.questions}


def test_one_question_per_image_across_the_whole_cohort(small_cohort: Cohort) -> None:
    images = [q.image_id for q in small_cohort.questions]
    assert len(images) == len(set(images)) == 45
    assert [q.source for q in small_cohort.questions] == (
        ["refcoco"] * 15 + ["refcoco+"] * 15 + ["refcocog"] * 15
    )
    assert all(q.split in ("val", "testA", "testB", "test") for q in small_cohort.questions)


def test_every_question_has_its_referent_and_its_d_distractors(small_cohort: Cohort) -> None:
    for q in small_cohort.questions:
        roles = [i.role for i in small_cohort.instances_of(q.qid)]
        assert roles.count("target") == 1, q.qid
        assert roles.count("distractor") == q.d, q.qid
        assert len(small_cohort.referent(q.qid).distractors) == q.d


def test_bins_follow_the_frozen_tertiles(small_cohort: Cohort) -> None:
    t = small_cohort.thresholds
    for q in small_cohort.questions:
        assert (q.q_bin == "Q1") == (q.q <= t.q.low)
        assert (q.q_bin == "Q3") == (q.q > t.q.high)
        assert (q.rs_bin == "RS1") == (q.rs <= t.rs.low)
        assert (q.rs_bin == "RS3") == (q.rs > t.rs.high)
        points = (q.d >= 3) + (q.q_bin == "Q3") + (q.rs_bin == "RS1")
        assert q.difficulty == ("easy", "medium", "hard")[min(points, 2)]
    assert Counter(q.q_bin for q in small_cohort.questions) == {"Q1": 15, "Q2": 15, "Q3": 15}


def test_the_matched_subset_is_stratified_by_source(small_cohort: Cohort) -> None:
    matched = Counter(q.source for q in small_cohort.questions if q.matched)
    assert matched == {"refcoco": 5, "refcoco+": 5, "refcocog": 5}


def test_a_source_short_of_questions_is_built_as_far_as_it_goes(small_root: DataRoot) -> None:
    cohort = build_cohort(small_root, CohortSpec(per_source=10_000))
    assert all(r.short for r in cohort.reports)
    assert len(cohort.questions) == sum(r.selected for r in cohort.reports) > 0
    images = [q.image_id for q in cohort.questions]
    assert len(images) == len(set(images))


# Bad input: one clear error naming the file and the id.


def _edit_instances(root: DataRoot, edit: object) -> Path:
    path = root.folder(source_named("refcoco")) / "instances.json"
    data = json.loads(path.read_text())
    edit(data)  # type: ignore[operator]
    path.write_text(json.dumps(data))
    return path


def test_a_missing_instances_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"refcoco/instances.json: cannot read"):
        build_cohort(DataRoot.at(tmp_path))


def test_an_rle_target_is_named_with_its_id(real_root: DataRoot) -> None:
    def to_rle(data: dict[str, list[dict[str, object]]]) -> None:
        for a in data["annotations"]:
            if a["id"] == 1110067:
                a["segmentation"] = {"size": [480, 640], "counts": "PPYo0"}

    path = _edit_instances(real_root, to_rle)
    with pytest.raises(DataFileError, match=r"instances.json: annotation 1110067") as err:
        build_cohort(real_root, CohortSpec(sources=("refcoco",)))
    assert str(err.value).startswith(str(path))


def test_an_annotation_of_an_unknown_image_is_named(real_root: DataRoot) -> None:
    def orphan(data: dict[str, list[dict[str, object]]]) -> None:
        data["annotations"][0]["image_id"] = 4242

    _edit_instances(real_root, orphan)
    with pytest.raises(DataFileError, match=r"annotation 1108446 points to unknown image 4242"):
        build_cohort(real_root, CohortSpec(sources=("refcoco",)))


def test_a_ref_to_an_unknown_annotation_is_named(real_root: DataRoot) -> None:
    def drop(data: dict[str, list[dict[str, object]]]) -> None:
        data["annotations"] = [a for a in data["annotations"] if a["id"] != 2190839]

    _edit_instances(real_root, drop)
    with pytest.raises(
        DataFileError, match=r"refs\(unc\).p: ref_id 1 points to unknown annotation"
    ):
        build_cohort(real_root, CohortSpec(sources=("refcoco",)))


def test_a_missing_image_is_named_with_its_id(real_root: DataRoot) -> None:
    (real_root.images / "000000039769.png").unlink()
    with pytest.raises(DataFileError, match=r"000000039769.png: image 39769: cannot read"):
        build_cohort(real_root, CohortSpec(sources=("refcoco",)))


def test_an_image_of_the_wrong_size_is_named(real_root: DataRoot) -> None:
    def resize(data: dict[str, list[dict[str, object]]]) -> None:
        data["images"][0]["width"] = 641

    _edit_instances(real_root, resize)
    with pytest.raises(
        DataFileError, match=r"image 39769 is 640x480 but its annotations are for 641x480"
    ):
        build_cohort(real_root, CohortSpec(sources=("refcoco",)))


def test_a_root_with_no_eligible_question_is_an_error_not_an_empty_cohort(
    real_root: DataRoot,
) -> None:
    def lone(data: dict[str, list[dict[str, object]]]) -> None:
        for a in data["annotations"]:
            if a["id"] in (2190842, 1108446):
                a["iscrowd"] = 1  # the other cat and remote are crowds: no distractor left

    _edit_instances(real_root, lone)
    with pytest.raises(DataFileError, match=r"no eligible question in any source \(refcoco: 0"):
        build_cohort(real_root, CohortSpec(sources=("refcoco",)))
    index = SourceIndex.load(real_root, source_named("refcoco"))
    assert index.referent(2190839) == "no same-category distractor (D0)"
    assert index.referent(2190842) == "crowd"


def test_the_cohort_for_asking_keeps_questions_and_hash_and_drops_the_rest(
    small_cohort: Cohort,
) -> None:
    slim = small_cohort.for_asking()
    assert slim.hash == small_cohort.hash and slim.questions == small_cohort.questions
    assert slim.question(small_cohort.questions[3].qid) == small_cohort.questions[3]
    assert not slim.instances and not slim.targets
    assert len(pickle.dumps(slim)) < len(pickle.dumps(small_cohort)) / 2
    assert pickle.loads(pickle.dumps(slim)).hash == small_cohort.hash  # as Ray ships it
