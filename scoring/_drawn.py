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

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
import shapely

from scoring._parse import _last_list, _tokens, parse_list
from scoring._region import _SCALE as REGION_SCALE
from scoring._region import even_odd_region
from scoring._score import SCALE, box_polygon, placed_ring
from scoring._targets import BUDGETS

Point = tuple[float, float]
"""``(x, y)`` in the annotation frame's pixels, (0, 0) its top-left corner."""

MAX_DRAWN = 4096
"""The most vertices of one answer drawn; a longer list is drawn up to here and says so."""

# Crossings are found on the answer's lattice in float: exact while products of coordinates
# stay within 2⁵³; a legal answer's are below 10⁶. Past these, an answer is not marked.
_LARGEST_EXACT = 1e7
_MOST_CROSSING_CHECKED = 512  # pairs of edges grow as the square: a budget is at most 64

Shape = Literal["polygon", "polyline", "none"]
"""How an answer is drawn: ``polygon`` (parseable: the ring scored, filled even-odd),
``polyline`` (its last list has the wrong length or odd values: not scored, drawn dashed and
open), ``none`` (no list at all, nothing finite in it, or nothing within a frame of the
image; the notes say which)."""


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


def draw_polygon(text: str | None, n: int, width: int, height: int) -> DrawnAnswer:
    """``text`` as the ``n``-vertex polygon answer scoring judged, placed in a
    ``width × height`` frame.

    A parseable answer (its last list holds exactly ``2n`` finite values) is drawn as the ring
    scored; any other last list is drawn as an open polyline and said to be unscored.

    >>> d = draw_polygon("0 0 999 0 999 999", 3, 200, 100)
    >>> d.shape, d.vertices
    ('polygon', ((0.0, 0.0), (200.0, 0.0), (200.0, 100.0)))
    >>> draw_polygon("I cannot see it.", 8, 200, 100).notes
    ('the answer holds no list of numbers: nothing to draw',)
    """
    parsed = parse_list(text, 2 * n) if text else None
    if parsed is not None:
        return drawn_values(parsed.values, n, width, height, scored=True)
    values, listed = _last_values(text or "")
    if listed == 0:
        return _nothing(n, "the answer holds no list of numbers: nothing to draw")
    drawn = drawn_values(values, n, width, height, scored=False)
    if listed == 2 * n:
        notes = ["its last list holds a value that is not finite: not scored"]
    elif listed > 2 * MAX_DRAWN:
        notes = [f"its last list holds over {2 * MAX_DRAWN:,} numbers, not {2 * n}: not scored"]
        notes.append(f"only its last {len(values) // 2:,} vertices are drawn, unnumbered")
    else:
        holds = "1 number" if listed == 1 else f"{listed:,} numbers"  # "[5]" is a list
        notes = [f"its last list holds {holds}, not {2 * n}: not scored"]
    return replace(drawn, listed=listed, notes=(*notes, *drawn.notes))


def drawn_values(
    values: Sequence[float], n: int, width: int, height: int, *, scored: bool
) -> DrawnAnswer:
    """A flat ``[x1, y1, …]`` list in 0–999 units drawn in a ``width × height`` frame: as the
    ring scored (``scored``) or as an unscored polyline."""
    notes: list[str] = []
    if len(values) % 2:
        notes.append("an odd count of values: the last is not drawn")
    even = min(len(values) - len(values) % 2, 2 * MAX_DRAWN)
    units = np.asarray(values[:even], dtype=float).reshape(-1, 2)
    with np.errstate(over="ignore", invalid="ignore"):
        pixels = units * (width / SCALE, height / SCALE)
    finite = np.asarray(np.isfinite(pixels).all(axis=1), dtype=bool)
    vertices = tuple(
        (float(x), float(y)) if ok else None
        for (x, y), ok in zip(pixels.tolist(), finite.tolist(), strict=True)
    )
    if not finite.all():
        overflowing = _vertices(int((~finite).sum()))
        notes.append(
            f"{overflowing} too far out to place in pixels: not numbered, its edges clipped "
            "as scored"
            if scored
            else f"{overflowing} not finite in pixels: not drawn"
        )
    kept = pixels[finite]
    shape: Shape = "polygon" if scored else "polyline"
    if scored:
        outline, fill = _ring_and_fill(units, width, height)
        if len(outline) < 2 <= len(kept):  # scored (IoU 0), but nowhere near the image
            notes.append("the ring lies over a frame outside the image: not drawn")
    else:
        outline, fill = _polyline(kept, width, height, notes), ()
    if len(outline) < 2:
        shape = "none"
    return DrawnAnswer(
        asked=n,
        listed=len(values),
        shape=shape,
        vertices=vertices,
        outline=outline,
        fill=fill,
        duplicates=_duplicates(units),
        crossings=_crossings(units, width, height, notes) if scored else (),
        notes=tuple(notes),
    )


