"""A report's files, as ``groundbench report --out`` writes them: every table shown in each of
:data:`FORMATS` (Markdown, CSV, LaTeX), the figures, and every cell's figures as one long table.

A table left out this time (it has no rows) has its files from an earlier report removed: left
there, they would read as this store's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner._output import write_whole
from runner.reports._data import ReportData
from runner.reports._figures import write_figures
from runner.reports._render import FORMATS, SUFFIX, render
from runner.reports._results import write_results
from runner.reports._tables import ReportTable


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_report_files` wrote."""

    table_files: int  # every table shown, once per format
    figures: list[Path]
    results: list[Path]  # every cell's figures, long format (none for a box benchmark's store)


def write_report_files(
    out: Path,
    *,
    tables: Sequence[ReportTable],
    omitted: Sequence[ReportTable],
    data: ReportData | None,
) -> ReportFiles:
    """Write ``tables`` in every format, and with ``data`` (a cohort's store; ``None`` for a
    box benchmark's) the figures and the results, into ``out`` (made if missing); remove the
    ``omitted`` tables' files. The caller holds ``out`` (:func:`runner._output.writing_into`)."""
    out.mkdir(parents=True, exist_ok=True)
    for table in omitted:
        for kind in FORMATS:
            (out / f"{table.name}.{SUFFIX[kind]}").unlink(missing_ok=True)
    for table in tables:
        for kind in FORMATS:
            write_whole(out / f"{table.name}.{SUFFIX[kind]}", render(table, kind))
    figures = write_figures(data, out) if data is not None else []
    results = write_results(data, out) if data is not None else []
    return ReportFiles(table_files=len(tables) * len(FORMATS), figures=figures, results=results)
