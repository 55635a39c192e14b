"""The parts of ``groundbench show``'s figure drawn on its axes: the picture, the references
(target, part, distractors, COCO box), the answer as scored, and the legend's handles.

Every function draws in the frame's pixels (the axes' data coordinates, y down) and returns
the palette roles it drew, so that the legend names only those.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path as MplPath
from matplotlib.typing import LineStyleType
from numpy.typing import NDArray
from PIL import Image, UnidentifiedImageError

from conditions import ImageBlob
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
from runner.overlays._scene import MOST_MARKED, MOST_NUMBERED, Picture, QuestionView, Ring
from scoring._drawn import MAX_DRAWN, DrawnAnswer, DrawnBox, Point

COCO_BOX = replace(TARGET, dash=(5.0, 1.5, 1.0, 1.5), label="referent's COCO box")
"""The box a box answer is scored against: the target's colour, dash-dotted."""

LINE_WIDTH = 1.2  # points: answers and targets
THIN = 0.9  # points: parts, distractors, the frame
NUMBER_SIZE = 5.0  # points: vertex numbers, small enough for 64 vertices on a column
LABEL_MAX = 4  # places named in one label of vertices at one point
BLANK = "#f2f2f2"  # the frame when no image is shown
FRAME = "#4d4d4d"  # the frame's border: neutral, no role of the palette
_FILLED = (ANSWER, CONTROL)  # roles whose legend swatch is filled
_Z_IMAGE, _Z_FILL, _Z_REFERENCE, _Z_ANSWER, _Z_MARK, _Z_NUMBER = range(6)


@dataclass(frozen=True)
class View:
    """The part of the plane shown: the frame, widened to show answer vertices outside it."""

    left: float
    top: float
    right: float
    bottom: float
    beyond: int  # answer vertices outside even the widened view

    def holds(self, point: Point) -> bool:
        x, y = point
        return self.left <= x <= self.right and self.top <= y <= self.bottom


def draw_picture(ax: Axes, picture: Picture, width: int, height: int, condition: str) -> list[str]:
    """The image as sent, stretched over the frame (a half-res image shows its coarser
    pixels); a light blank frame when none is shown. Returns notes for the caption."""
    pixels, notes = _pixels(picture.blob)
    if pixels is None:
        ax.add_patch(Rectangle((0, 0), width, height, facecolor=BLANK, edgecolor="none"))
        sent = picture.variant == "none" and picture.problem is None
        why = (
            f"no image was sent (condition {condition})" if sent else "image not shown (see below)"
        )
        # in the frame's corner, not its middle, where the answer and the target usually are
        ax.text(0.02 * width, 0.03 * height, why, ha="left", va="top", fontsize=7, color="0.35",
                parse_math=False, clip_on=True)  # fmt: skip
        return notes
    grey = pixels.ndim == 2
    # "none": the pixels as sent, never smoothed, and embedded unresampled in SVG and PDF
    ax.imshow(pixels, extent=(0, width, height, 0), interpolation="none", zorder=_Z_IMAGE,
              cmap="gray" if grey else None, vmin=0, vmax=255)  # fmt: skip
    return notes


def _pixels(blob: ImageBlob | None) -> tuple[NDArray[np.uint8] | None, list[str]]:
    if blob is None:
        return None, []
    try:
        with Image.open(io.BytesIO(blob.data)) as image:
            shown = image if image.mode in ("L", "RGB") else image.convert("RGB")
            return np.asarray(shown, dtype=np.uint8), []
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        return None, [f"the image sent ({blob.media_type}) cannot be decoded: {exc}"]


def draw_frame(ax: Axes, width: int, height: int) -> None:
    ax.add_patch(Rectangle((0, 0), width, height, fill=False, edgecolor=FRAME, linewidth=THIN,
                           zorder=_Z_REFERENCE))  # fmt: skip