def draw_box(
    text: str | None, width: int, height: int, budgets: Sequence[int] = BUDGETS
) -> DrawnBox:
    """A box answer ``x1 y1 x2 y2`` (0–999 units) placed in its frame, with the box-derived
    control polygon for each of ``budgets`` (PROTOCOL §5), as ``score_box`` scores them.

    >>> b = draw_box("[0, 0, 499.5, 999]", 200, 100, budgets=(8,))
    >>> b.rectangle, b.controls[8].shape
    ((0.0, 0.0, 100.0, 100.0), 'polygon')
    """
    parsed = parse_list(text, 4) if text else None
    if parsed is None:
        return DrawnBox(None, None, {}, ("no box of exactly 4 finite values: nothing to draw",))
    x1, y1, x2, y2 = parsed.values
    sx, sy = width / SCALE, height / SCALE
    with np.errstate(over="ignore"):
        corners = ((x1 * sx, y1 * sy), (x2 * sx, y2 * sy))
    left, right = sorted((_clamp(corners[0][0], width), _clamp(corners[1][0], width)))
    top, bottom = sorted((_clamp(corners[0][1], height), _clamp(corners[1][1], height)))
    rectangle = (left, top, right, bottom)
    controls = {
        n: drawn_values(box_polygon(rectangle, n, width, height).values, n, width, height,
                        scored=True)
        for n in budgets
    }  # fmt: skip
    return DrawnBox(corners, rectangle, controls, ())


def _nothing(n: int, why: str) -> DrawnAnswer:
    return DrawnAnswer(n, 0, "none", (), (), (), (), (), (why,))


def _last_values(text: str) -> tuple[list[float], int]:
    """The values of the last list of ``text`` (its last ``2·MAX_DRAWN`` at most) and how
    many it holds (counted up to ``2·MAX_DRAWN + 1``)."""
    found = _last_list(text, 2 * MAX_DRAWN)
    if found is None:
        return [], 0
    start, end, listed = found
    tokens = _tokens(text[start:end])[-2 * MAX_DRAWN :]
    return [float(t) for t in tokens], listed


def _ring_and_fill(
    units: npt.NDArray[np.float64], width: int, height: int
) -> tuple[tuple[Point, ...], tuple[tuple[Point, ...], ...]]:
    """The ring scored (clipped to scoring's window in units, then mapped to pixels, as
    ``place_answer`` places it), and its even-odd region clipped to the frame."""
    flat = placed_ring(units.ravel().tolist(), width, height)
    outline = _points(flat)
    region = even_odd_region(flat, width, height) if len(flat) >= 6 else None
    if region is None:
        return outline, ()
    # Clipper's integer grid back to pixels, a path at a time in numpy (a self-crossing 64-gon's
    # region has hundreds of vertices, and a report draws 120,000 answers).
    fill = tuple(
        tuple(map(tuple, (np.asarray(path, dtype=float) / REGION_SCALE).tolist()))
        for path in region.paths
    )
    return outline, fill


def _polyline(
    kept: npt.NDArray[np.float64], width: int, height: int, notes: list[str]
) -> tuple[Point, ...]:
    """The polyline through the vertices within scoring's window (one frame beyond each
    side); farther ones are left out and said to be."""
    inside = (
        (kept[:, 0] >= -width)
        & (kept[:, 0] <= 2 * width)
        & (kept[:, 1] >= -height)
        & (kept[:, 1] <= 2 * height)
    )
    if not inside.all():
        far = int((~inside).sum())
        notes.append(f"{_vertices(far)} over a frame outside the image: not drawn")
    return tuple((float(x), float(y)) for x, y in kept[inside])


def _points(flat: Sequence[float]) -> tuple[Point, ...]:
    return tuple((float(x), float(y)) for x, y in zip(flat[0::2], flat[1::2], strict=True))


def _duplicates(units: npt.NDArray[np.float64]) -> tuple[int, ...]:
    """Indices of vertices equal to an earlier vertex (the legality rule's duplicates)."""
    seen: set[tuple[float, float]] = set()
    out = []
    for i, (x, y) in enumerate(units.tolist()):
        if (x, y) in seen:
            out.append(i)
        seen.add((x, y))
    return tuple(out)


def _crossings(
    units: npt.NDArray[np.float64], width: int, height: int, notes: list[str]
) -> tuple[Point, ...]:
    """Where the ring's edges cross or touch, in pixels: worked out on the answer's own
    lattice, as legality is judged (the map to pixels keeps every crossing)."""
    if len(units) < 3 or not np.isfinite(units).all():
        return ()
    if np.abs(units).max() > _LARGEST_EXACT:
        notes.append("coordinates too large to mark where edges cross")
        return ()
    if len(units) > _MOST_CROSSING_CHECKED:
        notes.append(f"over {_MOST_CROSSING_CHECKED} vertices: crossings not marked")
        return ()
    if shapely.LinearRing(units).is_simple:
        return ()
    points = edge_contacts(units)
    return tuple((x * width / SCALE, y * height / SCALE) for x, y in points)


