"""An attempt's caption under its overlay: where it belongs, how it was scored, and what the
overlay cannot show (notes on what was not drawn, a missing image, the raw text)."""

from __future__ import annotations

from html import escape

from runner.overlays._scene import MOST_MARKED, MOST_NUMBERED, AnswerView
from runner.pages._html import budget_label, raw_text
from scoring import MAX_DRAWN, DrawnAnswer

ERROR_SHOWN = 200  # characters of a stored error message in a caption


def caption(
    answer: AnswerView, *, qid: bool = False, cell: bool = False, text: bool = False
) -> str:
    """The inside of an attempt's ``<figcaption>``: one line naming it (with its question and
    its cell where asked), one with its verdict, then its notes, its image's problem and, for
    an answer that did not parse, its raw text (escaped, cut at 600 characters); with
    ``text``, a parsed answer's text too, folded away."""
    where = [escape(answer.qid)] if qid else []
    if cell:
        where += [escape(answer.configuration), escape(answer.condition)]
        where.append(budget_label(answer.budget))
    where.append(f"attempt {answer.attempt}")
    lines = [" · ".join(where), escape(verdict(answer))]
    if answer.finish_reason not in (None, "stop"):
        lines.append(f"finish reason: {escape(str(answer.finish_reason))}")
    lines += [f'<span class="note">{escape(n)}</span>' for n in notes(answer)]
    if answer.picture.problem is not None:
        lines.append(f'<span class="problem">image: {escape(answer.picture.problem)}</span>')
    out = "<br>".join(lines)
    if answer.text is not None and not parsed(answer):
        out += raw_text(answer.text)
    elif answer.text is not None and text:
        out += f"<details><summary>answer text</summary>{raw_text(answer.text)}</details>"
    return out


def verdict(answer: AnswerView) -> str:
    """How the attempt was judged, in a few words, IoUs in points as the tables give them
    (``IoU 53.0 · illegal: self-intersecting``)."""
    if answer.outcome != "answer":
        error = (answer.error or "")[:ERROR_SHOWN]
        return f"error ({answer.outcome})" + (f": {error}" if error else "")
    if answer.box_score is not None:
        score = answer.box_score
        return f"box IoU {_points(score.box_iou)}" if score.parseable else "unparseable"
    polygon = answer.score
    if polygon is None:
        return "unparseable" if not parsed(answer) else "not scored yet"
    if not polygon.parseable:
        return "unparseable"
    words = [f"IoU {_points(polygon.iou)}"]
    words.append("legal" if polygon.legal else f"illegal: {polygon.defect}")
    if not polygon.sel and polygon.iou_distractor > 0:
        words.append(f"distractor IoU {_points(polygon.iou_distractor)}")
    return " · ".join(words)


def _points(iou: float) -> str:
    return f"{100 * iou:.1f}"


def parsed(answer: AnswerView) -> bool:
    """Whether the answer's text held a list of the right length (what scoring parses)."""
    if answer.text is None:
        return True  # an error: no text to show
    if answer.box is not None:
        return answer.box.corners is not None
    if answer.score is not None:
        return answer.score.parseable
    return answer.polygon is not None and answer.polygon.shape == "polygon"


def notes(answer: AnswerView) -> tuple[str, ...]:
    """What the overlay leaves out of this answer, and why (from its drawing)."""
    if answer.polygon is not None:
        return (*answer.polygon.notes, *_unmarked(answer.polygon))
    if answer.box is not None:
        return answer.box.notes
    return ()


def _unmarked(drawn: DrawnAnswer) -> list[str]:
    """What the overlay leaves unmarked of a scrawl: its numbers past :data:`MOST_NUMBERED`
    vertices (above ``MAX_DRAWN`` the drawing says so itself), its marks past
    :data:`MOST_MARKED`."""
    out = []
    vertices = sum(v is not None for v in drawn.vertices)
    if vertices > MOST_NUMBERED and drawn.listed <= 2 * MAX_DRAWN:
        out.append(f"its {vertices:,} vertices are not numbered (over {MOST_NUMBERED})")
    for count, what in ((len(drawn.duplicates), "duplicate vertices"),
                        (len(drawn.crossings), "crossings")):  # fmt: skip
        if count > MOST_MARKED:
            out.append(f"{count:,} {what}: the first {MOST_MARKED} marked")
    return out
