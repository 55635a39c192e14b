"""A catalogue of named answer shapes, degenerate ones included (after shapely's tests/common.py).

Vertices are in the answer's own 0–999 units. Scored in a 999×999 frame, a unit is a pixel, so
areas can be worked out by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from scoring import Defect


@dataclass(frozen=True)
class Shape:
    name: str
    vertices: tuple[tuple[int, int], ...]
    defect: Defect | None
    area: float
    """Exact area of the even-odd region clipped to the 999×999 frame."""

    @property
    def text(self) -> str:
        return " ".join(f"{x} {y}" for x, y in self.vertices)


SHAPES: tuple[Shape, ...] = (
    Shape("square", ((100, 100), (300, 100), (300, 300), (100, 300)), None, 40_000.0),
    Shape("triangle", ((100, 100), (500, 100), (100, 400)), None, 60_000.0),
    Shape(
        "concave-l",
        ((100, 100), (300, 100), (300, 200), (200, 200), (200, 300), (100, 300)),
        None,
        30_000.0,
    ),
    Shape(
        "collinear-inner-vertex",
        ((100, 100), (200, 100), (300, 100), (300, 300), (100, 300)),
        None,
        40_000.0,
    ),
    Shape("touching-frame", ((0, 0), (999, 0), (999, 500), (0, 500)), None, 999.0 * 500.0),
    Shape(
        "bow-tie", ((100, 100), (300, 300), (300, 100), (100, 300)), "self-intersecting", 20_000.0
    ),
    Shape(
        "touches-itself",
        ((100, 100), (300, 100), (300, 300), (200, 100), (100, 300)),
        "self-intersecting",
        # (200,100) lies on the first edge; the ring is two triangles meeting at that vertex.
        0.5 * 100 * 200 + 0.5 * 100 * 200,
    ),
    Shape(
        "spike",
        ((100, 100), (300, 100), (300, 300), (300, 400), (300, 250), (100, 300)),
        "self-intersecting",
        # The spike (300,300)→(300,400)→(300,250) encloses nothing; the rest is a trapezoid.
        0.5 * (200 + 150) * 200,
    ),
    Shape("collinear", ((100, 100), (200, 200), (300, 300), (400, 400)), "self-intersecting", 0.0),
    # Distinct vertices but no area: the ring runs out along a line and folds back on itself.
    Shape("zero-area", ((100, 100), (300, 100), (200, 100)), "self-intersecting", 0.0),
    Shape(
        "duplicate-point",
        ((100, 100), (300, 100), (300, 100), (300, 300), (100, 300)),
        "duplicate-vertex",
        40_000.0,
    ),
    Shape("one-point", ((500, 500), (500, 500), (500, 500), (500, 500)), "duplicate-vertex", 0.0),
    Shape(
        "twice-around",
        ((100, 100), (300, 100), (300, 300), (100, 300)) * 2,
        "duplicate-vertex",
        0.0,  # even-odd: every point is enclosed twice
    ),
    Shape(
        "out-of-frame",
        ((-100, -100), (200, -100), (200, 200), (-100, 200)),
        "out-of-range",
        200.0 * 200.0,
    ),
    Shape(
        "beyond-frame", ((1200, 100), (1500, 100), (1500, 400), (1200, 400)), "out-of-range", 0.0
    ),
)

BY_NAME = {s.name: s for s in SHAPES}
