"""Overlays as SVG text, for the HTML report: one question's image as the model saw it, its
target, source part and distractors, and one answer drawn as it was scored.

Everything is drawn in the annotation frame's pixels (the ``viewBox``), so a vertex at
``(x, y)`` units of 0–999 sits at ``x·W/999, y·H/999`` exactly as scoring places it (PROTOCOL
§1); the browser scales the whole to a 120 px thumbnail or a 600 px page, and strokes keep their
width on screen (``vector-effect="non-scaling-stroke"``). The answer is filled by SVG's
even-odd rule, the protocol's fill.

A page holds many overlays of few questions: each question's image and rings are written once
per page as definitions (:func:`picture_defs`, :func:`question_defs`) that each overlay uses by
id. Every string an answer brings (it is untrusted model output) is escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from html import escape

from conditions import BOX as BOX_BUDGET
from runner.overlays._palette import (
    ANSWER,
    BOX,
    CONTROL,
    CROSSING,
    DISTRACTOR,
    DUPLICATE,
    FILL_ALPHA,
    PART,
    TARGET,
    UNSCORED,
    Style,
)
from runner.overlays._scene import (
    MOST_MARKED,
    MOST_NUMBERED,
    AnswerView,
    Picture,
    QuestionView,
    Ring,
)
from scoring._drawn import DrawnAnswer, Point

OUTSIDE = "#e8e8e8"  # the widened view beyond the frame
THUMBNAIL_DIGITS = 0  # decimals of a thumbnail's answer: a pixel of the frame is < 1/3 on it
_TRAILING = re.compile(r"\.0(?![0-9])")  # "12.0" → "12": a fifth of a path's bytes saved
PLACEHOLDER = "#f4f4f4"  # the frame where no image is shown


def overlay_svg(
    question: QuestionView,
    answer: AnswerView | None,
    *,
    thumbnail: bool = False,
    picture_id: str | None = None,
    scene_id: str | None = None,
    control: int | None = None,
) -> str:
    """One ``<svg>`` showing ``answer`` over its question's image, in frame pixels.

    Parameters
    ----------
    question
        The question: frame size, target ``G_N`` per budget, source part, distractors.
    answer
        The attempt drawn (``None``: the question alone, its part and distractors). Its
        picture decides the image shown: the variant sent, "no image sent", or the problem
        that keeps it from being shown.
    thumbnail
        Leave out the vertex numbers and the source part: a gallery's small overlay.
    picture_id
        The id of the page's ``<image>`` definition of this picture (:func:`picture_defs`);
        ``None``: no image is drawn (the frame stays blank).
    scene_id
        The id prefix of the page's :func:`question_defs` of this question; ``None``: the
        rings are written into this overlay.
    control
        For a box answer, the budget whose box-derived control is drawn too.

    Returns
    -------
    str
        ``<svg class="ov" viewBox=…>``: the frame, widened to show answer vertices beyond it,
        at most half a frame on each side.
    """
    left, top, right, bottom = _view(question, answer, control)
    parts = [
        f'<svg class="ov" viewBox="{_n(left)} {_n(top)} {_n(right - left)} {_n(bottom - top)}" '
        f'style="background:{OUTSIDE}" role="img">',
        _picture(question, answer.picture if answer else None, picture_id),
        _scene(question, answer, thumbnail, scene_id),
    ]
    if answer is not None:
        parts.append(_answer(question, answer, thumbnail, control, (left, top, right, bottom)))
    return "".join(parts) + "</svg>"


def question_defs(question: QuestionView, scene_id: str, *, part: bool = True) -> str:
    """The question's rings as definitions an overlay uses by id (:func:`overlay_svg`'s
    ``scene_id``): ``<id>-d`` its distractors, ``<id>-p`` its source part (left out with
    ``part=False``: thumbnails do not draw it), ``<id>-n<N>`` each target ``G_N``,
    ``<id>-box`` its COCO box. Goes inside a page's ``<defs>``."""
    out = [
        f'<g id="{scene_id}-d">{_distractors(question)}</g>',
        f'<g id="{scene_id}-p">{_part(question)}</g>' if part else "",
        *(
            _ring(ring, TARGET, 2.0, element_id=f"{scene_id}-n{n}")
            for n, ring in sorted(question.targets.items())
        ),
        _coco_box(question, f' id="{scene_id}-box"'),
    ]
    return "".join(out)


