"""``groundbench show``'s figure: the answer's pixels land where PROTOCOL §1 puts them, its
region is filled even-odd, and everything not drawable is said in the caption."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text
from numpy.typing import NDArray
from PIL import Image

from runner.overlays import OverlayError
from runner.overlays._figure import DPI, WIDEN, draw_overlay, save_overlay
from runner.overlays._palette import ANSWER, CONTROL, DISTRACTOR, FILL_ALPHA, TARGET
from runner.overlays._scene import MOST_MARKED, Picture
from scoring import draw_polygon
from scoring._drawn import MAX_DRAWN, Point
from tests.runner.overlays.scenes import (
    GREY,
    H,
    W,
    answer,
    box_answer,
    drawn,
    pixels,
    question,
    solid_blob,
)

SQUARE_UNITS = [(300, 200), (600, 200), (600, 800), (300, 800)]  # 60×60 px at W=200, H=100


def _rgb(hex_colour: str) -> NDArray[np.float64]:
    return np.array([int(hex_colour[k : k + 2], 16) for k in (1, 3, 5)], dtype=float)


FILLED = FILL_ALPHA * _rgb(ANSWER.colour) + (1 - FILL_ALPHA) * np.array(GREY, dtype=float)


def _png(figure: Figure, tmp_path: Path) -> NDArray[np.uint8]:
    path = save_overlay(figure, tmp_path / "overlay.png")
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def _at(figure: Figure, image: NDArray[np.uint8], point: Point) -> NDArray[np.float64]:
    """The PNG's colour at a point of the frame, found through the axes' own transform."""
    figure.set_dpi(DPI)  # the transform as it was when the PNG was drawn
    x, y = figure.axes[0].transData.transform(point)
    row, column = image.shape[0] - round(y), round(x)
    colour: NDArray[np.float64] = image[row, column].astype(float)
    return colour


def _is(colour: NDArray[np.float64], expected: NDArray[np.float64] | tuple[int, ...]) -> bool:
    return bool(np.all(np.abs(colour - np.asarray(expected, dtype=float)) <= 3))


def _text(figure: Figure) -> str:
    """Every text of the figure on one line, whitespace (wrapping included) made one space."""
    return " ".join(" ".join(t.get_text() for t in figure.findobj(Text)).split())


def test_the_answer_fills_where_the_protocol_places_its_units(tmp_path: Path) -> None:
    square = pixels(SQUARE_UNITS)  # x·W/999, y·H/999: about (60, 20)–(120, 80)
    figure = draw_overlay(question(), answer(drawn(square, (square,))))
    image = _png(figure, tmp_path)
    (left, top), (right, bottom) = square[0], square[2]
    inside = [
        ((left + right) / 2, (top + bottom) / 2),
        (left + 2, top + 2),
        (right - 2, bottom - 2),
    ]
    outside = [(left - 2, top + 10), (right + 2, bottom - 10), (left + 10, top - 2), (20, 50)]
    assert all(_is(_at(figure, image, p), FILLED) for p in inside)
    assert all(_is(_at(figure, image, p), GREY) for p in outside)


def test_the_png_maps_one_frame_pixel_to_the_same_image_pixels_on_both_axes(
    tmp_path: Path,
) -> None:
    figure = draw_overlay(question(), answer(None, score=None))
    _png(figure, tmp_path)
    figure.set_dpi(DPI)
    (x0, y0), (x1, y1) = figure.axes[0].transData.transform([(0, 0), (W, H)])
    assert (x1 - x0) / W == pytest.approx((y0 - y1) / H, rel=1e-6)  # equal aspect, y down
    assert x1 - x0 > 4 * W  # drawn larger than the frame: each frame pixel is visible


def test_a_ring_run_twice_leaves_its_inside_unfilled(tmp_path: Path) -> None:
    square = pixels(SQUARE_UNITS)
    twice = drawn(square + square, fill=(), duplicates=(4, 5, 6, 7))
    figure = draw_overlay(question(), answer(twice))
    image = _png(figure, tmp_path)
    centre = ((square[0][0] + square[2][0]) / 2, (square[0][1] + square[2][1]) / 2)
    assert _is(_at(figure, image, centre), GREY)


def test_a_bow_tie_fills_both_lobes_and_not_between_them(tmp_path: Path) -> None:
    tie = ((40.0, 20.0), (160.0, 80.0), (160.0, 20.0), (40.0, 80.0))
    lobes = (((40.0, 20.0), (100.0, 50.0), (40.0, 80.0)),
             ((160.0, 20.0), (160.0, 80.0), (100.0, 50.0)))  # fmt: skip
    figure = draw_overlay(question(), answer(drawn(tie, lobes, crossings=((100.0, 50.0),))))
    image = _png(figure, tmp_path)
    assert _is(_at(figure, image, (55, 50)), FILLED)
    assert _is(_at(figure, image, (145, 50)), FILLED)
    assert _is(_at(figure, image, (100, 28)), GREY)


BOW_TIE = "[100, 100, 400, 400, 400, 100, 100, 400]"  # crosses at (250, 250) units
SQUARE = "100 100 400 100 400 400 100 400"


def test_scorings_own_drawing_fills_a_bow_tie_and_not_a_ring_run_twice(tmp_path: Path) -> None:
    tie = draw_polygon(BOW_TIE, 4, W, H)
    figure = draw_overlay(question(), answer(tie, budget=4))
    image = _png(figure, tmp_path)
    crossing_x = 250 * W / 999
    assert tie.crossings and tie.crossings[0][0] == pytest.approx(crossing_x)
    assert _is(_at(figure, image, (crossing_x - 20, 25)), FILLED)  # the left lobe
    assert _is(_at(figure, image, (crossing_x + 20, 25)), FILLED)  # the right lobe
    assert _is(_at(figure, image, (crossing_x, 13)), GREY)  # above the crossing
    twice = draw_polygon(f"{SQUARE} {SQUARE}", 8, W, H)
    figure = draw_overlay(question(), answer(twice))
    assert _is(_at(figure, _png(figure, tmp_path), (crossing_x, 25)), GREY)
    labels = [t.get_text() for t in figure.axes[0].texts]
    assert labels == ["1, 5", "2, 6", "3, 7", "4, 8"]  # one label for the vertices at a point


def test_a_list_too_long_to_draw_whole_is_not_numbered() -> None:
    many = draw_polygon(" ".join(str(k % 999) for k in range(4 * MAX_DRAWN)), 8, W, H)
    figure = draw_overlay(question(), answer(many, score=None))
    assert not figure.axes[0].texts
    assert "not numbered" not in _text(figure)
    assert all(note in _text(figure) for note in many.notes)
    marks = [line for line in figure.axes[0].lines if line.get_marker() == "o"]
    assert marks and all(len(line.get_xdata()) <= MOST_MARKED for line in marks)  # type: ignore[arg-type]
    assert f"999 repeated points: the first {MOST_MARKED} are marked" in _text(figure)


def test_svg_keeps_the_caption_and_vertex_numbers_as_text(tmp_path: Path) -> None:
    square = pixels(SQUARE_UNITS)
    figure = draw_overlay(question(), answer(drawn(square, (square,))))
    path = save_overlay(figure, tmp_path / "overlay.svg")
    texts = [
        " ".join((e.text or "").split()) for e in ET.parse(path).iter() if e.tag.endswith("text")
    ]
    assert {"1", "2", "3", "4"} <= set(texts)
    assert any("the grey thing" in t for t in texts)
    assert any("IoU 45.7" in t for t in texts)


def test_pdf_and_png_are_written_with_embedded_truetype_fonts(tmp_path: Path) -> None:
    figure = draw_overlay(question(), answer(None, score=None))
    pdf = save_overlay(figure, tmp_path / "overlay.PDF").read_bytes()
    assert pdf.startswith(b"%PDF") and b"/CIDFontType2" in pdf and b"/Type3" not in pdf
    with Image.open(save_overlay(figure, tmp_path / "overlay.png")) as png:
        assert png.format == "PNG" and png.size[0] == 6 * DPI


def test_an_unknown_suffix_is_refused_naming_the_kinds(tmp_path: Path) -> None:
    figure = draw_overlay(question(), answer(None, score=None))
    with pytest.raises(OverlayError, match=r"\.png, \.svg, \.pdf; not \.jpg"):
        save_overlay(figure, tmp_path / "overlay.jpg")
    assert not (tmp_path / "overlay.jpg").exists()


def test_vertices_not_drawable_are_said_and_the_rest_drawn() -> None:
    notes = ("2 values are not finite: not drawn", "1 vertex far outside the frame: clipped")
    vertices = ((20.0, 20.0), None, (80.0, 20.0), (80.0, 80.0))
    finite = tuple(v for v in vertices if v is not None)
    figure = draw_overlay(question(), answer(drawn(vertices, (finite,), notes=notes)))
    text = _text(figure)
    assert all(note in text for note in notes)
    numbers = [t.get_text() for t in figure.axes[0].texts]
    assert numbers == ["1", "3", "4"]  # the vertex not drawn keeps its place, unnumbered


def test_a_picture_with_a_problem_says_it_and_shows_a_blank_frame() -> None:
    problem = "images/q1.png: changed since the cohort was built (sha256 differs)"
    figure = draw_overlay(question(), answer(None, picture=Picture("full", None, problem)))
    assert problem in _text(figure)
    assert not figure.axes[0].images


def test_no_image_sent_is_a_light_frame_that_says_so() -> None:
    figure = draw_overlay(
        question(), answer(None, picture=Picture("none", None), condition="no-image")
    )
    assert not figure.axes[0].images
    assert "no image was sent (condition no-image)" in _text(figure)


def test_a_greyscale_picture_is_drawn_in_grey() -> None:
    picture = Picture("grey", solid_blob(size=(100, 50), mode="L"))
    figure = draw_overlay(question(), answer(None, picture=picture))
    (image,) = figure.axes[0].images
    shown = image.get_array()
    assert shown is not None and shown.ndim == 2 and image.get_cmap().name == "gray"
    assert tuple(image.get_extent()) == (0, W, H, 0)  # half-res, stretched over the frame


def test_an_undecodable_picture_is_said_not_raised() -> None:
    broken = Picture("full", solid_blob().__class__(b"not an image", "image/png", W, H))
    assert "cannot be decoded" in _text(draw_overlay(question(), answer(None, picture=broken)))


def test_the_view_widens_for_outside_vertices_by_half_a_frame_at_most() -> None:
    near = ((-30.0, 20.0), (80.0, 20.0), (80.0, 80.0))
    figure = draw_overlay(question(), answer(drawn(near, (near,))))
    assert figure.axes[0].get_xlim()[0] == pytest.approx(-30.0)
    assert "beyond the view" not in _text(figure)
    far = ((-1e6, 20.0), (80.0, 1e308), (80.0, 80.0))
    figure = draw_overlay(question(), answer(drawn(far, ())))
    ax = figure.axes[0]
    assert ax.get_xlim()[0] == pytest.approx(-WIDEN * W)
    assert ax.get_ylim()[0] == pytest.approx((1 + WIDEN) * H)  # y down: bottom first
    assert "2 answer vertices lie beyond the view" in _text(figure)
    assert [t.get_text() for t in ax.texts] == ["3"]


def test_an_unparseable_answer_quotes_its_first_characters() -> None:
    text = "I think the object is " + "very " * 100 + "far away"
    figure = draw_overlay(question(), answer(drawn((), (), shape="none"), score=None, text=text))
    shown = _text(figure)
    assert "unparseable: “I think the object is very" in shown and "far away" not in shown


def test_an_error_is_stated() -> None:
    figure = draw_overlay(
        question(), answer(None, score=None, outcome="refusal", text=None, error="I can't help")
    )
    assert "error (refusal): I can't help" in _text(figure)


def test_long_text_never_leaves_the_figure() -> None:
    long = "x" * 400 + " " + "a very long expression " * 40
    many = tuple((float(k % W), float(k % H)) for k in range(300))
    figure = draw_overlay(
        question(),
        answer(drawn(many, (), notes=(long,)), hint=long, text=long, outcome="answer"),
    )
    figure.canvas.draw()  # the legend places its texts when drawn
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    box = figure.bbox
    for text in figure.findobj(Text):
        if text.get_text() and text.get_visible() and not text.axes:
            extent = text.get_window_extent(renderer)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1 + 0.5, text.get_text()[:40]
            assert box.y0 <= extent.y0 and extent.y1 <= box.y1 + 0.5, text.get_text()[:40]
    assert "vertices past the 128th are not numbered" in _text(figure)


def test_the_legend_names_only_the_roles_drawn() -> None:
    square = pixels(SQUARE_UNITS)
    figure = draw_overlay(question(targets={8: square}), answer(drawn(square, (square,))))
    (legend,) = figure.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == [TARGET.label, ANSWER.label]
    assert DISTRACTOR.label not in labels


def test_a_box_answer_draws_its_control_when_asked() -> None:
    control = drawn(((50.0, 20.0), (150.0, 20.0), (150.0, 80.0), (50.0, 80.0)), fill=())
    ring = ((60.0, 30.0), (140.0, 30.0), (140.0, 70.0), (60.0, 70.0))
    boxed = box_answer({16: control})
    plain = draw_overlay(question(targets={16: ring}), boxed)
    labels = [t.get_text() for t in plain.legends[0].get_texts()]
    assert labels == ["referent's COCO box", "box answer"]
    assert "box IoU 61.0" in _text(plain)
    shown = draw_overlay(question(targets={16: ring}), boxed, control=16)
    labels = [t.get_text() for t in shown.legends[0].get_texts()]
    assert TARGET.label in labels and CONTROL.label in labels
    assert "box-derived control N = 16: IoU 45.7" in _text(shown)
    with pytest.raises(OverlayError, match="controls are for N = 16"):
        draw_overlay(question(), boxed, control=8)
