"""An answer as it can be drawn over its image: the geometry an overlay shows (issue 23).

Scoring judges an answer by numbers; a reader judges it by looking. This module places an
answer's vertices in its frame's pixels exactly as scoring does (PROTOCOL §1: ``x·W/999``,
``y·H/999``), and says what scoring saw in it: the ring whose even-odd fill was rasterised, the
vertices that repeat, the points where its edges cross or touch. It draws what is drawable and
says what is not: a list of the wrong length is drawn as a dashed polyline (it was not
scored), values that are not finite are left out, vertices far outside the frame are clipped
to the window scoring clips to (§3), and a list of more than :data:`MAX_DRAWN` vertices is
drawn up to that many.

Plain values for any renderer (matplotlib for ``groundbench show``, SVG for the HTML report).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Point = tuple[float, float]
"""``(x, y)`` in the annotation frame's pixels, (0, 0) its top-left corner."""

MAX_DRAWN = 4096
"""The most vertices of one answer drawn; a longer list is drawn up to here and says so."""

Shape = Literal["polygon", "polyline", "none"]
"""How an answer is drawn: ``polygon`` (parseable: the ring scored, filled even-odd),
``polyline`` (its last list has the wrong length or odd values: not scored, drawn dashed and
open), ``none`` (no list at all, or nothing finite in it)."""


@dataclass(frozen=True, slots=True)
class DrawnAnswer:
    """One polygon answer placed in its frame.

    Attributes
    ----------
    asked
        ``N``, the vertices the question asked for.
    listed
        How many numbers the answer's last list holds (0: no list); at most
        ``2·MAX_DRAWN + 1`` (a longer list is counted that far).
    shape
        How it is drawn (see :data:`Shape`).
    vertices
        Each listed vertex in pixels, in the answer's order, up to :data:`MAX_DRAWN`; ``None``
        where a coordinate is not finite (not drawn, and not numbered).
    outline
        The ring (or polyline) drawn: the finite vertices clipped to the window one frame
        beyond each side of the image, as scoring clips them (§3); within the frame it is
        the answer's own outline.
    fill
        The even-odd region of the ring clipped to the frame, as rings whose non-zero fill is
        that region (holes run opposite to their outer ring): what ``iou_cont`` measures, and
        what the raster fill approximates to 0.2 px. Empty for a polyline.
    duplicates
        Indices (0-based) of vertices that repeat an earlier vertex of the list exactly.
    crossings
        Where two edges of the ring cross or touch, other than at a shared end (pixels).
    notes
        What is not drawn, and why, one sentence each (``"3 values are not finite: not
        drawn"``); empty when everything is drawn.
    """

    asked: int
    listed: int
    shape: Shape
    vertices: tuple[Point | None, ...]
    outline: tuple[Point, ...]
    fill: tuple[tuple[Point, ...], ...]
    duplicates: tuple[int, ...]
    crossings: tuple[Point, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DrawnBox:
    """One box answer placed in its frame.

    Attributes
    ----------
    corners
        The two answered corners in pixels, as given (``None``: not parseable).
    rectangle
        ``(left, top, right, bottom)`` of the rectangle they span, clipped to the frame: the
        one ``box_iou`` scores (``None``: not parseable).
    controls
        The box-derived control per budget: the ``N``-vertex polygon answer the box stands
        for (PROTOCOL §5), drawn as a polygon answer.
    notes
        What is not drawn, and why.
    """

    corners: tuple[Point, Point] | None
    rectangle: tuple[float, float, float, float] | None
    controls: dict[int, DrawnAnswer]
    notes: tuple[str, ...]
