"""One question's page: its image, expression and every stored attempt side by side (rows
configuration × condition, columns the budgets then the box question), each attempt an
overlay with its caption. Static HTML: it needs no script.

The columns wrap rather than scroll: at 1280 px six of them share a row, and a narrower window
moves the last ones below, each headed with its budget (issue 39: the box column hid behind a
horizontal scroll). A click on an attempt shows it as large as the window (a CSS ``:target``,
no script); "close" goes back to it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from itertools import groupby

from conditions import BOX
from runner.overlays._scene import AnswerView, Picture, QuestionView
from runner.overlays._svg import overlay_svg, picture_defs, question_defs
from runner.pages._captions import caption, verdict
from runner.pages._html import attempt_anchor, budget_label, document, legend
from runner.pages._pictures import QUESTION_SIDE, PagePictures

SCENE = "s"  # the page's one question's rings (question_defs)
HINT_SHOWN = 300  # characters of a condition's hint in its row's heading
_VIEW_BOX = re.compile(r'viewBox="([-\d.e]+) ([-\d.e]+) ([\d.e]+) ([\d.e]+)"')


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
    """The attempts: a section per (configuration, condition), in it a block per budget held
    (the box question last; every section has the same blocks, "no attempt" where it holds
    none), each block that budget's attempts in order."""
    if not answers:
        return "<p>No attempt of this question is stored.</p>"
    budgets = sorted({a.budget for a in answers}, key=lambda n: (n == BOX, n))
    rows = []
    for (configuration, condition), group in groupby(
        answers, key=lambda a: (a.configuration, a.condition)
    ):
        row = list(group)
        blocks = "".join(_block(question, n, [a for a in row if a.budget == n], pictures)
                         for n in budgets)  # fmt: skip
        rows.append(
            f'<section class="attempts">{_row_heading(configuration, condition, row)}'
            f'<div class="budgets">{blocks}</div></section>'
        )
    return "".join(rows)


def _row_heading(configuration: str, condition: str, row: Sequence[AnswerView]) -> str:
    hint = next((a.hint for a in row if a.hint), None)
    shown = f'<p class="hint"><small>{escape(hint[:HINT_SHOWN])}</small></p>' if hint else ""
    return f"<h3>{escape(configuration)} · {escape(condition)}</h3>{shown}"  # "Hint: …"


def _block(
    question: QuestionView, budget: int, attempts: Sequence[AnswerView], pictures: PagePictures
) -> str:
    inside = _attempts(question, attempts, pictures) or '<p class="none">no attempt</p>'
    return f'<div class="budget"><h4>{budget_label(budget)}</h4>{inside}</div>'


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
            f'<figure class="attempt" id="{anchor}">{zoomable(svg, anchor, _label(answer))}'
            f"<figcaption>{caption(answer, text=True)}</figcaption></figure>"
        )
    return "".join(out)


def zoomable(svg: str, anchor: str, label: str) -> str:
    """``svg`` as a link that opens it as large as the window (``#z-<anchor>``, the
    ``.zoom:target`` rule of the page's style), with ``label`` and a link back to ``anchor``
    shown only then."""
    zoom = f"z-{anchor}"
    box = _VIEW_BOX.search(svg)
    ratio = float(box[3]) / float(box[4]) if box and float(box[4]) > 0 else 1.0
    # the width that fits the window either way, the height following the picture's own ratio
    return (
        f'<div class="zoom" id="{zoom}" style="--ar:{ratio:.4f}"><a class="open" href="#{zoom}" '
        f'title="click to enlarge">{svg}</a><p class="label">{label}</p>'
        f'<a class="close" href="#{anchor}">close ✕</a></div>'
    )


def _label(answer: AnswerView) -> str:
    where = [answer.configuration, answer.condition, budget_label(answer.budget)]
    where.append(f"attempt {answer.attempt}")
    return escape(f"{' · '.join(where)} — {verdict(answer)}")
