"""Canonical targets ``G_N`` (PROTOCOL §2).

A target is built from one polygon part of the referent's COCO segmentation:

1. part selection: the part with the most listed vertices, ties to the lowest index;
2. phase rotation: phase ``k`` starts the ring at vertex ``floor(k·V/8)``;
3. up-sampling (``V < N``): insert the midpoint of the currently longest cyclic edge;
4. down-sampling (``V > N``): Visvalingam–Whyatt over the polyline the rotated vertex list
   spells, its first and last vertices pinned (the sampling origin and the vertex before it).

Pinning the origin is what makes a phase a different target: on a cyclic ring every vertex is
removable and a rotation only re-breaks ties (PROTOCOL §2.3, revised).

Both resamplers are greedy and their choices do not depend on the final ``N``: the ring at 16
vertices is a state the run to 8 passes through. So one run per phase yields every budget, which
is what makes 1,500 referents × 5 budgets × 8 phases cheap.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence

from scoring._errors import DegeneratePartError, RingError

Point = tuple[float, float]

BUDGETS: tuple[int, ...] = (8, 16, 24, 32, 64)
"""The announced vertex budgets ``N`` of the benchmark."""

PHASES: int = 8
"""Number of sampling phases of the sensitivity audit; phase 0 is the official target."""

# Integer spacing of the order keys of original vertices; midpoints take the mean of their
# neighbours' keys. Bisection depth stays below log2(N) + 1 (a sub-edge is split only after
# every longer edge), so 64 bits of room are never exhausted.
_KEY_SPACING = 1 << 64


def ring_from_flat(flat: Sequence[float]) -> list[Point]:
    """Read a COCO-style flat ``[x1, y1, x2, y2, …]`` list as a list of ``(x, y)`` vertices.

    >>> ring_from_flat([0, 0, 4, 0, 4, 3])
    [(0.0, 0.0), (4.0, 0.0), (4.0, 3.0)]
    """
    if len(flat) % 2:
        raise RingError(f"a ring needs an even number of coordinates, got {len(flat)}")
    try:
        values = [float(c) for c in flat]
    except (TypeError, ValueError) as exc:
        raise RingError(f"a ring's coordinates must be numbers: {exc}") from None
    if not all(math.isfinite(c) for c in values):
        raise RingError("a ring's coordinates must be finite")
    return list(zip(values[0::2], values[1::2], strict=True))


def shoelace_area(ring: Sequence[Point]) -> float:
    """Signed area of a closed ring (positive when counter-clockwise in x-right, y-up axes)."""
    total = 0.0
    x0, y0 = ring[-1]
    for x1, y1 in ring:
        total += x0 * y1 - x1 * y0
        x0, y0 = x1, y1
    return total / 2.0


def select_part(parts: Sequence[Sequence[float]]) -> int:
    """Index of the part with the most listed vertices; on a tie, the lowest index (§2.1).

    >>> select_part([[0, 0, 1, 0, 1, 1], [0, 0, 2, 0, 2, 2, 0, 2], [5, 5, 6, 5, 6, 6, 5, 6]])
    1
    """
    if not parts:
        raise RingError("a segmentation needs at least one polygon part")
    return max(range(len(parts)), key=lambda i: (len(parts[i]) // 2, -i))


def check_part(ring: Sequence[Point]) -> None:
    """Raise :class:`DegeneratePartError` unless the ring can be a target (§2.1 eligibility)."""
    if len(set(ring)) < 3:
        raise DegeneratePartError(None, f"{len(set(ring))} distinct vertices; a target needs 3")
    if shoelace_area(ring) == 0.0:
        raise DegeneratePartError(None, "zero area")


def phase_start(vertex_count: int, phase: int) -> int:
    """First vertex of the ring under sampling phase ``phase`` (§2.4, decided)."""
    if not 0 <= phase < PHASES:
        raise ValueError(f"phase must be in 0..{PHASES - 1}, got {phase}")
    return (phase * vertex_count) // PHASES


def canonical_targets(
    part: Sequence[float], budgets: Iterable[int] = BUDGETS, phase: int = 0
) -> dict[int, tuple[Point, ...]]:
    """``G_N`` of one polygon part for several budgets at once, in pixels.

    Parameters
    ----------
    part
        The selected part as a flat ``[x1, y1, …]`` list in pixels.
    budgets
        Vertex counts ``N`` (each at least 3).
    phase
        Sampling phase ``0..7``; 0 is the official target.

    Raises
    ------
    RingError
        ``part`` is not a list of finite coordinate pairs.
    DegeneratePartError
        ``part`` has fewer than 3 distinct vertices or zero area.
    """
    wanted = sorted(set(budgets))
    if not wanted or wanted[0] < 3:
        raise ValueError(f"budgets must be at least 3, got {sorted(budgets)}")
    ring = ring_from_flat(part)
    check_part(ring)
    start = phase_start(len(ring), phase)
    ring = ring[start:] + ring[:start]

    v = len(ring)
    out: dict[int, tuple[Point, ...]] = {n: tuple(ring) for n in wanted if n == v}
    smaller = [n for n in wanted if n < v]
    if smaller:
        order = _visvalingam_whyatt_order(ring, keep=smaller[0])
        for n in smaller:
            removed = set(order[: v - n])
            out[n] = tuple(p for i, p in enumerate(ring) if i not in removed)
    larger = [n for n in wanted if n > v]
    if larger:
        out.update(_upsample(ring, larger))
    return out


def canonical_target(part: Sequence[float], n: int, phase: int = 0) -> list[Point]:
    """``G_N`` of one polygon part: ``n`` ``(x, y)`` vertices in pixels (PROTOCOL §2).

    A ring that already has ``n`` vertices is its own target; a short one is up-sampled at the
    midpoints of its longest edges, the closing edge included:

    >>> canonical_target([0, 0, 4, 0, 4, 3, 0, 3], 4)
    [(0.0, 0.0), (4.0, 0.0), (4.0, 3.0), (0.0, 3.0)]
    >>> canonical_target([0, 0, 4, 0, 4, 3, 0, 3], 6)
    [(0.0, 0.0), (2.0, 0.0), (4.0, 0.0), (4.0, 3.0), (2.0, 3.0), (0.0, 3.0)]

    A long one loses, one at a time, the vertex whose triangle with its neighbours is smallest:

    >>> canonical_target([0, 0, 2, 0, 4, 0, 4, 3, 0, 3], 4)
    [(0.0, 0.0), (4.0, 0.0), (4.0, 3.0), (0.0, 3.0)]
    """
    return list(canonical_targets(part, (n,), phase)[n])


def _twice_triangle_area(a: Point, b: Point, c: Point) -> float:
    # Twice the area orders the same as the area and saves a multiplication.
    return abs((b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1]))


def _visvalingam_whyatt_order(ring: Sequence[Point], keep: int) -> list[int]:
    """Indices of ``ring`` in the order Visvalingam–Whyatt removes them, down to ``keep``.

    The ring is simplified as the polyline its list spells from the sampling origin: vertex 0
    and vertex ``V − 1`` are never removed, and the others' triangles use their neighbours
    along that polyline, with no wrap-around. After a removal only the two neighbours' areas
    change, with no "monotone effective area" clamp; ties take the lowest current index, which
    is the lowest index since removal keeps the order. (§2.3, revised: the origin is pinned.)
    A heap with lazy deletion makes it O(V log V).
    """
    v = len(ring)
    if keep < 2:
        raise ValueError(f"the two pinned ends stay, so keep must be at least 2, got {keep}")
    prev = [i - 1 for i in range(v)]
    nxt = [i + 1 for i in range(v)]
    area = [math.inf] * v  # the pinned ends: never in the heap, never removed
    for i in range(1, v - 1):
        area[i] = _twice_triangle_area(ring[i - 1], ring[i], ring[i + 1])
    heap = [(area[i], i) for i in range(1, v - 1)]
    heapq.heapify(heap)
    alive = [True] * v
    order: list[int] = []
    while v - len(order) > keep:
        a, i = heapq.heappop(heap)
        # A stale entry carries an area the vertex no longer has. An entry equal to the current
        # area is interchangeable with the fresh one, so no version counter is needed.
        if not alive[i] or a != area[i]:
            continue
        alive[i] = False
        order.append(i)
        p, q = prev[i], nxt[i]
        nxt[p], prev[q] = q, p
        for j in (p, q):
            if j == 0 or j == v - 1:
                continue
            area[j] = _twice_triangle_area(ring[prev[j]], ring[j], ring[nxt[j]])
            heapq.heappush(heap, (area[j], j))
    return order


def _upsample(ring: Sequence[Point], sizes: Sequence[int]) -> dict[int, tuple[Point, ...]]:
    """The ring after longest-edge midpoint insertion, at each size in ``sizes`` (ascending).

    Edge ``i`` joins vertex ``i`` to the next one, the closing edge included; the longest edge
    (squared length in float64) is split, ties to the lowest index (§2.2, decided: cyclic).
    Each heap entry is one edge keyed by (−length², order key of its first vertex); splitting
    pops the edge and pushes its two halves, so entries never go stale. Order keys are integers
    that keep ring order as midpoints are inserted between their neighbours.
    """
    v = len(ring)
    xs = [p[0] for p in ring]
    ys = [p[1] for p in ring]
    nxt = [*range(1, v), 0]
    key = [i * _KEY_SPACING for i in range(v)]

    def entry(i: int) -> tuple[float, int, int]:
        j = nxt[i]
        dx, dy = xs[j] - xs[i], ys[j] - ys[i]
        return (-(dx * dx + dy * dy), key[i], i)

    heap = [entry(i) for i in range(v)]
    heapq.heapify(heap)
    out: dict[int, tuple[Point, ...]] = {}
    pending = sorted(sizes)
    count = v
    while pending:
        _, _, i = heapq.heappop(heap)
        j = nxt[i]
        m = len(xs)
        xs.append((xs[i] + xs[j]) / 2.0)
        ys.append((ys[i] + ys[j]) / 2.0)
        end_key = key[j] if j != 0 else v * _KEY_SPACING
        key.append((key[i] + end_key) // 2)
        nxt[i] = m
        nxt.append(j)
        heapq.heappush(heap, entry(i))
        heapq.heappush(heap, entry(m))
        count += 1
        if count == pending[0]:
            out[pending.pop(0)] = _walk(xs, ys, nxt)
    return out


def _walk(xs: list[float], ys: list[float], nxt: list[int]) -> tuple[Point, ...]:
    out = [(xs[0], ys[0])]
    i = nxt[0]
    while i != 0:
        out.append((xs[i], ys[i]))
        i = nxt[i]
    return tuple(out)
