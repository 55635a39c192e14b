"""``groundbench show``: one stored answer drawn over its image (:mod:`runner.overlays`)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner.cli._app import app
from runner.cli._common import StoreArgument, console, say_snapshot, snapshot_of_run, store_given

if TYPE_CHECKING:
    from runner.overlays import AnswerView


@app.command()
def show(
    store: StoreArgument,
    qid: Annotated[str, typer.Argument(help="The question, as the cohort names it.")],
    configuration: Annotated[
        str | None, typer.Option(help="The configuration [default: the only one stored for QID].")
    ] = None,
    condition: Annotated[str, typer.Option(help="The condition, e.g. no-image.")] = "base",
    budget: Annotated[
        int | None,
        typer.Option(help="N, or 0 for the box question [default: the only one stored]."),
    ] = None,
    attempt: Annotated[
        int | None, typer.Option(help="The stored attempt [default: the last].")
    ] = None,
    control: Annotated[
        int | None,
        typer.Option(
            help="Draw the box answer (budget 0) with its box-derived control for this N, and G_N."
        ),
    ] = None,
    images: Annotated[
        Path | None,
        typer.Option(help="The images folder [default: the one the store's last run used]."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="The file to write: .png (300 dpi), .svg or .pdf "
            "[default: QID-CONFIGURATION-CONDITION-N-aATTEMPT.png here]."
        ),
    ] = None,
) -> None:
    """Draw one stored answer over its image as the model saw it (its condition's variant):
    the target G_N, the selected source part and the distractors, the answer as scored
    (mapped from 0-999, filled even-odd, vertices numbered, crossings and duplicate vertices
    marked), a legend and a caption with the expression, hint, scores and defect. A missing
    or changed image file is named in the caption."""
    from conditions import BOX
    from runner._output import check_folder
    from runner.overlays import (
        NO_BREAK,
        OverlayError,
        Pictures,
        Selection,
        draw_overlay,
        pick_answer,
        read_answers,
        read_question,
        recorded_images,
        result,
        save_overlay,
    )
    from runner.store import reading

    if control is not None and budget not in (None, BOX):
        raise OverlayError(f"--control draws a box answer's control: pass --budget {BOX} or none")
    budget = BOX if control is not None else budget
    store = store_given(store)
    check_folder(out.parent if out is not None else Path(), "--out", file=True)  # before drawing
    with reading(store, snapshot_of_run) as source:
        say_snapshot(source)
        with source.open() as con, tempfile.TemporaryDirectory() as cache:
            question = read_question(con, qid)
            pictures = Pictures(images or recorded_images(con), Path(cache))
            answers = read_answers(con, question, pictures)
            selection = Selection(configuration, condition, budget, attempt)
            answer = pick_answer(answers, selection, qid)
            figure = draw_overlay(question, answer, control=control)
    path = save_overlay(figure, out or Path(_overlay_name(answer)))
    console.print(f"wrote {path}", soft_wrap=True, markup=False, highlight=False)
    scores = result(answer, control=control).replace(NO_BREAK, " ")  # a terminal wraps anyway
    console.print(scores, soft_wrap=True, markup=False, highlight=False)


def _overlay_name(answer: AnswerView) -> str:
    """``qid-configuration-condition-budget-aAttempt.png``, safe as a file name."""
    parts = (answer.qid, answer.configuration, answer.condition, str(answer.budget))
    stem = "-".join(re.sub(r"[^\w.-]+", "_", part) for part in parts)
    return f"{stem}-a{answer.attempt}.png"