def edge_contacts(ring: npt.NDArray[np.float64]) -> list[Point]:
    """Every point where two edges of the closed ``ring`` (``M × 2``) meet other than at the
    vertex they share: crossings, touchings and overlaps (one point each), sorted.

    >>> edge_contacts(np.array([[0, 0], [2, 2], [2, 0], [0, 2]], float))  # a bow-tie
    [(1.0, 1.0)]
    >>> edge_contacts(np.array([[0, 0], [2, 0], [2, 2], [0, 2]], float))  # a square
    []
    """
    m = len(ring)
    steps = np.roll(ring, -1, axis=0) - ring
    i, j = np.triu_indices(m, k=1)
    p, r, q, s = ring[i], steps[i], ring[j], steps[j]
    qp = q - p
    denominator = r[:, 0] * s[:, 1] - r[:, 1] * s[:, 0]
    # Every pair at once (a 64-gon has 2,016): two edges that are not parallel meet where
    # t and u both lie in [0, 1]; neighbours that are not parallel meet only at their
    # shared vertex. Parallel pairs are few, and each is worked out on its own.
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (qp[:, 0] * s[:, 1] - qp[:, 1] * s[:, 0]) / denominator
        u = (qp[:, 0] * r[:, 1] - qp[:, 1] * r[:, 0]) / denominator
    neighbours = (j == i + 1) | ((i == 0) & (j == m - 1))
    hit = (denominator != 0.0) & ~neighbours & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
    points = p[hit] + t[hit, None] * r[hit]
    found: set[Point] = {(x, y) for x, y in points.tolist()}
    for k in np.flatnonzero(denominator == 0.0).tolist():
        a, b = int(i[k]), int(j[k])
        # Neighbours share one vertex: the end of the first edge, or for the ring's last
        # edge and its first, the start of the first.
        shared = ring[b] if b == a + 1 else ring[a] if (a == 0 and b == m - 1) else None
        contact = _contact(ring[a], steps[a], ring[b], steps[b], shared)
        if contact is not None:
            found.add(contact)
    return sorted(found)


def _contact(
    p: npt.NDArray[np.float64],
    r: npt.NDArray[np.float64],
    q: npt.NDArray[np.float64],
    s: npt.NDArray[np.float64],
    shared: npt.NDArray[np.float64] | None,
) -> Point | None:
    """Where segments ``p + t·r`` and ``q + u·s`` meet (``t, u ∈ [0, 1]``), if they do
    anywhere but at the ``shared`` vertex of two neighbouring edges (``None``: not
    neighbours)."""
    denominator = _cross(r, s)
    qp = q - p
    if denominator != 0.0:
        if shared is not None:  # two non-parallel neighbours meet only at their shared vertex
            return None
        t, u = _cross(qp, s) / denominator, _cross(qp, r) / denominator
        if 0.0 <= t <= 1.0 and 0.0 <= u <= 1.0:
            x, y = p + t * r
            return (float(x), float(y))
        return None
    if _cross(qp, r) != 0.0:  # parallel, on different lines
        return None
    return _overlap(p, r, q, s, shared)


def _overlap(
    p: npt.NDArray[np.float64],
    r: npt.NDArray[np.float64],
    q: npt.NDArray[np.float64],
    s: npt.NDArray[np.float64],
    shared: npt.NDArray[np.float64] | None,
) -> Point | None:
    """One point where two collinear segments overlap (or touch end to end), if they do;
    for neighbours, only when the ring folds back along itself: then the vertex it folds back
    at, which they share."""
    length = float(r @ r)
    if length == 0.0 or float(s @ s) == 0.0:
        return None  # a zero-length edge: a duplicate vertex, marked as one
    if shared is not None:
        return (float(shared[0]), float(shared[1])) if float(r @ s) < 0.0 else None
    # The overlap runs between two of the four ends: the other edge's ends placed along this
    # one (t = 0 at p, 1 at p + r), cut to this edge.
    (t0, first), (t1, last) = sorted(
        ((float((q - p) @ r) / length, q), (float((q + s - p) @ r) / length, q + s)),
        key=lambda end: end[0],
    )
    if t0 > 1.0 or t1 < 0.0:
        return None
    low, high = p if t0 <= 0.0 else first, p + r if t1 >= 1.0 else last
    # Either end marks it; the lesser, so that the mark is the same whichever edge comes
    # first, wherever the ring starts and whichever way it runs.
    return min((float(low[0]), float(low[1])), (float(high[0]), float(high[1])))


def _cross(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def _clamp(value: float, size: int) -> float:
    return min(float(size), max(0.0, value))


def _vertices(k: int) -> str:
    """``k`` vertices and the verb that goes with them: "1 vertex is", "3 vertices are"."""
    return "1 vertex is" if k == 1 else f"{k:,} vertices are"
