"""The HTML report's overlays: an answer's pixels where the protocol's mapping puts them (x·W/999,
y·H/999), filled even-odd, every text escaped, and bad input drawn as far as it goes."""

from __future__ import annotations

import base64
import io
import re
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from conditions import BOX, ImageBlob
from runner.overlays._encode import data_url
from runner.overlays._scene import AnswerView, Picture, QuestionView
from runner.overlays._svg import (
    overlay_svg,
    picture_def,
    picture_defs,
    question_defs,
)
from scoring import BoxScore, PolygonScore, draw_box, draw_polygon

W, H = 640, 427
SQUARE = ((100.0, 100.0), (300.0, 100.0), (300.0, 300.0), (100.0, 300.0))
FULL = Picture("full", ImageBlob(b"jpeg", "image/jpeg", W, H))


def question(width: int = W, height: int = H) -> QuestionView:
    return QuestionView(
        qid="refcoco:1", source="refcoco", expression="the <b>red</b> car", category="car",
        width=width, height=height, image_file="a.jpg", image_sha256="0" * 64,
        targets={8: SQUARE, 16: SQUARE}, part=SQUARE, other_parts=(),
        distractors=(((( 400.0, 50.0), (500.0, 50.0), (500.0, 150.0)),),), box=(100, 100, 200, 200),
    )  # fmt: skip


def answer(
    text: str | None, n: int = 8, *, picture: Picture = FULL, question_: QuestionView | None = None
) -> AnswerView:
    q = question_ or question()
    return AnswerView(
        configuration="cfg", condition="base", budget=n, qid=q.qid, attempt=0,
        outcome="answer", text=text, error=None, finish_reason="stop", hint=None,
        picture=picture, polygon=draw_polygon(text, n, q.width, q.height),
        score=PolygonScore(parseable=True),
    )  # fmt: skip


def box_answer(text: str) -> AnswerView:
    return AnswerView(
        configuration="cfg", condition="base", budget=BOX, qid="refcoco:1", attempt=0,
        outcome="answer", text=text, error=None, finish_reason="stop", hint=None, picture=FULL,
        box=draw_box(text, W, H, budgets=(8,)), box_score=BoxScore(parseable=True),
    )  # fmt: skip


def parsed(svg: str) -> ET.Element:
    """The overlay as XML (it is well-formed: every attribute quoted, every text escaped)."""
    return ET.fromstring(svg)


def answer_paths(svg: str) -> list[ET.Element]:
    return [p for p in parsed(svg).iter("path") if p.get("stroke") == "#D55E00"]


def numbers(d: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]


UNITS = [0, 0, 999, 0, 999, 999, 0, 999, 250, 500, 500, 250, 750, 500, 500, 750]


def test_the_answers_vertices_are_its_units_mapped_to_the_frame() -> None:
    svg = overlay_svg(question(), answer(str(UNITS)))
    (outline,) = answer_paths(svg)
    expected = [round(u * (W if k % 2 == 0 else H) / 999, 1) for k, u in enumerate(UNITS)]
    assert numbers(outline.get("d", "")) == pytest.approx(expected, abs=0.051)
    assert parsed(svg).get("viewBox") == f"0 0 {W} {H}"


def test_the_fill_is_even_odd_over_the_outline() -> None:
    svg = overlay_svg(question(), answer(str(UNITS)))
    (fill,) = [p for p in parsed(svg).iter("path") if p.get("fill-rule") == "evenodd"]
    (outline,) = answer_paths(svg)
    assert fill.get("d") == outline.get("d")
    assert fill.get("fill-opacity") == "0.35"


def test_strokes_keep_their_width_on_any_scale() -> None:
    strokes = [e for e in parsed(overlay_svg(question(), answer(str(UNITS)))).iter()
               if e.get("stroke") not in (None, "none")]  # fmt: skip
    assert strokes and all(e.get("vector-effect") == "non-scaling-stroke" for e in strokes)


def test_a_list_of_the_wrong_length_is_a_dashed_open_polyline() -> None:
    svg = overlay_svg(question(), answer("[0, 0, 999, 0, 999, 999]"))
    (line,) = answer_paths(svg)
    assert not line.get("d", "").endswith("Z") and line.get("stroke-dasharray")
    assert "evenodd" not in svg


def test_vertices_are_numbered_on_a_page_not_on_a_thumbnail() -> None:
    full = parsed(overlay_svg(question(), answer(str(UNITS))))
    assert [t.text for t in full.iter("text")] == [str(k) for k in range(1, 9)]
    thumbnail = parsed(overlay_svg(question(), answer(str(UNITS)), thumbnail=True))
    assert list(thumbnail.iter("text")) == []


def test_a_bow_tie_marks_its_crossing_and_a_repeat_its_duplicate() -> None:
    bow_tie = [0, 0, 999, 999, 999, 0, 0, 999, 0, 0, 0, 0, 0, 0, 0, 0]
    svg = parsed(overlay_svg(question(), answer(str(bow_tie))))
    (dots,) = [p for p in svg.iter("path") if p.get("stroke") == "#F0E442"]
    crossing = (999 / 2 * W / 999, 999 / 2 * H / 999)  # where the bow-tie's edges cross
    marked = [tuple(numbers(m)[:2]) for m in dots.get("d", "").split("M")[1:]]
    assert any(p == pytest.approx(crossing, abs=0.05) for p in marked), marked
    (rings,) = [g for g in svg.iter("g") if g.get("stroke") == "#000000"]
    centres = {(c.get("cx"), c.get("cy")) for c in rings.iter("circle")}
    assert centres == {("0", "0")}  # the repeats of the first vertex, at its place


