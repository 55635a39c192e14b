"""One question's page: its image, expression and every stored attempt side by side (rows
configuration × condition, columns the budgets then the box question), each attempt an
overlay with its caption. Static HTML: it needs no script."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from itertools import groupby

from conditions import BOX
from runner.overlays._scene import AnswerView, Picture, QuestionView
from runner.overlays._svg import overlay_svg, picture_defs, question_defs
from runner.pages._captions import caption
from runner.pages._html import attempt_anchor, budget_label, document, legend
from runner.pages._pictures import QUESTION_SIDE, PagePictures

SCENE = "s"  # the page's one question's rings (question_defs)
HINT_SHOWN = 300  # characters of a condition's hint in its row's heading


def question_page(
    question: QuestionView, answers: Sequence[AnswerView], full: Picture | None
) -> str:
    """The page of ``question`` with all of ``answers`` (its stored attempts, in the order
    configuration, condition, budget, attempt); ``full`` is its image as the question's own
    overlay shows it (``None``: none). Links back to ``../index.html``."""
    pictures = PagePictures(QUESTION_SIDE)
    header_id = pictures.picture_id(question, full) if full is not None else None
    grid = _grid(question, answers, pictures)
    problems = sorted({a.picture.problem for a in answers if a.picture.problem is not None})
    if full is not None and full.problem is not None:
        problems = sorted({full.problem, *problems})
    body = [
        '<p><a href="../index.html">← the report</a></p>',
        picture_defs([*pictures.definitions(), question_defs(question, SCENE)]),
        f"<h1>{escape(question.qid)}</h1>",
        f"<p><b>Expression:</b> “{escape(question.expression)}”</p>",
        f"<p>{_facts(question)}</p>",
        *(f'<p class="problem">Image problem: {escape(p)}</p>' for p in problems),
        '<div style="max-width:600px">',
        overlay_svg(question, None, picture_id=header_id, scene_id=SCENE),
        "</div>",
        legend(),
        f"<h2>Attempts ({len(answers):,})</h2>",
        grid,
    ]
    return document(f"{question.qid}: {question.expression}", "".join(body))


def _facts(question: QuestionView) -> str:
    budgets = ", ".join(str(n) for n in sorted(question.targets))
    facts = [
        f"category {question.category}",
        f"source {question.source}",
        f"image {question.image_file} ({question.width}×{question.height} px)",
        f"targets for N = {budgets or 'none'}",
    ]
    return escape(" · ".join(facts))


def _grid(question: QuestionView, answers: Sequence[AnswerView], pictures: PagePictures) -> str:
    """The attempts as a table: a row per (configuration, condition), a column per budget
    held (the box question last), each cell that budget's attempts in order."""
    if not answers:
        return "<p>No attempt of this question is stored.</p>"
    budgets = sorted({a.budget for a in answers}, key=lambda n: (n == BOX, n))
    head = "".join(f"<th>{budget_label(n)}</th>" for n in budgets)
    rows = []
    for (configuration, condition), group in groupby(
        answers, key=lambda a: (a.configuration, a.condition)
    ):
        row = list(group)
        cells = "".join(
            f"<td>{_attempts(question, [a for a in row if a.budget == n], pictures)}</td>"
            for n in budgets
        )
        rows.append(f"<tr>{_row_heading(configuration, condition, row)}{cells}</tr>")
    return (
        '<div class="scroll"><table class="grid"><thead><tr><th>configuration · condition</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _row_heading(configuration: str, condition: str, row: Sequence[AnswerView]) -> str:
    hint = next((a.hint for a in row if a.hint), None)
    shown = f"<br><small>{escape(hint[:HINT_SHOWN])}</small>" if hint else ""  # "Hint: …"
    return f"<th>{escape(configuration)}<br>{escape(condition)}{shown}</th>"


def _attempts(
    question: QuestionView, attempts: Sequence[AnswerView], pictures: PagePictures
) -> str:
    out = []
    for stored in attempts:
        answer, picture_id = pictures.shown(question, stored)
        anchor = attempt_anchor(answer.configuration, answer.condition, answer.budget,
                                answer.attempt)  # fmt: skip
        svg = overlay_svg(question, answer, picture_id=picture_id, scene_id=SCENE)
        out.append(
            f'<figure class="attempt" id="{anchor}">{svg}'
            f"<figcaption>{caption(answer, text=True)}</figcaption></figure>"
        )
    return "".join(out)
