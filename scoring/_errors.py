"""The errors of the scoring package, and :class:`GroundbenchError`, the root of every error
groundbench raises on purpose. The whole tree, every package's, is drawn in one place: the
docstring of ``runner/_errors.py``. The root is here because ``scoring`` imports no package of
ours, so ``conditions`` and ``runner`` can both descend from it.

An unparseable *answer* is never an error: it is a score (``parseable=False``), because a model's
bad output is data. Errors are for bad *references*, which are the caller's bug or bad input data.
"""

from __future__ import annotations


class GroundbenchError(Exception):
    """Base of every error groundbench raises on purpose (the tree: ``runner/_errors.py``)."""


class ScoringError(GroundbenchError, ValueError):
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
