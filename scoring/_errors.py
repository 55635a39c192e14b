"""The errors of the scoring package.

::

    ScoringError                    anything scoring refuses to judge
    ├── RingError                   a flat coordinate list that is no ring (odd length, not finite)
    └── AnnotationError             an annotation that cannot serve as a referent or distractor
        ├── CrowdAnnotationError    an RLE (crowd) segmentation, which has no polygon to select
        └── DegeneratePartError     the selected part has < 3 distinct vertices or zero area

An unparseable *answer* is never an error: it is a score (``parseable=False``), because a model's
bad output is data. Errors are for bad *references*, which are the caller's bug or bad input data.
"""

from __future__ import annotations


class ScoringError(ValueError):
    """Base class of everything the scoring package raises on bad input."""


class RingError(ScoringError):
    """A flat ``[x1, y1, x2, y2, …]`` list that cannot be read as a polygon ring."""


class AnnotationError(ScoringError):
    """An annotation that cannot be scored against; the message names its id."""

    def __init__(self, ann_id: int | None, reason: str) -> None:
        self.ann_id = ann_id
        self.reason = reason
        where = f"annotation {ann_id}" if ann_id is not None else "polygon part"
        super().__init__(f"{where}: {reason}")


class CrowdAnnotationError(AnnotationError):
    """The annotation's segmentation is an RLE (a crowd region), not a list of polygons."""


class DegeneratePartError(AnnotationError):
    """The selected polygon part has fewer than 3 distinct vertices or zero area."""
