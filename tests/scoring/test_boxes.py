"""Box grounding and rejection as the box benchmarks define them (PROTOCOL §10)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import (
    BOX_PROTOCOLS,
    Box,
    BoxJudgement,
    BoxParsing,
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


# --- which box an answer gives, and when it says "absent" --------------------------------------


@pytest.mark.parametrize(
    ("parsing", "text", "expected"),
    [
        ("groundbench", "first [1, 2, 3, 4] then 5 6 7 8", (5, 6, 7, 8)),
        ("groundbench", "[[10, 20], [30, 40]]", (10, 20, 30, 40)),
        (
            "ref-adv",
            'think [1, 2, 3, 4]\n```json\n{"bboxes": [[10, 20, 30, 40]]}\n```',
            (10, 20, 30, 40),
        ),
        ("ref-adv", "So the final answer is [486, 336, 602, 432]", (486, 336, 602, 432)),
        ("ref-adv", '{"label": "cup", "bbox_2d": [1, 2, 3, 4]}', (1, 2, 3, 4)),
        ("ref-adv", "[486, 336, 602, 432] is my answer.", None),  # JSON must end the answer
        ("groundingme", 'Found it: {"bbox_2d": [1, 2, 3, 4]}', (1, 2, 3, 4)),
        ("groundingme", '{"bbox_2d": null}', (0, 0, 0, 0)),  # null: the zero box
        ("groundingme", "maybe 1, 2, 3, 4 or rather 5 6 7 8", (5, 6, 7, 8)),
        ("groundingme", "Nothing matches.", None),
        ("refbench-pro", "[1, 2] then [10, 20, 30, 40] and [a, b]", (10, 20, 30, 40)),
        ("refbench-pro", "[[1, 2, 3, 4]]", None),  # its reader takes no nested list …
        ("refbench-pro", '[\n  {"bbox_2d": [1, 2, 3, 4]}\n]', (1, 2, 3, 4)),  # … across lines
        ("refbench-pro", '{"bbox_2d": [1.5, 2, 3, 4], "label": "x"}', (1.5, 2, 3, 4)),
    ],
)
def test_each_benchmark_finds_the_box_its_released_code_finds(
    parsing: str, text: str, expected: Box | None
) -> None:
    assert find_box(text, parsing) == expected  # type: ignore[arg-type]


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
    judged = judge_box(text, None, BOX_PROTOCOLS[name], "norm1000", 640, 480)
    assert judged.says_absent is absent and judged.iou == 0.0


def test_groundingme_keeps_the_better_of_pixels_and_units() -> None:
    truth = (64.0, 48.0, 320.0, 240.0)
    answer = '{"bbox_2d": [100, 100, 500, 500]}'  # 0–999 units, though the model was asked pixels
    lenient = judge_box(answer, truth, BOX_PROTOCOLS["groundingme"], "pixels", 640, 480)
    strict = judge_box(answer, truth, BOX_PROTOCOLS["refbench-pro"], "pixels", 640, 480)
    assert lenient.iou == pytest.approx(corner_iou(to_pixels((100, 100, 500, 500), "norm999",
                                                             640, 480), truth))  # fmt: skip
    assert lenient.iou > strict.iou


def test_a_judged_answer_is_scored_in_original_pixels() -> None:
    protocol = BOX_PROTOCOLS["refbench-pro"]
    judged = judge_box("<answer>[0, 0, 500, 1000]</answer>", (0, 0, 320, 480), protocol,
                       "norm1000", 640, 480)  # fmt: skip
    clipped = judge_box("[-10, -10, 2000, 500]", (0, 0, 640, 240), protocol, "norm1000", 640, 480)
    assert clipped.box == pytest.approx((0, 0, 640, 240)) and clipped.iou == pytest.approx(1.0)
    assert judged.box == pytest.approx((0, 0, 320, 480)) and judged.iou == pytest.approx(1.0)
    missing = judge_box("no idea", (0, 0, 320, 480), protocol, "norm1000", 640, 480)
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
    assert not any(p.strict for p in BOX_PROTOCOLS.values())


def test_macc_thresholds_are_each_papers() -> None:
    assert BOX_PROTOCOLS["refbench-pro"].macc_thresholds == (
        0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9,
    )  # fmt: skip
    assert BOX_PROTOCOLS["ref-adv"].macc_thresholds[-1] == 0.95
    assert len(BOX_PROTOCOLS["groundingme"].macc_thresholds) == 10


ious = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=50)


@given(ious, st.sampled_from(sorted(BOX_PROTOCOLS)))
def test_accuracy_falls_with_the_threshold_and_macc_is_its_mean(
    values: list[float], name: str
) -> None:
    protocol = BOX_PROTOCOLS[name]
    judged = [BoxJudgement(None, False, v) for v in values]
    accs = [accuracy_at(judged, t, protocol.strict) for t in protocol.macc_thresholds]
    assert all(x >= y for x, y in itertools.pairwise(accs))
    assert mean_accuracy(judged, protocol) == pytest.approx(sum(accs) / len(accs))
    assert accs[-1] - 1e-9 <= mean_accuracy(judged, protocol) <= accs[0] + 1e-9


def test_rejection_accuracy_counts_answers_that_say_absent() -> None:
    judged = [BoxJudgement(None, True, 0.0), BoxJudgement((0, 0, 1, 1), False, 0.0)]
    assert rejection_accuracy(judged) == 50.0
    assert math.isnan(rejection_accuracy([])) and math.isnan(accuracy_at([], 0.5, True))


PIECES = st.one_of(
    st.text(max_size=8),
    st.sampled_from(['{"bbox_2d": ', "null", "[", "]", "{", "}", ",", "```json\n", "```", "0",
                     "12.5", "-3", "1e999", "NaN", '"bboxes": ', "\n", ": "]),
)  # fmt: skip


@settings(max_examples=2_000)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_every_reader_returns_a_finite_box_or_none_on_any_text(text: str) -> None:
    readers: tuple[BoxParsing, ...] = ("groundbench", "ref-adv", "groundingme", "refbench-pro")
    for parsing in readers:
        box = find_box(text, parsing)
        assert box is None or (len(box) == 4 and all(math.isfinite(v) for v in box))


def test_a_judgement_says_whether_the_reader_found_a_box_at_all() -> None:
    def found(text: str, benchmark: str) -> bool | None:
        return judge_box(text, None, BOX_PROTOCOLS[benchmark], "norm1000", 100, 100).found

    assert found('{"bbox_2d": null}', "groundingme") is True  # null: the zero box, read
    assert found("[0, 0, 0, 0]", "refbench-pro") is True
    assert found("There is no such object.", "refbench-pro") is False
    assert found("[10, 10, 50, 50]", "refbench-pro") is True
