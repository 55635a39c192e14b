"""What an overlay shows: one question as the model saw it, and its answers as scored.

Plain frozen values read from a store (:mod:`runner.overlays._read`) and drawn by either
renderer: matplotlib for ``groundbench show`` (:mod:`runner.overlays._figure`), SVG for the HTML
report (:mod:`runner.overlays._svg`). Everything is in the annotation frame's pixels, (0, 0) the
top-left corner, ``width × height`` the frame the answers' 0–999 units map onto.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from conditions import ImageBlob, Variant
from runner.store import AttemptKey
from scoring import BoxScore, PolygonScore
from scoring._drawn import DrawnAnswer, DrawnBox, Point

Ring = tuple[Point, ...]
"""A closed ring in pixels (the closing edge implied)."""

MOST_NUMBERED = 128
"""Vertices an overlay numbers at most: a legal answer has at most 64; past this the numbers
would hide the answer."""
MOST_MARKED = 128
"""Duplicate vertices, and crossings, an overlay marks at most: a 4,096-vertex scrawl has
thousands, which would black the answer out."""


@dataclass(frozen=True)
class Picture:
    """The image an answer was given: its variant as sent.

    Attributes
    ----------
    variant
        ``full``, ``half`` (half-res), ``grey`` (greyscale) or ``none`` (no image sent).
    blob
        The bytes as sent (``None``: nothing was sent, or the file is missing or changed).
    problem
        Why the image cannot be shown, naming the file (``"images/x.jpg: missing"``,
        ``"images/x.jpg: changed since the cohort was built (sha256 differs)"``); ``None``
        when it can, or when nothing was sent.
    """

    variant: Variant
    blob: ImageBlob | None
    problem: str | None = None


@dataclass(frozen=True)
class QuestionView:
    """One question and what it is judged against.

    Attributes
    ----------
    targets
        ``G_N`` (phase 0, the official target) per budget the cohort holds.
    part
        ``A_i``, the referent's selected source part (§2.1), unreduced.
    other_parts
        The referent's other parts.
    distractors
        Each same-category distractor's parts.
    box
        The referent's COCO box ``(x, y, w, h)``.
    """

    qid: str
    source: str
    expression: str
    category: str
    width: int
    height: int
    image_file: str
    image_sha256: str
    targets: Mapping[int, Ring]
    part: Ring
    other_parts: tuple[Ring, ...]
    distractors: tuple[tuple[Ring, ...], ...]
    box: tuple[float, float, float, float]


@dataclass(frozen=True)
class AnswerView:
    """One stored attempt of a question, as scored.

    Attributes
    ----------
    budget
        ``N``, or ``conditions.BOX`` (0) for the box question.
    outcome
        The response's outcome: ``answer``, or the kind of error stored.
    text
        The answer text (``None`` for an error).
    error
        The stored error's message (``None`` for an answer).
    hint
        The hint sentences the condition added to the prompt (``None``: none).
    picture
        The image as sent under the condition.
    polygon
        A polygon answer drawn (``None`` for a box question or an error).
    score
        A polygon answer's stored scores (``None``: not scored yet, a box, or an error).
    box
        A box answer drawn, with its controls (``None`` unless a box question's answer).
    box_score
        A box answer's stored scores and controls.
    """

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int
    outcome: str
    text: str | None
    error: str | None
    finish_reason: str | None
    hint: str | None
    picture: Picture
    polygon: DrawnAnswer | None = None
    score: PolygonScore | None = None
    box: DrawnBox | None = None
    box_score: BoxScore | None = None

    @property
    def key(self) -> AttemptKey:
        return AttemptKey.of(self)