def picture_def(picture_id: str, data_url: str, width: int, height: int) -> str:
    """One picture as an ``<image>`` definition, stretched over the ``width × height`` frame
    (a half-res image is drawn at the frame's size, as blurred as the model saw it)."""
    return (
        f'<image id="{picture_id}" x="0" y="0" width="{width}" height="{height}" '
        f'preserveAspectRatio="none" href="{escape(data_url)}"/>'
    )


def picture_defs(definitions: Iterable[str]) -> str:
    """Definitions (:func:`picture_def`, :func:`question_defs`) in one hidden ``<svg>`` for a
    page's body: every overlay of the page uses them by id."""
    return (
        '<svg class="defs" width="0" height="0" aria-hidden="true" '
        f'style="position:absolute"><defs>{"".join(definitions)}</defs></svg>'
    )


def _view(
    question: QuestionView, answer: AnswerView | None, control: int | None
) -> tuple[float, float, float, float]:
    """``(left, top, right, bottom)``: the frame, grown to the answer's drawn points up to
    half a frame beyond each side (scoring clips a frame beyond; more would shrink the
    image to a corner)."""
    w, h = question.width, question.height
    points = _answer_points(answer, control)
    xs = [0.0, float(w), *(p[0] for p in points)]
    ys = [0.0, float(h), *(p[1] for p in points)]
    return (
        max(min(xs), -w / 2),
        max(min(ys), -h / 2),
        min(max(xs), 1.5 * w),
        min(max(ys), 1.5 * h),
    )


def _answer_points(answer: AnswerView | None, control: int | None) -> list[Point]:
    if answer is None:
        return []
    points: list[Point] = []
    if answer.polygon is not None:
        points += answer.polygon.outline
    if answer.box is not None and answer.box.corners is not None:
        points += answer.box.corners
        if control is not None and control in answer.box.controls:
            points += answer.box.controls[control].outline
    return [p for p in points if math.isfinite(p[0]) and math.isfinite(p[1])]


def _picture(question: QuestionView, picture: Picture | None, picture_id: str | None) -> str:
    """The image as sent, or a blank frame saying why there is none."""
    w, h = question.width, question.height
    if picture is not None and picture.problem is not None:
        return _blank(w, h, picture.problem)
    if picture is not None and picture.variant == "none":
        return _blank(w, h, "no image sent")
    if picture_id is None:
        return _blank(w, h, "")
    return f'<use href="#{picture_id}"/>'


def _blank(w: int, h: int, words: str) -> str:
    """A light frame with ``words`` across its middle, wrapped at about 40 characters."""
    size = max(w, h) * 0.04
    lines = _wrapped(words, 40)[:4]
    top = h / 2 - size * (len(lines) - 1) / 2
    text = "".join(
        f'<tspan x="{_n(w / 2)}" y="{_n(top + k * size * 1.2)}">{escape(line)}</tspan>'
        for k, line in enumerate(lines)
    )
    return (
        f'<rect x="0" y="0" width="{w}" height="{h}" fill="{PLACEHOLDER}" stroke="#999999" '
        f'vector-effect="non-scaling-stroke"/>'
        + (
            f'<text text-anchor="middle" font-size="{_n(size)}" fill="#555555">{text}</text>'
            if lines
            else ""
        )
    )


def _wrapped(words: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in words.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word[:width])
    return lines


