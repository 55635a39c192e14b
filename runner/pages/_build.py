"""The HTML report of a store: ``index.html`` (tables, figures, galleries) and one page per
question under ``q/``, every page self-contained (styles, script and images inline; nothing
fetched), opened from disk.

One pass over the store's questions writes each question's page and, for the questions the
galleries hold, their thumbnails; each image is encoded once per (question, variant) and page
size, and every overlay of it on a page uses that one copy.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from conditions import has_table, holds_box_set
from runner.overlays._read import Pictures, iter_questions, recorded_images
from runner.overlays._scene import AnswerView, QuestionView
from runner.pages._figures import figure_svgs
from runner.pages._folder import INDEX, QUESTIONS, ReportFolder
from runner.pages._galleries import Gallery, galleries
from runner.pages._html import page_name, write_atomic
from runner.pages._index import IndexContent, Thumbnails, index_page
from runner.pages._question import question_page
from runner.pages._thumbnails import ThumbnailMaker
from runner.reports import (
    ReportTable,
    all_tables,
    load_box_report,
    load_report_data,
    shown_and_omitted,
)
from runner.store import Reading

GALLERY_SIZE = 48  # answers a gallery shows at most: two pages of the index's pager


@dataclass(frozen=True)
class HtmlReport:
    """What :func:`write_html_report` wrote.

    Attributes
    ----------
    index
        The report's page, ``<out>/index.html``.
    question_pages
        Question pages written under ``<out>/q/``.
    answers
        Stored attempts drawn on them.
    bytes
        The report's files' total size once written (the folder's other files not counted).
    """

    index: Path
    question_pages: int
    answers: int
    bytes: int


def write_html_report(
    store: Path,
    out: Path,
    *,
    images: Path | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    reading: Reading | None = None,
) -> HtmlReport:
    """Write the store's HTML report into the folder ``out``.

    Parameters
    ----------
    store
        The experiment's DuckDB file, opened read-only.
    out
        The report's folder (made if missing). It writes ``index.html`` and ``q/<qid>.html``
        there and nothing else but its record of them (:mod:`._folder`): a rebuild removes
        the pages it wrote of questions this store does not hold, and never writes over or
        removes a file it did not write. Every page is written whole or not at all.
    images
        The folder of the cohort's images (default: the one the store's last run used).
    seed
        The galleries' random sample.
    progress
        Called with (questions done, questions in all) after each question's page.
    reading
        The file to read, where not ``store`` itself: a snapshot of it while a run holds it
        (:func:`runner.store.reading`); the report still names ``store``.

    Raises
    ------
    StoreError
        The store cannot be opened.
    FolderTaken
        A file the report would write is in ``out`` and the report did not write it:
        nothing is written.
    """
    pages = out / QUESTIONS
    written: dict[str, int] = {}  # each question page written, with its count of attempts
    with (reading or Reading(store)).open() as con:
        box = holds_box_set(con)
        folder = ReportFolder.claim(out, [] if box else _page_names(con))
        try:
            if box:
                tables = [load_box_report(con, store).table()]
                content = _content(store, tables, [], None, Thumbnails([], {}, []), [], seed, 0)
            else:
                content = _grounding_report(con, store, pages, images, seed, progress, written)
        except BaseException:
            folder.keep(written)  # the pages written so far are the report's
            raise
    index = out / INDEX
    write_atomic(index, index_page(content))
    folder.finish(written)
    return HtmlReport(index, len(written), sum(written.values()), folder.size(written))


def _grounding_report(
    con: duckdb.DuckDBPyConnection,
    store: Path,
    pages: Path,
    images: Path | None,
    seed: int,
    progress: Callable[[int, int], None] | None,
    written: dict[str, int],
) -> IndexContent:
    """A GroundBench store's index content, its question pages written on the way, each
    named in ``written`` with its count of attempts as it is written."""
    data = load_report_data(con, store)
    shown = galleries(con, seed=seed, size=GALLERY_SIZE)
    thumbnails = ThumbnailMaker(shown)
    total = _count(con, "SELECT count(*) FROM questions")
    listed: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="groundbench-variants-") as cache:
        pictures = Pictures(images if images is not None else recorded_images(con), Path(cache))
        for question, answers in iter_questions(con, pictures):
            _write_question(pages, question, answers, pictures)
            thumbnails.add(question, answers)
            written[page_name(question.qid)] = len(answers)
            listed.append((question.qid, question.expression))
            if progress is not None:
                progress(len(written), total)
    content = _content(store, all_tables(data), figure_svgs(data), shown, thumbnails.made(),
                       listed, seed, sum(written.values()))  # fmt: skip
    return content


def _write_question(
    pages: Path, question: QuestionView, answers: Sequence[AnswerView], pictures: Pictures
) -> None:
    full = pictures.picture(question, "full")
    write_atomic(pages / page_name(question.qid), question_page(question, answers, full))


def _content(
    store: Path,
    tables: list[ReportTable],
    figures: list[tuple[str, str]],
    shown: Sequence[Gallery] | None,
    thumbnails: Thumbnails,
    questions: list[tuple[str, str]],
    seed: int,
    answers: int,
) -> IndexContent:
    kept, omitted = shown_and_omitted(tables)
    summary = (
        f"{len(questions):,} questions, {answers:,} stored attempts"
        if shown is not None
        else "A box benchmark's store: its main table."
    )
    return IndexContent(
        title=f"GroundBench report: {store.name}",
        summary=summary,
        tables=kept,
        omitted=omitted,
        figures=figures,
        galleries=shown,
        thumbnails=thumbnails,
        questions=questions,
        seed=seed,
    )


def _page_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The question pages a build of this store writes (none where it holds no cohort: the
    build says so)."""
    if not has_table(con, "questions"):
        return []
    return [page_name(qid) for (qid,) in con.execute("SELECT qid FROM questions").fetchall()]


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row is not None else 0