def draw_references(ax: Axes, question: QuestionView, target: int | None) -> list[Style]:
    """``G_target`` (none for ``None``), the selected part ``A_i`` and every distractor part."""
    drawn = []
    ring = question.targets.get(target) if target is not None else None
    if ring:
        _ring(ax, ring, TARGET, LINE_WIDTH)
        drawn.append(TARGET)
    if question.part:
        _ring(ax, question.part, PART, THIN)
        drawn.append(PART)
    parts = [part for distractor in question.distractors for part in distractor if part]
    for part in parts:
        _ring(ax, part, DISTRACTOR, THIN)
    return drawn + ([DISTRACTOR] if parts else [])


def draw_coco_box(ax: Axes, box: tuple[float, float, float, float]) -> list[Style]:
    x, y, w, h = box
    _rectangle(ax, (x, y, x + w, y + h), COCO_BOX)
    return [COCO_BOX]


def draw_box(ax: Axes, box: DrawnBox) -> list[Style]:
    """The answered rectangle, as scored (clipped to the frame)."""
    if box.rectangle is None:
        return []
    _rectangle(ax, box.rectangle, BOX, LINE_WIDTH * 1.25)
    return [BOX]


def draw_answer(ax: Axes, answer: DrawnAnswer, style: Style, view: View) -> list[Style]:
    """An answer as scored: its even-odd region filled, its outline, its vertices numbered, its
    duplicate vertices and its crossings marked. ``style`` is :data:`ANSWER` or
    :data:`CONTROL`; a polyline (not scored) is drawn open and dashed."""
    drawn = _fill(ax, answer.fill, style)
    if answer.shape == "polyline":
        drawn += _line(ax, answer.outline, UNSCORED if style == ANSWER else style, closed=False)
    elif answer.shape == "polygon":
        drawn += _line(ax, answer.outline, style, closed=True)
    if numbered(answer):
        _numbers(ax, answer.vertices, view)
    duplicates = [answer.vertices[i] for i in answer.duplicates if i < len(answer.vertices)]
    drawn += _marks(ax, [p for p in duplicates if p is not None], DUPLICATE)
    return drawn + _marks(ax, answer.crossings, CROSSING)


def _fill(ax: Axes, rings: Sequence[Sequence[Point]], style: Style) -> list[Style]:
    """The even-odd region as one compound path. matplotlib fills by the non-zero rule, so
    the answer's own outline (a ring run twice fills solid) is never filled; ``rings`` are the
    region already resolved, holes running opposite to their outer ring."""
    points: list[Point] = []
    codes: list[np.uint8] = []
    for ring in rings:
        if len(ring) < 3:
            continue
        points += [*ring, ring[0]]
        codes += [MplPath.MOVETO] + [MplPath.LINETO] * (len(ring) - 1) + [MplPath.CLOSEPOLY]
    if points:
        ax.add_patch(PathPatch(MplPath(points, codes), facecolor=style.colour, alpha=FILL_ALPHA,
                               edgecolor="none", zorder=_Z_FILL))  # fmt: skip
    return [style] if points else []


def _line(ax: Axes, points: Sequence[Point], style: Style, *, closed: bool) -> list[Style]:
    if not points:
        return []
    shown = [*points, points[0]] if closed else list(points)
    xs, ys = zip(*shown, strict=True)
    ax.plot(xs, ys, color=style.colour, linestyle=_dash(style), linewidth=LINE_WIDTH,
            zorder=_Z_ANSWER, solid_joinstyle="miter")  # fmt: skip
    return [style]


def _ring(ax: Axes, ring: Ring, style: Style, width: float) -> None:
    xs, ys = zip(*ring, ring[0], strict=True)
    ax.plot(xs, ys, color=style.colour, linestyle=_dash(style), linewidth=width,
            zorder=_Z_REFERENCE)  # fmt: skip


