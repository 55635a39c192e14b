"""An exact oracle for even-odd areas on integer rings: slab integration in rational numbers.

Between two consecutive "event" heights (vertices, crossings of any two edges, crossings of
the frame's sides) no edge starts, ends or crosses another, so the edges spanning the slab keep
their left-to-right order and the covered width is linear in y: the trapezoid rule is exact.
GEOS's overlays, by contrast, can lose faces when many edges overlap (seen in the tests).
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, pairwise

Point = tuple[int, int]
Edge = tuple[Fraction, Fraction, Fraction, Fraction, int]  # x0, y0, x1, y1, ring index


def even_odd_area(rings: list[list[Point]], width: int, height: int) -> Fraction:
    """Area of the points, inside ``[0, width] × [0, height]``, that lie inside every ring by
    the even-odd rule (one ring: its even-odd fill; two: the fills' intersection)."""
    edges = [e for k, ring in enumerate(rings) for e in _edges(ring, k)]
    events = {Fraction(0), Fraction(height)}
    for x0, y0, x1, y1, _ in edges:
        events.update((y0, y1))
        for side in (Fraction(0), Fraction(width)):
            if min(x0, x1) < side < max(x0, x1):
                events.add(y0 + (side - x0) * (y1 - y0) / (x1 - x0))
    for a, b in combinations(edges, 2):
        y = _crossing_height(a, b)
        if y is not None:
            events.add(y)
    ys = sorted(y for y in events if 0 <= y <= height)
    total = Fraction(0)
    for lo, hi in pairwise(ys):
        mid = (lo + hi) / 2
        spanning = sorted((e for e in edges if min(e[1], e[3]) < mid < max(e[1], e[3])),
                          key=lambda e: _x_at(e, mid))  # fmt: skip
        total += (_covered(spanning, lo, len(rings), width) +
                  _covered(spanning, hi, len(rings), width)) * (hi - lo) / 2  # fmt: skip
    return total


def _edges(ring: list[Point], k: int) -> list[Edge]:
    out = []
    for (x0, y0), (x1, y1) in zip(ring, ring[1:] + ring[:1], strict=True):
        if y0 != y1:  # horizontal edges never cross a horizontal scan line
            out.append((Fraction(x0), Fraction(y0), Fraction(x1), Fraction(y1), k))
    return out


def _x_at(e: Edge, y: Fraction) -> Fraction:
    x0, y0, x1, y1, _ = e
    return x0 + (y - y0) * (x1 - x0) / (y1 - y0)


def _crossing_height(a: Edge, b: Edge) -> Fraction | None:
    ax0, ay0, ax1, ay1, _ = a
    bx0, by0, bx1, by1, _ = b
    dax, day, dbx, dby = ax1 - ax0, ay1 - ay0, bx1 - bx0, by1 - by0
    denom = dax * dby - day * dbx
    if denom == 0:
        return None  # parallel: a common part starts and ends at vertices, already events
    t = ((bx0 - ax0) * dby - (by0 - ay0) * dbx) / denom
    u = ((bx0 - ax0) * day - (by0 - ay0) * dax) / denom
    return ay0 + t * day if 0 <= t <= 1 and 0 <= u <= 1 else None


def _covered(spanning: list[Edge], y: Fraction, rings: int, width: int) -> Fraction:
    """Width at height ``y`` inside every ring and the frame, walking the edges left to right."""
    parity = [False] * rings
    covered = Fraction(0)
    left: Fraction | None = None
    for e in spanning:
        x = _x_at(e, y)
        if left is not None:
            covered += max(Fraction(0), min(x, Fraction(width)) - max(left, Fraction(0)))
        parity[e[4]] = not parity[e[4]]
        left = x if all(parity) else None
    return covered
