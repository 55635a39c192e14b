"""Answers drawn over their images: ``groundbench show`` and the HTML report's overlays.

:mod:`runner.overlays._scene` holds what an overlay shows (a question as the model saw it, its
answers as scored), read from a store by :func:`read_question`, :func:`read_answers` and
:func:`iter_questions`; the geometry of one answer is ``scoring``'s
(:func:`scoring.draw_polygon`, :func:`scoring.draw_box`). :func:`pick_answer` picks the one
a :class:`Selection` names, :func:`draw_overlay` draws it, :func:`save_overlay` writes it, and
:func:`result` is its scores in a line (:data:`NO_BREAK` between the words a line keeps together).
"""

from runner.overlays._caption import NO_BREAK, result
from runner.overlays._figure import draw_overlay, save_overlay
from runner.overlays._pick import pick_answer
from runner.overlays._read import (
    OverlayError,
    Pictures,
    Selection,
    iter_questions,
    read_answers,
    read_question,
    recorded_images,
)
from runner.overlays._scene import AnswerView, Picture, QuestionView, Ring

__all__ = [
    "NO_BREAK",
    "AnswerView",
    "OverlayError",
    "Picture",
    "Pictures",
    "QuestionView",
    "Ring",
    "Selection",
    "draw_overlay",
    "iter_questions",
    "pick_answer",
    "read_answers",
    "read_question",
    "recorded_images",
    "result",
    "save_overlay",
]
