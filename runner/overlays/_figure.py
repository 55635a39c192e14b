"""``groundbench show``'s figure: one answer drawn over its image as the model saw it, with a
legend and a caption, as PNG, SVG or PDF (matplotlib, no display needed).

The figure is laid out in inches from its top: the axes (the frame's aspect, at most
:data:`MAX_AXES_HEIGHT` tall), then the legend, then the caption, each measured before the
figure's height is set, so that nothing is cut and a pixel test can map the frame's
coordinates through the axes' transform (no ``bbox_inches="tight"`` moves them afterwards).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Transform, offset_copy
from matplotlib.typing import RcKeyType

from conditions import BOX
from runner._output import whole
from runner.overlays._artists import (
    View,
    draw_answer,
    draw_box,
    draw_coco_box,
    draw_frame,
    draw_picture,
    draw_references,
    legend_handle,
    marking_notes,
)
from runner.overlays._caption import caption
from runner.overlays._palette import ANSWER, CONTROL, Style
from runner.overlays._read import OverlayError
from runner.overlays._scene import AnswerView, QuestionView
from scoring._drawn import DrawnAnswer, Point

FIGURE_WIDTH = 6.0  # inches: a page's text width (1,800 pixels in the PNG)
MAX_AXES_HEIGHT = 6.5  # inches: a tall image narrows instead of running off the page
MARGIN = 0.12  # inches round the figure
GAP = 0.1  # inches between the axes, the legend and the caption
TEXT_SIZE = 7.0  # points: legend and caption
PAD = 0.02  # of the frame's longer side: room round the frame for its border and numbers
WIDEN = 0.5  # of a frame's side: the most the view widens for vertices outside the frame
DPI = 300  # the PNG's resolution
SAVED: dict[str, dict[RcKeyType, Any]] = {
    ".png": {},
    # Text stays text: the SVG's labels searchable and editable, the PDF's fonts TrueType
    # (Type 42), which publishers accept where they refuse Type 3.
    ".svg": {"svg.fonttype": "none"},
    ".pdf": {"pdf.fonttype": 42},
}
_NO_DATE = {".png": None, ".svg": {"Date": None}, ".pdf": {"CreationDate": None}}


def draw_overlay(
    question: QuestionView, answer: AnswerView, *, control: int | None = None
) -> Figure:
    """One answer over its image, with its references, a legend and a caption.

    Parameters
    ----------
    question, answer
        The question and one of its stored attempts.
    control
        For a box answer: also draw its box-derived control for this ``N`` (and ``G_N``).

    Raises
    ------
    OverlayError
        ``control`` is given but the answer is not a box answer with a control for it.
    """
    drawn_control = _control(answer, control)
    view = _view(question, _answer_points(answer, drawn_control))
    figure = Figure(figsize=(FIGURE_WIDTH, FIGURE_WIDTH))
    FigureCanvasAgg(figure)  # measured text needs a renderer; Agg needs no display
    ax = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    notes = draw_picture(ax, answer.picture, question.width, question.height, answer.condition)
    draw_frame(ax, question.width, question.height)
    roles = _draw(ax, question, answer, drawn_control, control, view)
    ax.set_xlim(view.left, view.right)
    ax.set_ylim(view.bottom, view.top)  # y down, as in the image
    ax.set_aspect("equal")
    ax.set_axis_off()
    paragraphs = caption(question, answer, control=control) + notes + _view_notes(answer, view)
    _lay_out(figure, ax, view, roles, paragraphs)
    return figure


def save_overlay(figure: Figure, path: Path) -> Path:
    """``figure`` written to ``path``: ``.png`` at :data:`DPI`, ``.svg`` with its text as text,
    ``.pdf`` with TrueType fonts. Returns ``path``.

    Raises
    ------
    OverlayError
        ``path``'s suffix is none of these, or the file cannot be written.
    """
    suffix = path.suffix.lower()
    if suffix not in SAVED:
        kinds = ", ".join(SAVED)
        raise OverlayError(f"{path}: an overlay is written as {kinds}; not {suffix or 'no suffix'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with matplotlib.rc_context(SAVED[suffix]), whole(path) as temporary:
            figure.savefig(temporary, dpi=DPI, metadata=_NO_DATE[suffix])
    except OSError as exc:
        raise OverlayError(f"{path}: cannot write the overlay: {exc.strerror or exc}") from None
    return path


def _control(answer: AnswerView, control: int | None) -> DrawnAnswer | None:
    if control is None:
        return None
    if answer.box is None or control not in answer.box.controls:
        held = sorted(answer.box.controls) if answer.box is not None else []
        has = f"its controls are for N = {', '.join(map(str, held))}" if held else "it has none"
        raise OverlayError(f"no box-derived control for N = {control}: {has}")
    return answer.box.controls[control]


def _draw(
    ax: Axes,
    question: QuestionView,
    answer: AnswerView,
    drawn_control: DrawnAnswer | None,
    control: int | None,
    view: View,
) -> list[Style]:
    """The references and the answer; returns the roles drawn, in order, each once."""
    if answer.budget == BOX:
        roles = draw_references(ax, question, control) + draw_coco_box(ax, question.box)
        roles += draw_box(ax, answer.box) if answer.box is not None else []
        if drawn_control is not None:
            roles += draw_answer(ax, drawn_control, CONTROL, view)
    else:
        roles = draw_references(ax, question, answer.budget)
        if answer.polygon is not None:
            roles += draw_answer(ax, answer.polygon, ANSWER, view)
    return list(dict.fromkeys(roles))


def _answer_points(answer: AnswerView, drawn_control: DrawnAnswer | None) -> list[Point]:
    drawn = [d for d in (answer.polygon, drawn_control) if d is not None]
    return [v for d in drawn for v in d.vertices if v is not None]


def _view(question: QuestionView, points: Sequence[Point]) -> View:
    """The frame, widened to hold ``points`` up to :data:`WIDEN` of a frame on each side."""
    width, height = question.width, question.height
    pad = PAD * max(width, height)
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    view = View(
        left=max(min([-pad, *xs]), -WIDEN * width),
        top=max(min([-pad, *ys]), -WIDEN * height),
        right=min(max([width + pad, *xs]), (1 + WIDEN) * width),
        bottom=min(max([height + pad, *ys]), (1 + WIDEN) * height),
        beyond=0,
    )
    return replace(view, beyond=sum(not view.holds(p) for p in points))


def _view_notes(answer: AnswerView, view: View) -> list[str]:
    notes = []
    if view.beyond:
        notes.append(
            f"{view.beyond} answer vertices lie beyond the view (half a frame outside the "
            "image at most is shown)"
        )
    if answer.polygon is not None:
        notes += marking_notes(answer.polygon)
    return notes


def _lay_out(
    figure: Figure, ax: Axes, view: View, roles: Sequence[Style], paragraphs: Sequence[str]
) -> None:
    """Axes, legend and caption top to bottom, the figure as tall as they need."""
    room = FIGURE_WIDTH - 2 * MARGIN
    aspect = (view.bottom - view.top) / max(view.right - view.left, 1e-9)
    axes_w = min(room, MAX_AXES_HEIGHT / aspect)
    axes_h = axes_w * aspect
    below = MARGIN + axes_h + GAP
    if roles:
        below += _legend(figure, roles, _at(figure, below), room) + GAP
    below += _caption(figure, paragraphs, _at(figure, below), room) + MARGIN
    figure.set_size_inches(FIGURE_WIDTH, below)
    ax.set_position(
        (
            (FIGURE_WIDTH - axes_w) / 2 / FIGURE_WIDTH,
            1 - (MARGIN + axes_h) / below,
            axes_w / FIGURE_WIDTH,
            axes_h / below,
        )
    )


def _at(figure: Figure, down: float) -> Transform:
    """Figure coordinates moved to :data:`MARGIN` from the left, ``down`` inches from the
    top: what is placed at (0, 1) through it stays there when the figure's height changes."""
    return offset_copy(figure.transFigure, figure, x=MARGIN, y=-down, units="inches")