def _scene(
    question: QuestionView, answer: AnswerView | None, thumbnail: bool, scene_id: str | None
) -> str:
    """The question's rings under the answer: distractors, the source part (not on a
    thumbnail), the target the answer was scored against (the COCO box for a box answer)."""
    budget = answer.budget if answer is not None else None
    target = budget is not None and (budget == BOX_BUDGET or budget in question.targets)
    if scene_id is not None:
        uses = [f"{scene_id}-d", *([] if thumbnail else [f"{scene_id}-p"])]
        if target:
            uses.append(f"{scene_id}-box" if budget == BOX_BUDGET else f"{scene_id}-n{budget}")
        return "".join(f'<use href="#{u}"/>' for u in uses)
    out = _distractors(question) + ("" if thumbnail else _part(question))
    if budget == BOX_BUDGET:
        out += _coco_box(question, "")
    elif budget is not None and budget in question.targets:
        out += _ring(question.targets[budget], TARGET, 2.0)
    return out


def _distractors(question: QuestionView) -> str:
    return "".join(_ring(p, DISTRACTOR, 2.0) for parts in question.distractors for p in parts)


def _part(question: QuestionView) -> str:
    return _ring(question.part, PART, 2.0) if question.part else ""


def _coco_box(question: QuestionView, attributes: str) -> str:
    x, y, w, h = question.box
    return (
        f'<rect{attributes} x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" '
        f'{_stroke(TARGET, 2.0)} fill="none"/>'
    )


def _answer(
    question: QuestionView,
    answer: AnswerView,
    thumbnail: bool,
    control: int | None,
    view: tuple[float, float, float, float],
) -> str:
    out = ""
    if answer.polygon is not None:
        out += _polygon(question, answer.polygon, thumbnail, view)
    if answer.box is not None:
        if control is not None and control in answer.box.controls:
            outline = answer.box.controls[control].outline
            out += _line(outline, CONTROL, closed=True, digits=_digits(thumbnail))
        if answer.box.rectangle is not None:
            left, top, right, bottom = answer.box.rectangle
            out += (
                f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" '
                f'height="{_n(bottom - top)}" {_stroke(BOX, 2.5)} fill="{BOX.colour}" '
                f'fill-opacity="{FILL_ALPHA}"/>'
            )
    return out


def _polygon(
    question: QuestionView,
    drawn: DrawnAnswer,
    thumbnail: bool,
    view: tuple[float, float, float, float],
) -> str:
    """The answer as scored: a polygon filled even-odd (the fill clipped to the frame, as
    scoring clips it) or a dashed open polyline; its duplicates and crossings marked; its
    vertices numbered on a full-size overlay."""
    size = max(question.width, question.height)
    digits = _digits(thumbnail)
    if drawn.shape == "polygon" and len(drawn.outline) >= 2:
        out = _filled(question, drawn.outline, digits)
    elif drawn.shape == "polyline" and drawn.outline:
        out = _line(drawn.outline, UNSCORED, closed=False, digits=digits)
    else:
        out = ""
    points = [p for p in drawn.vertices if p is not None]
    repeats = [drawn.vertices[i] for i in drawn.duplicates[:MOST_MARKED] if i < len(drawn.vertices)]
    out += _rings([p for p in repeats if p is not None and _inside(p, view)], size * 0.018)
    out += _dots([p for p in drawn.crossings[:MOST_MARKED] if _inside(p, view)])
    if not thumbnail and len(points) <= MOST_NUMBERED:
        out += _numbers(drawn.vertices, size, view)
    return out


def _filled(question: QuestionView, outline: Sequence[Point], digits: int) -> str:
    """The ring filled even-odd and stroked: one path while it stays in the frame; else the
    fill inside a nested viewport of the frame (the region beyond it is not scored, so it is
    not filled) and the stroke over the whole view."""
    d = _path(outline, closed=True, digits=digits)
    fill = f'fill="{ANSWER.colour}" fill-opacity="{FILL_ALPHA}" fill-rule="evenodd"'
    w, h = question.width, question.height
    if all(0 <= x <= w and 0 <= y <= h for x, y in outline):
        return f'<path d="{d}" {fill} {_stroke(ANSWER, 2.0)}/>'
    return (
        f'<svg x="0" y="0" width="{w}" height="{h}" overflow="hidden">'
        f'<path d="{d}" {fill} stroke="none"/></svg>'
        f'<path d="{d}" fill="none" {_stroke(ANSWER, 2.0)}/>'
    )


