"""What an overlay's caption says: which answer it is, what it was asked, how it scored, and
everything the drawing could not show (plain text, for any renderer)."""

from __future__ import annotations

import re

from conditions import BOX
from runner.overlays._scene import AnswerView, QuestionView
from scoring import PolygonScore

RAW_SHOWN = 200  # characters of an unparseable answer's text the caption quotes
ERROR_SHOWN = 300  # characters of a stored error's message the caption quotes
NO_BREAK = "\u00a0"


def caption(question: QuestionView, answer: AnswerView, *, control: int | None = None) -> list[str]:
    """The caption's paragraphs: the answer's key, the expression and hint, the result (scores,
    ``unparseable`` with the raw text, or the error), and the notes of what is not drawn.

    The overlay adds its own notes (an image that cannot be shown, vertices beyond the view).
    """
    paragraphs = [heading(answer), f"expression: “{question.expression}”"]
    if answer.hint:
        paragraphs.append(f"hint: {_flat(answer.hint)}")
    paragraphs.append(result(answer, control=control))
    if answer.finish_reason not in (None, "stop"):
        paragraphs.append(f"finish reason: {answer.finish_reason}")
    return paragraphs + drawing_notes(answer, control=control)


def heading(answer: AnswerView) -> str:
    """``qid · configuration / condition / N / attempt``."""
    budget = "box" if answer.budget == BOX else f"N = {answer.budget}"
    return (
        f"{answer.qid} · {answer.configuration} / {answer.condition} / {budget} / "
        f"attempt {answer.attempt}"
    )


def result(answer: AnswerView, *, control: int | None = None) -> str:
    """One line of what the answer scored, or why it has no score."""
    if answer.outcome != "answer":
        return f"error ({answer.outcome}): {_quoted(answer.error or '', ERROR_SHOWN)}"
    if answer.budget == BOX:
        return _box_result(answer, control)
    if _unparseable(answer):
        return f"unparseable: “{_quoted(answer.text or '', RAW_SHOWN)}”"
    if answer.score is None:
        return "not scored yet"
    return polygon_scores(answer.score)


def polygon_scores(score: PolygonScore) -> str:
    """IoU, IoU_part, IoU_union, continuous IoU and distractor IoU in points, legality, the
    defect and target preference."""
    ious = (
        ("IoU", score.iou),
        ("IoU_part", score.iou_part),
        ("IoU_union", score.iou_union),
        ("continuous IoU", score.iou_cont),
        ("distractor IoU", score.iou_distractor),
    )
    items = [f"{name} {100 * value:.1f}" for name, value in ious] + [
        f"legal {_yes(score.legal)}",
        f"defect {score.defect or 'none'}",
        f"sel {_yes(score.sel)}",
    ]
    # No-break spaces inside an item and before a separator: a wrapped caption never parts a
    # name from its value, nor starts a line with "·".
    return f"{NO_BREAK}· ".join(item.replace(" ", NO_BREAK) for item in items)


def drawing_notes(answer: AnswerView, *, control: int | None = None) -> list[str]:
    """What the answer's geometry could not show, and an image that cannot be shown."""
    notes = [answer.picture.problem] if answer.picture.problem else []
    if answer.polygon is not None:
        notes += answer.polygon.notes
    if answer.box is not None:
        notes += answer.box.notes
        drawn = answer.box.controls.get(control) if control is not None else None
        notes += [f"control: {note}" for note in drawn.notes] if drawn else []
    return notes


def _box_result(answer: AnswerView, control: int | None) -> str:
    score = answer.box_score
    if answer.box is not None and answer.box.rectangle is None:
        return f"unparseable box: “{_quoted(answer.text or '', RAW_SHOWN)}”"
    if score is None:
        return "not scored yet"
    line = f"box IoU {100 * score.box_iou:.1f}"
    if control is None:
        return line
    scored = score.control.get(control)
    if scored is None:
        return f"{line} · box-derived control N = {control}: not scored"
    return f"{line} · box-derived control N = {control}: {polygon_scores(scored)}"


def _unparseable(answer: AnswerView) -> bool:
    if answer.score is not None:
        return not answer.score.parseable
    return answer.polygon is not None and answer.polygon.shape != "polygon"


def _quoted(text: str, most: int) -> str:
    """``text`` on one line, cut to ``most`` characters (an ellipsis says it was cut)."""
    # Flattened after a first cut: a 10⁵-vertex answer's megabyte is never scanned whole.
    flat = _flat(text.lstrip()[: 8 * most])
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _yes(value: bool) -> str:
    return "yes" if value else "no"