def _rectangle(
    ax: Axes, ltrb: tuple[float, float, float, float], style: Style, width: float = LINE_WIDTH
) -> None:
    left, top, right, bottom = ltrb
    ax.add_patch(Rectangle((left, top), right - left, bottom - top, fill=False,
                           edgecolor=style.colour, linestyle=_dash(style), linewidth=width,
                           zorder=_Z_ANSWER))  # fmt: skip


def numbered(answer: DrawnAnswer | None) -> bool:
    """Whether an answer's vertices are numbered: not when its list was too long to draw
    whole, for then the vertices drawn are its last ones and a number would misname them."""
    return answer is not None and answer.listed <= 2 * MAX_DRAWN


def _numbers(ax: Axes, vertices: Sequence[Point | None], view: View) -> None:
    """Each vertex's 1-based place in the answer, beside it; none for a vertex not drawn or
    outside the view, and none past :data:`MOST_NUMBERED`. Vertices at one point share one
    label (``1, 5, 9``): drawn apart, the last would hide the others."""
    places: dict[Point, list[int]] = {}
    for k, vertex in enumerate(vertices[:MOST_NUMBERED], start=1):
        if vertex is not None and view.holds(vertex):
            places.setdefault(vertex, []).append(k)
    for vertex, ks in places.items():
        label = ", ".join(map(str, ks[:LABEL_MAX])) + (", …" if len(ks) > LABEL_MAX else "")
        ax.annotate(label, vertex, xytext=(1.5, 1.5), textcoords="offset points",
                    fontsize=NUMBER_SIZE, color="black", zorder=_Z_NUMBER, parse_math=False,
                    bbox={"boxstyle": "square,pad=0.05", "facecolor": "white",
                          "edgecolor": "none", "alpha": 0.6})  # fmt: skip


def _marks(ax: Axes, points: Iterable[Point], style: Style) -> list[Style]:
    shown = list(dict.fromkeys(points))[:MOST_MARKED]
    if not shown:
        return []
    xs, ys = zip(*shown, strict=True)
    ax.plot(xs, ys, linestyle="none", zorder=_Z_MARK, **_marker(style))
    return [style]


def marking_notes(answer: DrawnAnswer) -> list[str]:
    """What the numbers and marks leave out, one sentence each."""
    notes = []
    if numbered(answer) and len(answer.vertices) > MOST_NUMBERED:
        notes.append(f"vertices past the {MOST_NUMBERED}th are not numbered")
    duplicates = {answer.vertices[i] for i in answer.duplicates if i < len(answer.vertices)}
    for many, what in ((len(duplicates - {None}), "repeated points"),
                       (len(set(answer.crossings)), "crossings")):  # fmt: skip
        if many > MOST_MARKED:
            notes.append(f"{many:,} {what}: the first {MOST_MARKED} are marked")
    return notes


def _marker(style: Style) -> dict[str, Any]:
    if style == DUPLICATE:  # a ring round the vertex: the vertex itself stays visible
        return {"marker": "o", "markersize": 7.0, "markerfacecolor": "none",
                "markeredgecolor": style.colour, "markeredgewidth": 1.0}  # fmt: skip
    # yellow on black: seen on a light photo and a dark one alike
    return {"marker": "o", "markersize": 4.5, "markerfacecolor": style.colour,
            "markeredgecolor": "black", "markeredgewidth": 0.6}  # fmt: skip


def legend_handle(style: Style) -> Artist:
    """What the legend shows for a role: a filled swatch, a marker or a line."""
    if style in _FILLED:
        return Patch(facecolor=(style.colour, FILL_ALPHA), edgecolor=style.colour,
                     linestyle=_dash(style), linewidth=LINE_WIDTH)  # fmt: skip
    if style in (DUPLICATE, CROSSING):
        return Line2D([], [], linestyle="none", **_marker(style))
    return Line2D([], [], color=style.colour, linestyle=_dash(style), linewidth=LINE_WIDTH)


def _dash(style: Style) -> LineStyleType:
    return "solid" if style.dash is None else (0.0, style.dash)
