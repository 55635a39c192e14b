"""Attempts and views (PROTOCOL §6).

Attempt 0 is the primary call; only a parse failure triggers another, stateless attempt. A view
locks the first parseable answer within its window of attempts:

========== ============ ==========================================
view       attempts     use
========== ============ ==========================================
``iou0``   0            the one-call view
``iou1``   0–1          one parse-failure retry
``iou2``   0–2          **headline** scores, contrasts, main tables
best       0–3          labelled diagnostic with one authorised recovery; never a headline
========== ============ ==========================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar

View = Literal["iou0", "iou1", "iou2", "best_effort"]

VIEW_ATTEMPTS: dict[View, int] = {"iou0": 1, "iou1": 2, "iou2": 3, "best_effort": 4}
"""How many attempts (from attempt 0) each view may look at."""

HEADLINE_VIEW: View = "iou2"


class Attempt(Protocol):
    """Anything scored per attempt: a polygon or a box score."""

    @property
    def parseable(self) -> bool: ...


S = TypeVar("S", bound=Attempt)


def locked_attempt(attempts: Sequence[S | None], view: View = HEADLINE_VIEW) -> S | None:
    """The first parseable attempt inside ``view``'s window, or ``None`` if there is none.

    ``attempts[i]`` is attempt ``i``'s score, or ``None`` where attempt ``i`` produced no
    response (an errored call). ``None`` scores zero under the fixed denominator.

    >>> from scoring import UNPARSEABLE, PolygonScore
    >>> good = PolygonScore(parseable=True, iou=0.5)
    >>> locked_attempt([UNPARSEABLE, good], "iou0") is None
    True
    >>> locked_attempt([UNPARSEABLE, good], "iou1") is good
    True
    """
    for attempt in attempts[: VIEW_ATTEMPTS[view]]:
        if attempt is not None and attempt.parseable:
            return attempt
    return None
