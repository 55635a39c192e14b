"""Continuous (vector) regions with shapely, for ``iou_cont`` (PROTOCOL §5).

A ring that crosses itself has no valid shapely polygon. GEOS's ``make_valid`` is close to the
even-odd rule but not equal to it: its "linework" method dissolves edges traversed twice, so a
square answered twice over comes back as the square, while its even-odd fill (and pycocotools'
raster) is empty. So the region is built exactly: node the ring's edges, polygonize them into
faces, and keep the faces that a ray from an interior point crosses the original ring an odd
number of times. A region is returned as an array of disjoint faces, which is all that areas
and intersections need.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import shapely

Faces = npt.NDArray[np.object_]
"""A 1-d array of pairwise disjoint shapely polygons."""

_NO_FACES: Faces = np.empty(0, dtype=object)


def even_odd_faces(points: npt.NDArray[np.float64], *, simple: bool = False) -> Faces:
    """The even-odd region of the closed ring ``points`` (shape ``(k, 2)``), as disjoint faces.

    ``simple=True`` promises that the ring is simple with positive area (a legal answer), which
    skips GEOS's validity check.
    """
    if len(points) < 3:
        return _NO_FACES
    polygon = shapely.Polygon(points)
    if simple or polygon.is_valid:
        return np.array([polygon], dtype=object)
    closed = np.vstack([points, points[:1]])
    linework = shapely.union_all(shapely.LineString(closed))  # nodes and dissolves the edges
    faces = shapely.get_parts(shapely.polygonize(shapely.get_parts(linework)))
    if len(faces) == 0:
        return _NO_FACES
    probes = shapely.point_on_surface(faces)
    odd = _crossings_are_odd(points, shapely.get_x(probes), shapely.get_y(probes))
    return np.asarray(faces[odd], dtype=object)


def clip_faces(faces: Faces, width: float, height: float) -> Faces:
    """The faces cut to the image frame ``[0, width] × [0, height]``."""
    if len(faces) == 0:
        return faces
    frame = shapely.box(0.0, 0.0, width, height)
    bounds = shapely.bounds(faces)
    if bounds[:, 0].min() >= 0 and bounds[:, 1].min() >= 0:
        if bounds[:, 2].max() <= width and bounds[:, 3].max() <= height:
            return faces
    clipped = shapely.intersection(faces, frame)
    return np.asarray(clipped[shapely.area(clipped) > 0], dtype=object)


def faces_area(faces: Faces) -> float:
    """Total area of disjoint faces."""
    return float(shapely.area(faces).sum()) if len(faces) else 0.0


def region_iou(a: Faces, b: Faces, *, area_a: float | None = None, area_b: float | None = None) -> float:
    """Continuous IoU of two regions given as disjoint faces; 0 when both are empty."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    area_a = faces_area(a) if area_a is None else area_a
    area_b = faces_area(b) if area_b is None else area_b
    if len(a) == 1 and len(b) == 1:
        inter = float(shapely.area(shapely.intersection(a[0], b[0])))
    else:
        inter = float(shapely.area(shapely.intersection(a[:, None], b[None, :])).sum())
    union = area_a + area_b - inter
    return inter / union if union > 0 else 0.0


def _crossings_are_odd(
    points: npt.NDArray[np.float64], qx: npt.NDArray[np.float64], qy: npt.NDArray[np.float64]
) -> npt.NDArray[np.bool_]:
    """Even-odd test of query points against a ring: a ray towards +x crosses it an odd number
    of times. Probes are interior points of faces of the noded ring, never on an edge."""
    x1, y1 = points[:, 0], points[:, 1]
    x2, y2 = np.roll(x1, -1), np.roll(y1, -1)
    qx, qy = qx[:, None], qy[:, None]
    straddles = (y1 > qy) != (y2 > qy)
    with np.errstate(divide="ignore", invalid="ignore"):
        x_at = x1 + (qy - y1) * (x2 - x1) / (y2 - y1)
    crossings = np.count_nonzero(straddles & (qx < x_at), axis=1)
    return np.asarray(crossings % 2 == 1)
