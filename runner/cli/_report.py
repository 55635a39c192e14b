"""``groundbench report``: the paper's tables, analyses and figures from a store, printed, and
with ``--out`` and ``--html`` written as files (:func:`runner.reports.write_report_files`) and
as a web page (:func:`runner.pages.write_html_report`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import Progress

from runner.cli._app import app
from runner.cli._common import RunStoreArgument, console, say_snapshot, snapshot_of_run, store_given

if TYPE_CHECKING:
    from runner.store import Reading


@app.command()
def report(
    store: RunStoreArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write every table as Markdown, CSV (one number a column; missing: an "
            "empty cell) and LaTeX, every cell's figures as results.csv and results.parquet, "
            "and the figures as PNG (300 dpi), PDF and SVG."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write the report as HTML into this folder: index.html (every table, "
            "the figures, galleries of each cell's answers drawn over their images) and a page "
            "per question under q/ with all its attempts side by side. Self-contained: open "
            "index.html from disk, nothing is fetched.",
        ),
    ] = None,
    images: Annotated[
        Path | None,
        typer.Option(
            help="The cohort's images folder for --html [default: the one the store's last "
            "run used]."
        ),
    ] = None,
) -> None:
    """The paper's Tables 1–5 from a store (incomplete cells marked *), the analyses behind
    its text (rank stability, the subdivision slice, the phase audit, alternate references,
    the §4 findings as verdicts) and its figures; for a box benchmark's store, that
    benchmark's main table. A table with no rows is left out with a line saying why. With
    --html, all of it as a web page too, with every answer drawn over its image.

    Nothing printed is cut: on a terminal a table too wide is split (fixed and parseable-only
    apart, then parts that repeat the row labels), never a number or a word; piped or
    redirected, each table is drawn at its own width (rows whole up to 240 characters, long
    prose wrapped at spaces beyond)."""
    from runner._output import check_folder, writing_into
    from runner._tables import print_whole
    from runner.reports import fitting_table, omitted_note, report_of, write_report_files
    from runner.store import reading

    store = store_given(store)
    for folder, option in ((html, "--html"), (out, "--out")):
        if folder is not None:  # refused now, not after every table is printed
            check_folder(folder, option)
    with reading(store, snapshot_of_run) as source:
        say_snapshot(source)
        with source.open() as con:
            made = report_of(con, store)
        for table in made.shown:
            print_whole(console, fitting_table(table, console))
        for table in made.omitted:
            console.print(
                omitted_note(table),
                soft_wrap=not console.is_terminal, markup=False, highlight=False,
            )  # fmt: skip
        if html is not None:
            _write_html(store, html, images, source)
    if out is None:
        return
    with writing_into(out, "--out"):
        written = write_report_files(out, tables=made.shown, omitted=made.omitted, data=made.data)
    tidy = written.results
    console.print(
        f"wrote {written.table_files} table files, {len(written.figures)} figure files"
        + (f" and {' and '.join(p.name for p in tidy)} (every cell, long format)" if tidy else "")
        + f" to {out}",
        soft_wrap=True,
    )


def _write_html(store: Path, out: Path, images: Path | None, source: Reading) -> None:
    """The HTML report, with a progress bar over its question pages on a terminal; one line
    saying what it wrote, how big and how long."""
    from runner._output import writing_into
    from runner.pages import write_html_report

    started = time.monotonic()
    with writing_into(out, "--html"):
        if console.is_terminal:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task("question pages", total=None)
                done = write_html_report(
                    store, out, images=images, reading=source,
                    progress=lambda k, total: bar.update(task, completed=k, total=total),
                )  # fmt: skip
        else:
            done = write_html_report(store, out, images=images, reading=source)
    console.print(
        f"wrote the HTML report to {done.index}: {done.question_pages:,} question pages, "
        f"{done.answers:,} answers, {done.bytes / 1e6:.1f} MB in "
        f"{time.monotonic() - started:.1f} s",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
