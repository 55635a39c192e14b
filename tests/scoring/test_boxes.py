"""Box grounding and rejection as the box benchmarks define them (PROTOCOL §10)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring import (
    BOX_READERS,
    Box,
    BoxJudgement,
    RejectionRule,
    accuracy_at,
    box_iou,
    corner_iou,
    find_box,
    judge_box,
    mean_accuracy,
    rejection_accuracy,
    says_absent,
    to_pixels,
)

# --- coordinate conventions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("box", "convention", "sent_scale", "expected"),
    [
        ((0, 0, 999, 999), "norm999", 1.0, (0.0, 0.0, 640.0, 480.0)),
        ((500, 250, 1000, 1000), "norm1000", 1.0, (320.0, 120.0, 640.0, 480.0)),
        ((0.25, 0.5, 0.75, 1.0), "unit", 1.0, (160.0, 240.0, 480.0, 480.0)),
        ((10, 20, 30, 40), "pixels", 1.0, (10.0, 20.0, 30.0, 40.0)),
        ((10, 20, 30, 40), "pixels", 0.5, (20.0, 40.0, 60.0, 80.0)),  # half-resolution image
        ((30, 40, 10, 20), "pixels", 1.0, (10.0, 20.0, 30.0, 40.0)),  # corners put in order
    ],
)
def test_each_convention_maps_to_pixels_of_the_original(
    box: Box, convention: str, sent_scale: float, expected: Box
) -> None:
    got = to_pixels(box, convention, 640, 480, sent_scale)  # type: ignore[arg-type]
    assert got == pytest.approx(expected)


coords = st.floats(0.0, 1.0)


@given(coords, coords, coords, coords, st.integers(1, 4000), st.integers(1, 4000))
def test_the_same_box_in_any_convention_is_the_same_pixels(
    a: float, b: float, c: float, d: float, width: int, height: int
) -> None:
    unit = to_pixels((a, b, c, d), "unit", width, height)
    thousand = to_pixels((a * 1000, b * 1000, c * 1000, d * 1000), "norm1000", width, height)
    pixels = to_pixels((a * width, b * height, c * width, d * height), "pixels", width, height)
    assert thousand == pytest.approx(unit) and pixels == pytest.approx(unit)
    assert unit[0] <= unit[2] and unit[1] <= unit[3]


# --- when an answer says "absent" -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "no_box", "zero_box", "statement", "expected"),
    [
        ("I looked everywhere.", True, False, False, True),  # no box at all
        ("I looked everywhere.", False, False, False, False),
        ("There is no such object in the image.", False, False, True, True),
        ("The object is not present. [0, 0, 0, 0]", False, False, True, True),
        ("[0, 0, 0, 0]", False, True, False, True),  # all-zero box, where it means absent
        ("[0, 0, 0, 0]", True, False, True, False),
        ("The mug on the left: [10, 20, 30, 40]", True, True, False, False),
        ("The man not wearing a hat is at [10, 20, 30, 40]", True, True, True, False),
    ],
)
def test_saying_absent_follows_the_rule(
    text: str, no_box: bool, zero_box: bool, statement: bool, expected: bool
) -> None:
    rule = RejectionRule(no_box=no_box, zero_box=zero_box, statement=statement)
    assert says_absent(text, find_box(text, "groundbench"), rule) is expected


@pytest.mark.parametrize(
    ("name", "text", "absent"),
    [
        ("groundingme", '{"bbox_2d": null}', True),
        ("groundingme", "There is no such object.", True),  # nothing read: the zero box
        ("groundingme", 'No such object, but maybe {"bbox_2d": [1, 2, 3, 4]}', False),
        ("refbench-pro", "The target is absent.", True),  # no box read
        ("refbench-pro", "[0, 0, 0, 0]", True),
        ("refbench-pro", "It is not there. [10, 20, 30, 40]", False),  # a box is an answer
    ],
)
def test_each_benchmark_reads_a_rejection_as_its_code_does(
    name: str, text: str, absent: bool
) -> None:
    judged = judge_box(text, None, BOX_READERS[name], "norm1000", 640, 480)
    assert judged.says_absent is absent and judged.iou == 0.0


# Each benchmark's released code, written out on the cases where a lenient reading differs
# (640 × 480 image; the IoU, "absent" and found as the released file computes them).
RELEASED = [
    # GroundingME (evaluate.py): corners not ordered — a reversed box overlaps nothing.
    ("groundingme", '{"bbox_2d": [300, 300, 100, 100]}', (100, 100, 300, 300), 0.0, False),
    # … nor clipped: [-100, -200, 300, 400] as pixels covers twice the true box.
    ("groundingme", '{"bbox_2d": [-100, -200, 300, 400]}', (0, 0, 300, 400), 0.5, False),
    # … numbers as strings read through float(); 0–999 units: 903 / 999 * 480.
    ("groundingme", '{"bbox_2d": ["0", "903", "240", "999"]}', (0, 434, 154, 480),
     0.9956753490324504, False),
    # … pixels or 0–999 units, never the configuration's 0–1000 (that reading would give 1.0).
    ("groundingme", '{"bbox_2d": [500, 500, 1000, 1000]}', (320, 240, 640, 480),
     0.9940189441684956, False),
    ("groundingme", '{"bbox_2d": null}', None, 0.0, True),
    ("groundingme", '{"bbox_2d": ' + "[" * 3000 + "}", None, 0.0, True),  # no box: absent
    # RefBench-PRO (eval_qwen3vl.py): scaled and clipped to [0, W − 1] before "all zeros".
    ("refbench-pro", "[-10, -20, 0, 0]", None, 0.0, True),
    ("refbench-pro", "[0, -5, -3, 0]", None, 0.0, True),
    ("refbench-pro", "[500, 500, 100, 100]", (64, 48, 320, 240), 0.0, False),  # not ordered
    # The far edge is W − 1 = 639: 9 × 479 / (10 × 480), a miss at 0.9.
    ("refbench-pro", "[984.375, 0, 1000, 1000]", (630, 0, 640, 480), 0.898125, False),
    ("refbench-pro", "[" * 3000 + "]", None, 0.0, True),  # crashes there; no box here
    ("refbench-pro", "There is none. [12, 30, 400, 500]", None, 0.0, False),  # a box answers
    # Ref-Adv (run.py): ordered and clipped to [0, W]; nothing read from deep nesting.
    ("ref-adv", '{"bboxes": [[500, 500, -100, 0]]}', (0, 0, 320, 240), 1.0, False),
    ("ref-adv", "[" * 3000, (0, 0, 10, 10), 0.0, True),
]  # fmt: skip


@pytest.mark.parametrize(("name", "answer", "truth", "iou", "absent"), RELEASED)
def test_each_benchmark_judges_as_its_released_code(
    name: str, answer: str, truth: Box | None, iou: float, absent: bool
) -> None:
    judged = judge_box(answer, truth, BOX_READERS[name], "norm1000", 640, 480)
    assert judged.iou == iou  # exactly: the same arithmetic in the same order
    if truth is None:
        assert judged.says_absent is absent


def test_groundingme_reads_pixels_of_the_image_as_sent_and_ignores_the_convention() -> None:
    answer, truth = '{"bbox_2d": [50, 60, 150, 160]}', (100.0, 120.0, 300.0, 320.0)
    reader = BOX_READERS["groundingme"]
    half = judge_box(answer, truth, reader, "norm1000", 640, 480, sent_scale=0.5)
    assert half.iou == 1.0 and half.box == truth
    assert judge_box(answer, truth, reader, "unit", 640, 480, sent_scale=0.5) == half


@pytest.mark.parametrize("name", ["ref-adv", "groundingme", "refbench-pro"])
def test_a_box_with_a_non_finite_coordinate_matches_nothing_and_is_no_absent(name: str) -> None:
    # Deviation (§10): Ref-Adv's code scores [NaN, 200, 250, 400] as IoU 3.0, a hit; RefBench-
    # PRO's clips NaN to 0; GroundingME's already gives IoU 0 and no "absent", as here.
    answer = {
        "ref-adv": '{"bboxes": [[NaN, 200, 250, 400]]}',
        "groundingme": '{"bbox_2d": [NaN, 200, 250, 400]}',
        "refbench-pro": "[NaN, 200, 250, 400]",
    }[name]
    for truth in ((0.0, 0.0, 300.0, 400.0), None):
        judged = judge_box(answer, truth, BOX_READERS[name], "pixels", 640, 480)
        assert (judged.iou, judged.says_absent, judged.found, judged.box) == (0, False, True, None)


def test_an_iou_on_a_threshold_is_a_hit_there() -> None:
    # Deviation (§10): RefBench-PRO's np.arange(0.5, 0.95, 0.05) makes τ = 0.6000000000000001,
    # so an IoU of exactly 0.6 misses there and hits here.
    judged = [BoxJudgement((0, 0, 1, 1), False, 0.6)]
    assert accuracy_at(judged, BOX_READERS["refbench-pro"].macc_thresholds[2], False) == 100.0


def test_the_lenient_reading_orders_and_clips_what_the_released_codes_do_not() -> None:
    lenient = BOX_READERS["groundbench"]
    judged = judge_box("[300, 300, 100, 100]", (100, 100, 300, 300), lenient, "pixels", 640, 480)
    assert judged.iou == 1.0
    clipped = judge_box("[-100, -200, 300, 400]", (0, 0, 300, 400), lenient, "pixels", 640, 480)
    assert clipped.iou == 1.0


def test_a_judged_answer_is_scored_in_original_pixels() -> None:
    reader = BOX_READERS["ref-adv"]
    judged = judge_box('{"bbox": [0, 0, 500, 1000]}', (0, 0, 320, 480), reader, "norm1000",
                       640, 480)  # fmt: skip
    clipped = judge_box('{"bbox": [-10, -10, 2000, 500]}', (0, 0, 640, 240), reader,
                        "norm1000", 640, 480)  # fmt: skip
    assert clipped.box == pytest.approx((0, 0, 640, 240)) and clipped.iou == pytest.approx(1.0)
    assert judged.box == pytest.approx((0, 0, 320, 480)) and judged.iou == pytest.approx(1.0)
    missing = judge_box("no idea", (0, 0, 320, 480), reader, "norm1000", 640, 480)
    assert missing.box is None and missing.iou == 0.0


# --- IoU and the metrics ----------------------------------------------------------------------

boxes = st.tuples(*[st.floats(0, 1000)] * 4).map(lambda b: (*sorted(b[0::2]), *sorted(b[1::2])))


@given(boxes, boxes)
def test_corner_iou_is_a_symmetric_share_that_agrees_with_the_coco_form(a: Box, b: Box) -> None:
    a = (a[0], a[2], a[1], a[3])  # (x1, x2, y1, y2) sorted pairs → corners
    b = (b[0], b[2], b[1], b[3])
    iou = corner_iou(a, b)
    assert 0.0 <= iou <= 1.0 + 1e-12 and iou == pytest.approx(corner_iou(b, a))
    coco = (b[0], b[1], b[2] - b[0], b[3] - b[1])
    assert iou == pytest.approx(box_iou(a, coco))
    if (a[2] - a[0]) * (a[3] - a[1]) > 0:
        assert corner_iou(a, a) == pytest.approx(1.0)


def test_a_hit_is_iou_at_least_the_threshold_as_every_released_code_counts_it() -> None:
    at_half = [BoxJudgement((0, 0, 1, 1), False, 0.5)]
    assert accuracy_at(at_half, 0.5, strict=True) == 0.0
    assert accuracy_at(at_half, 0.5, strict=False) == 100.0
    assert not any(p.strict for p in BOX_READERS.values())


def test_macc_thresholds_are_each_papers() -> None:
    assert BOX_READERS["refbench-pro"].macc_thresholds == (
        0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9,
    )  # fmt: skip
    assert BOX_READERS["ref-adv"].macc_thresholds[-1] == 0.95
    assert len(BOX_READERS["groundingme"].macc_thresholds) == 10


ious = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=50)


@given(ious, st.sampled_from(sorted(BOX_READERS)))
def test_accuracy_falls_with_the_threshold_and_macc_is_its_mean(
    values: list[float], name: str
) -> None:
    reader = BOX_READERS[name]
    judged = [BoxJudgement(None, False, v) for v in values]
    accs = [accuracy_at(judged, t, reader.strict) for t in reader.macc_thresholds]
    assert all(x >= y for x, y in itertools.pairwise(accs))
    assert mean_accuracy(judged, reader) == pytest.approx(sum(accs) / len(accs))
    assert accs[-1] - 1e-9 <= mean_accuracy(judged, reader) <= accs[0] + 1e-9


def test_rejection_accuracy_counts_answers_that_say_absent() -> None:
    judged = [BoxJudgement(None, True, 0.0), BoxJudgement((0, 0, 1, 1), False, 0.0)]
    assert rejection_accuracy(judged) == 50.0
    assert math.isnan(rejection_accuracy([])) and math.isnan(accuracy_at([], 0.5, True))


def test_a_judgement_says_whether_the_reader_found_a_box_at_all() -> None:
    def found(text: str, benchmark: str) -> bool | None:
        return judge_box(text, None, BOX_READERS[benchmark], "norm1000", 100, 100).found

    assert found('{"bbox_2d": null}', "groundingme") is True  # null: the zero box, read
    assert found("[0, 0, 0, 0]", "refbench-pro") is True
    assert found("There is no such object.", "refbench-pro") is False
    assert found("[10, 10, 50, 50]", "refbench-pro") is True