def test_vertices_outside_widen_the_view_by_half_a_frame_at_most() -> None:
    svg = parsed(overlay_svg(question(), answer(str([-900, 0, *UNITS[2:]]))))
    left, top, width, height = numbers(svg.get("viewBox", ""))
    assert left == pytest.approx(-W / 2) and top == 0
    assert (width, height) == pytest.approx((1.5 * W, H), abs=0.1)
    # the fill is clipped to the frame (scoring's), the outline is not
    nested = [e for e in svg if e.tag == "svg"]
    assert nested and nested[0].get("width") == str(W)


@pytest.mark.parametrize(
    "text",
    ["[" + ", ".join(["1e308"] * 16) + "]", "[nan, 0, inf, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3]",
     str(list(range(200_000))), "[" + ", ".join(["-1e308", "1e308"] * 8) + "]"],
)  # fmt: skip
def test_bad_values_draw_what_is_drawable(text: str) -> None:
    svg = overlay_svg(question(), answer(text))
    parsed(svg)  # well-formed
    assert not re.search(r"nan|inf", svg, re.I)
    assert all(abs(v) <= 2 * W for v in numbers(parsed(svg).get("viewBox", "")))
    assert len(svg) < 300_000  # at most MAX_DRAWN vertices, none numbered past 128


def test_text_is_escaped() -> None:
    problem = Picture("full", None, problem='im<script>alert("x")</script>.jpg: missing')
    svg = overlay_svg(question(), answer(str(UNITS), picture=problem))
    assert "<script>" not in svg
    assert "im&lt;script&gt;" in svg
    assert any("alert" in (t.text or "") for t in parsed(svg).iter("tspan"))


def test_no_image_sent_says_so_and_a_picture_id_is_used() -> None:
    none = overlay_svg(
        question(), answer(str(UNITS), picture=Picture("none", None)), picture_id="p"
    )
    assert "no image sent" in none and 'href="#p"' not in none
    assert '<use href="#p"/>' in overlay_svg(question(), answer(str(UNITS)), picture_id="p")


def test_the_question_rings_are_used_from_its_definitions() -> None:
    svg = overlay_svg(question(), answer(str(UNITS), 16), scene_id="s")
    uses = [u.get("href") for u in parsed(svg).iter("use")]
    assert uses == ["#s-d", "#s-p", "#s-n16"]
    defs = parsed(f"<svg>{question_defs(question(), 's')}</svg>")
    ids = {e.get("id") for e in defs.iter() if e.get("id")}
    assert {"s-d", "s-p", "s-n8", "s-n16", "s-box"} == ids
    thumbnail = overlay_svg(question(), answer(str(UNITS), 16), scene_id="s", thumbnail=True)
    assert "#s-p" not in thumbnail


def test_a_box_answer_is_its_rectangle_over_the_coco_box() -> None:
    svg = parsed(overlay_svg(question(), box_answer("[0, 0, 499.5, 999]"), control=8))
    (rect,) = [r for r in svg.iter("rect") if r.get("stroke") == "#E69F00"]
    assert numbers(f"{rect.get('x')} {rect.get('y')} {rect.get('width')} {rect.get('height')}") == (
        pytest.approx([0, 0, W * 499.5 / 999, H], abs=0.05)
    )
    assert any(p.get("stroke") == "#0072B2" for p in svg.iter("path"))  # the control
    assert any(r.get("stroke") == "#009E73" for r in svg.iter("rect"))  # the COCO box


def test_picture_definitions_hold_the_data_url_escaped() -> None:
    defs = picture_defs([picture_def("p-1", "data:image/png;base64,AAA=", W, H)])
    image = next(parsed(defs).iter("image"))
    assert (image.get("id"), image.get("width"), image.get("href")) == (
        "p-1",
        str(W),
        "data:image/png;base64,AAA=",
    )


def _jpeg(size: tuple[int, int], mode: str = "RGB") -> ImageBlob:
    out = io.BytesIO()
    Image.new(mode, size, 128).save(out, "JPEG")
    return ImageBlob(out.getvalue(), "image/jpeg", *size)


def test_an_image_is_scaled_down_once_to_its_pages_size() -> None:
    url = data_url(_jpeg((640, 427)), 200)
    assert url is not None and url.startswith("data:image/jpeg;base64,")

    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as small:
        assert max(small.size) == 200
    grey = data_url(_jpeg((640, 427), "L"), 480)
    assert grey is not None
    with Image.open(io.BytesIO(base64.b64decode(grey.split(",", 1)[1]))) as image:
        assert image.mode == "L" and image.size == (480, 320)


def test_bytes_pillow_cannot_read_give_no_image() -> None:
    assert data_url(ImageBlob(b"not an image", "image/jpeg", 10, 10), 200) is None
