"""Which box an answer gives, as each box benchmark's released code finds it (PROTOCOL §10)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import Box, ReaderName, _box_finders, find_box
from scoring._box_finders import MAX_DEPTH
from tests.examples import scaled
from tests.scoring import reference_finders

FILE_LOADERS: tuple[ReaderName, ...] = ("groundbench", "ref-adv", "groundingme", "refbench-pro")
NAN = float("nan")


@pytest.mark.parametrize(
    ("parsing", "text", "expected"),
    [
        ("groundbench", "first [1, 2, 3, 4] then 5 6 7 8", (5, 6, 7, 8)),
        ("groundbench", "[[10, 20], [30, 40]]", (10, 20, 30, 40)),
        # Ref-Adv (run.py): the last fenced JSON, else a JSON value ending the answer; its
        # first 4-number list, depth first, box-like keys first.
        (
            "ref-adv",
            'think [1, 2, 3, 4]\n```json\n{"bboxes": [[10, 20, 30, 40]]}\n```',
            (10, 20, 30, 40),
        ),
        ("ref-adv", "So the final answer is [486, 336, 602, 432]", (486, 336, 602, 432)),
        ("ref-adv", '{"label": "cup", "bbox_2d": [1, 2, 3, 4]}', (1, 2, 3, 4)),
        ("ref-adv", '{"a": [9, 9, 9, 9], "boxes": [[1, 2, 3, 4]]}', (1, 2, 3, 4)),
        ("ref-adv", "[[[1, 2, 3, 4], [5, 6, 7, 8]], [0, 0, 1, 1]]", (1, 2, 3, 4)),
        ("ref-adv", "[486, 336, 602, 432] is my answer.", None),  # JSON must end the answer
        ("ref-adv", '```json\n{"bboxes": [["1", "2", "3", "4"]]}\n```', None),  # no numbers
        ("ref-adv", "   ", None),
        # GroundingME (evaluate.py: parse_bbox): bbox_2d through float(), else four numbers.
        ("groundingme", 'Found it: {"bbox_2d": [1, 2, 3, 4]}', (1, 2, 3, 4)),
        ("groundingme", '{"bbox_2d": null}', (0, 0, 0, 0)),  # null: the zero box
        ("groundingme", '{"bbox_2d": ["0", "903", "240", "999"]}', (0, 903, 240, 999)),
        ("groundingme", '{"bbox_2d": [" 12 ", 1.5, "1e2", 7]}', (12, 1.5, 100, 7)),
        ("groundingme", '{"bbox_2d": ["a", 2, 3, 4]} or 5 6 7 8', (5, 6, 7, 8)),  # fallback
        ("groundingme", '{"bbox_2d": [[1, 2], 3, 4, 5]}', None),  # "2], 3" breaks a run
        ("groundingme", '{"bbox_2d": [[1, 2], 3, 4]} 6 7 8 9', (6, 7, 8, 9)),
        ("groundingme", "maybe 1, 2, 3, 4 or rather 5 6 7 8", (5, 6, 7, 8)),
        ("groundingme", "Nothing matches.", None),
        # RefBench-PRO (eval_qwen3vl.py: extract_bbox_from_response): the last one-line […]
        # holding four JSON numbers or four comma-separated floats.
        ("refbench-pro", "[1, 2] then [10, 20, 30, 40] and [a, b]", (10, 20, 30, 40)),
        ("refbench-pro", "[[1, 2, 3, 4]]", None),  # its reader takes no nested list …
        ("refbench-pro", '[\n  {"bbox_2d": [1, 2, 3, 4]}\n]', (1, 2, 3, 4)),  # … across lines
        ("refbench-pro", '{"bbox_2d": [1.5, 2, 3, 4], "label": "x"}', (1.5, 2, 3, 4)),
        ("refbench-pro", "[ 1 , 2 , 3 , 4 ]", (1, 2, 3, 4)),
        ("refbench-pro", '["1", "2", "3", "4"]', None),  # neither JSON numbers nor floats
    ],
)
def test_each_benchmark_finds_the_box_its_released_code_finds(
    parsing: ReaderName, text: str, expected: Box | None
) -> None:
    assert find_box(text, parsing) == expected


@pytest.mark.parametrize(
    ("parsing", "text", "fallback"),
    [
        ("ref-adv", '{"bboxes": [[true, 0, 50, 50], [10, 20, 30, 40]]}', (10, 20, 30, 40)),
        ("groundingme", '{"bbox_2d": [true, 0, 50, 50]} 10 20 30 40', (10, 20, 30, 40)),
        ("refbench-pro", "[10, 20, 30, 40] [true, 0, 50, 50]", (10, 20, 30, 40)),
    ],
)
def test_a_boolean_is_not_a_coordinate(parsing: ReaderName, text: str, fallback: Box) -> None:
    # Deviation (§10): the released code reads true/false as 1/0 and would find (1, 0, 50, 50).
    assert find_box(text, parsing) == fallback


@pytest.mark.parametrize(
    ("parsing", "text"),
    [
        ("ref-adv", '{"bboxes": [[NaN, 200, 250, 400]]}'),
        ("groundingme", '{"bbox_2d": [NaN, 200, 250, 400]}'),
        ("groundingme", '{"bbox_2d": ["nan", "200", "250", "400"]}'),
        ("refbench-pro", "[NaN, 200, 250, 400]"),
        ("refbench-pro", "[nan, 200, 250, 400]"),
    ],
)
def test_a_non_finite_box_is_found_as_written(parsing: ReaderName, text: str) -> None:
    # The judge decides what it is worth (a box that matches nothing); the reader only reads.
    box = find_box(text, parsing)
    assert box is not None and math.isnan(box[0]) and box[1:] == (200, 250, 400)


DEEP = [
    "[" * 3000,
    "[" * 3000 + "]",
    "[" * 3000 + "]" * 3000,
    "{" * 3000,
    '{"bbox_2d": ' + "[" * 3000 + "1" + "]" * 3000 + "}",
    "```json\n" + '{"a": ' * 2000 + "1" + "}" * 2000 + "\n```",
]


@pytest.mark.parametrize("parsing", FILE_LOADERS)
@pytest.mark.parametrize("text", DEEP, ids=range(len(DEEP)))
def test_deep_nesting_finds_no_box_and_never_raises(parsing: ReaderName, text: str) -> None:
    # Ref-Adv's and GroundingME's released code catch the RecursionError and read no box;
    # RefBench-PRO's lets it through (a crash), which here reads as no box from that bracket.
    assert find_box(text, parsing) is None


NESTED = {
    "ref-adv": lambda n: '{"bboxes": ' + "[" * n + "[1, 2, 3, 4]" + "]" * n + "}",
    "groundingme": lambda n: '{"bbox_2d": ["1", "2", "3", "4"], "x": ' + "[" * n + "]" * n + "}",
}


@pytest.mark.parametrize("parsing", sorted(NESTED))
def test_json_nested_up_to_the_bound_is_read_and_beyond_it_is_not(parsing: ReaderName) -> None:
    # Both read (1, 2, 3, 4) while the JSON nests at most MAX_DEPTH deep; beyond, Ref-Adv's
    # answer is unreadable and GroundingME's falls back to its run of four numbers (none here).
    assert find_box(NESTED[parsing](MAX_DEPTH - 2), parsing) == (1, 2, 3, 4)
    assert find_box(NESTED[parsing](MAX_DEPTH), parsing) is None


@pytest.mark.parametrize("parsing", sorted(NESTED))
@pytest.mark.parametrize("nesting", [MAX_DEPTH - 2, MAX_DEPTH, 900])
def test_an_answer_reads_the_same_from_any_depth_of_caller(
    parsing: ReaderName, nesting: int
) -> None:
    # The decoder's own limit is the interpreter's, which a deep caller (a Ray actor) lowers;
    # the fixed bound makes the reading independent of who calls.
    text = NESTED[parsing](nesting)

    def from_depth(frames: int) -> Box | None:
        return find_box(text, parsing) if frames == 0 else from_depth(frames - 1)

    assert from_depth(0) == from_depth(300)


PIECES = st.one_of(
    st.text(max_size=8),
    st.sampled_from(['{"bbox_2d": ', "null", "[", "]", "{", "}", ",", "```json\n", "```", "0",
                     "12.5", "-3", "1e999", "NaN", "Infinity", "true", '"7"', "9" * 400,
                     "[" * 400, "]" * 400, '"bboxes": ', "\n", ": "]),
)  # fmt: skip


@given(st.lists(PIECES, max_size=30).map("".join))
def test_no_reader_raises_on_any_text(text: str) -> None:
    for parsing in FILE_LOADERS:
        box = find_box(text, parsing)
        assert box is None or (len(box) == 4 and all(isinstance(v, float) for v in box))


# -- issue 37: hostile answers ----------------------------------------------------------------
# tests/scoring/reference_finders.py is each finder's search as the released file writes it;
# the finders here must find the same box in every text, in time linear in its length.

FINDER_PIECES = {
    "ref-adv": ["[", "]", "{", "}", '"', "\\", '\\"', ",", ": ", "1", "2.5", "NaN", "true", " ",
                "\n", "a", '"bboxes": ', "[1, 2, 3, 4]", "```", "```json\n", "```JSON ", "`"],
    "groundingme": ["{", "}", '"bbox_2d"', '"bbox_2d": ', "[", "]", "null", '"3"', "1", "12",
                    "-", ".", ",", " ", "\n", "\t", "\u0663", "x", "1.5", "-7"],
    "refbench-pro": ["[", "]", ",", ", ", " ", "\n", "\r", "\t", "\u00a0", "1", "12", "1_0", "_",
                     ".", "e", "E", "-", "+", "nan", "NaN", "inf", "Infinity", "INFINITY", '"',
                     "x", "\u0663", "true", "1e5", "1.5", "[1, 2, 3, 4]", "[ 1 , 2,3 ,4 ]"],
}  # fmt: skip


def _same(found: Box | None, expected: Box | None) -> bool:
    """Equal boxes, a NaN equal to a NaN."""
    return repr(found) == repr(expected)


@pytest.mark.parametrize("parsing", sorted(FINDER_PIECES))
@settings(max_examples=scaled(3))  # three finders share the profile's count
@given(data=st.data())
def test_each_finder_finds_what_the_released_search_finds(
    parsing: ReaderName, data: st.DataObject
) -> None:
    pieces = st.one_of(st.sampled_from(FINDER_PIECES[parsing]), st.text(max_size=3))
    text = data.draw(st.lists(pieces, max_size=30).map("".join))
    assert _same(find_box(text, parsing), reference_finders.FINDERS[parsing](text))


HOSTILE = {
    "[": ("[", ""),
    "[1,": ("[1,", ""),
    '{"a":': ('{"a":', ""),
    "{": ("{", ""),
    "(": ("(", ""),
    "digits": ("1", ""),
    "1,2,3,4": ("1,2,3,4 ", ""),
    "[1,2,3,x]": ("[1,2,3,x]", ""),
    "[]": ("[] ", ""),
    "fence, spaces": (" ", "```"),
    "[ then 1000 numbers": ("[" + "1," * 1000, ""),
    "[ then ]": ("[", "]"),
    '"[] then ]': ('"[]', "]"),
    '{"a": then }': ('{"a":', "}"),
}


def hostile(name: str, size: int) -> str:
    """``size`` characters of the shape: its unit repeated, then its end (a fence comes first)."""
    unit, end = HOSTILE[name]
    if end == "```":
        return end + unit * (size - 3)
    return (unit * (size // len(unit) + 1))[: size - len(end)] + end


@pytest.mark.parametrize("parsing", FILE_LOADERS)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_answer_of_a_megabyte_is_read(parsing: ReaderName, name: str) -> None:
    # No time is asserted (the machine is shared): before issue 37, 1 MB of "[" took Ref-Adv's
    # finder 61 s and GroundingME's longer; read linearly, the whole test takes seconds.
    box = find_box(hostile(name, 1 << 20), parsing)
    assert box is None or (len(box) == 4 and all(isinstance(v, float) for v in box))


class _Counted:
    """Counts the calls of a function it wraps."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function, self.calls = function, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.function(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_ref_adv_decodes_json_once_however_many_brackets(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # run.py decodes from every "[" and "{": its work grows with their count times the length.
    # None of these holds a closed fence, so the one decoding is the value ending the answer.
    decodes = _Counted(json.JSONDecoder.raw_decode)
    monkeypatch.setattr(json.JSONDecoder, "raw_decode", lambda *a, **k: decodes(*a, **k))
    text = hostile(name, 20_000)
    find_box(text, "ref-adv")
    assert decodes.calls <= 1
    if name == "[ then ]":  # the count tells: the released search decodes from each "["
        reference_finders.ref_adv(text[-2000:])
        assert decodes.calls > 1000


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_refbench_pro_reads_one_bracket_however_many_there_are(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every content the search keeps reads as a box, so the last one ends the search.
    reads = _Counted(_box_finders._bracket_box)
    monkeypatch.setattr(_box_finders, "_bracket_box", reads)
    find_box(hostile(name, 20_000), "refbench-pro")
    assert reads.calls <= 1


@given(st.lists(st.sampled_from(FINDER_PIECES["refbench-pro"]), max_size=30).map("".join))
def test_every_bracket_refbench_pro_keeps_reads_as_a_box(text: str) -> None:
    # The search keeps a content only if it is four fields float() reads, so that the reader
    # stops at the last it keeps; one it passes over is one the released reader reads no box
    # from (the oracle test above).
    kept = [c for c in _box_finders._BRACKETED.findall(text) if c]
    assert all(_box_finders._bracket_box(c) is not None for c in kept)