def _legend(figure: Figure, roles: Sequence[Style], at: Transform, room: float) -> float:
    """The legend of ``roles``, in as many columns as fit in ``room``; returns its height."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    for columns in (3, 2, 1):
        legend = figure.legend(
            [legend_handle(role) for role in roles],
            [role.label for role in roles],
            loc="upper left",
            bbox_to_anchor=(0, 1),
            bbox_transform=at,
            ncols=columns,
            fontsize=TEXT_SIZE,
            frameon=False,
            borderpad=0.0,
            borderaxespad=0.0,
            handlelength=2.6,
            columnspacing=1.2,
        )
        extent = legend.get_window_extent(renderer)
        if extent.width / figure.dpi <= room or columns == 1:
            return float(extent.height / figure.dpi)
        legend.remove()
    raise AssertionError("unreachable: one column is always kept")


def _caption(figure: Figure, paragraphs: Sequence[str], at: Transform, room: float) -> float:
    """The caption wrapped to ``room`` inches (measured, not guessed); returns its height."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    text = figure.text(0, 1, "", transform=at, ha="left", va="top", fontsize=TEXT_SIZE,
                       linespacing=1.35, parse_math=False)  # fmt: skip
    # A first guess from a narrow average glyph (0.45 em), narrowed until the widest line fits.
    columns = max(20, int(room * 72 / (0.45 * TEXT_SIZE)))
    for _ in range(8):
        text.set_text(_wrapped(paragraphs, columns))
        extent = text.get_window_extent(renderer)
        if extent.width / figure.dpi <= room or columns <= 20:
            break
        columns = max(20, int(columns * room * figure.dpi / extent.width) - 1)
    return float(extent.height / figure.dpi)


def _wrapped(paragraphs: Sequence[str], columns: int) -> str:
    lines = []
    for paragraph in paragraphs:
        lines += textwrap.wrap(paragraph, columns, break_on_hyphens=False) or [""]
    return "\n".join(lines)
