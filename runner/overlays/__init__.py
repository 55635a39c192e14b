"""Answers drawn over their images: ``groundbench show`` and the HTML report's overlays.

:mod:`runner.overlays._scene` holds what an overlay shows (a question as the model saw it, its
answers as scored), read from a store by :func:`read_question`, :func:`read_answers` and
:func:`iter_questions`; the geometry of one answer is ``scoring``'s
(:func:`scoring.draw_polygon`, :func:`scoring.draw_box`).
"""

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
    "AnswerView",
    "OverlayError",
    "Picture",
    "Pictures",
    "QuestionView",
    "Ring",
    "Selection",
    "iter_questions",
    "read_answers",
    "read_question",
    "recorded_images",
]