def _line(points: Sequence[Point], style: Style, *, closed: bool, digits: int) -> str:
    if not points:
        return ""
    d = _path(points, closed=closed, digits=digits)
    return f'<path d="{d}" fill="none" {_stroke(style, 2.0)}/>'


def _ring(ring: Ring, style: Style, width: float, element_id: str | None = None) -> str:
    if not ring:
        return ""
    name = f' id="{element_id}"' if element_id is not None else ""
    return f'<path{name} d="{_path(ring, closed=True)}" fill="none" {_stroke(style, width)}/>'


def _stroke(style: Style, width: float) -> str:
    """A role's stroke, its dashes (in line widths, as the palette gives them) on screen."""
    dash = (
        f' stroke-dasharray="{",".join(_n(d * width) for d in style.dash)}"'
        if style.dash is not None
        else ""
    )
    return (
        f'stroke="{style.colour}" stroke-width="{_n(width)}"{dash} '
        f'vector-effect="non-scaling-stroke"'
    )


def _rings(points: Sequence[Point], radius: float) -> str:
    """Duplicate vertices: a hollow ring round each (the vertex stays visible inside)."""
    if not points:
        return ""
    circles = "".join(
        f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(radius)}" vector-effect="non-scaling-stroke"/>'
        for x, y in points
    )
    return f'<g fill="none" stroke="{DUPLICATE.colour}" stroke-width="1.5">{circles}</g>'


def _dots(points: Sequence[Point]) -> str:
    """Crossings: a yellow dot edged in black at each, 7 px across on any scale (a round cap on
    a segment of no length, stroked without scaling), two short paths however many there are."""
    if not points:
        return ""
    d = "".join(f"M{_n(x)} {_n(y)}h0" for x, y in points)
    return "".join(
        f'<path d="{d}" stroke="{colour}" stroke-width="{width}" stroke-linecap="round" '
        f'vector-effect="non-scaling-stroke"/>'
        for colour, width in (("#000000", 9), (CROSSING.colour, 6))
    )


def _numbers(
    vertices: Sequence[Point | None], size: int, view: tuple[float, float, float, float]
) -> str:
    """Each finite vertex in view numbered from 1, a white halo keeping it legible over the
    image and the fill."""
    font = size * 0.032
    labels = "".join(
        f'<text x="{p[0] + font * 0.3:.0f}" y="{p[1] - font * 0.3:.0f}">{k}</text>'
        for k, p in enumerate(vertices, start=1)
        if p is not None and _inside(p, view)
    )
    if not labels:
        return ""
    return (
        f'<g font-size="{_n(font)}" fill="{ANSWER.colour}" stroke="#ffffff" '
        f'stroke-width="3" paint-order="stroke" vector-effect="non-scaling-stroke" '
        f'font-family="sans-serif">{labels}</g>'
    )


def _inside(point: Point, view: tuple[float, float, float, float]) -> bool:
    left, top, right, bottom = view
    return left <= point[0] <= right and top <= point[1] <= bottom


def _path(points: Sequence[Point], *, closed: bool, digits: int = 1) -> str:
    """``M x y x y …`` (SVG reads the pairs after a move as lines), ``Z`` closing a ring;
    coordinates to ``digits`` decimals, trailing zeros dropped."""
    pair = f"{{:.{digits}f}} {{:.{digits}f}}".format
    text = "M" + " ".join(pair(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y))
    text = _TRAILING.sub("", text) if digits else text
    return text + "Z" if closed else text


def _digits(thumbnail: bool) -> int:
    return THUMBNAIL_DIGITS if thumbnail else 1


def _n(value: float) -> str:
    """A coordinate to 0.1 px, without trailing zeros (``12``, ``12.5``, never ``-0``)."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
