"""Keeping far-away vertices away from the C libraries.

pycocotools rounds ``5·x + 0.5`` to a C int (overflow for huge answers) and allocates one
boundary sample per 0.2 px of every edge; Clipper needs integer coordinates in range. So a ring
with a vertex farther than one frame outside the image is first clipped to that window
(Sutherland–Hodgman). Clipping against a convex window keeps the even-odd region inside it,
so nothing within the frame changes except through the rounding of the new vertices on the
window's border, at least one frame away from any pixel. (decided)
"""

from __future__ import annotations

from collections.abc import Sequence

_MARGIN = 1.0  # the window reaches one frame beyond each side of the image


def window_clip(flat: Sequence[float], height: int, width: int) -> list[float]:
    """``flat`` (``[x1, y1, …]`` in pixels) as a ring inside the window around the frame."""
    xs, ys = flat[0::2], flat[1::2]
    x0, x1 = -_MARGIN * width, (1.0 + _MARGIN) * width
    y0, y1 = -_MARGIN * height, (1.0 + _MARGIN) * height
    if not xs:
        return []
    if min(xs) >= x0 and max(xs) <= x1 and min(ys) >= y0 and max(ys) <= y1:
        return [float(c) for c in flat]
    points = list(zip(xs, ys, strict=True))
    for axis, bound, keep_above in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        points = _clip_half_plane(points, axis, bound, keep_above)
    return [c for p in points for c in p]


def _clip_half_plane(
    points: list[tuple[float, float]], axis: int, bound: float, keep_above: bool
) -> list[tuple[float, float]]:
    """One Sutherland–Hodgman pass: the ring cut to one side of ``point[axis] = bound``."""

    def inside(p: tuple[float, float]) -> bool:
        return p[axis] >= bound if keep_above else p[axis] <= bound

    out: list[tuple[float, float]] = []
    for k, current in enumerate(points):
        previous = points[k - 1]
        if inside(current) != inside(previous):
            t = (bound - previous[axis]) / (current[axis] - previous[axis])
            other = 1 - axis
            crossing = previous[other] + t * (current[other] - previous[other])
            out.append((bound, crossing) if axis == 0 else (crossing, bound))
        if inside(current):
            out.append(current)
    return out
