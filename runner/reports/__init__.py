"""The paper's tables and figures from an experiment's store.

Plain Python over the store's views and the ``scoring`` package: :func:`load_report_data`
reads the ``iou2`` and best-effort views back as scores, :func:`all_tables` builds Tables 1–5,
:func:`render` writes one as Markdown, CSV or LaTeX, :func:`write_figures` draws the PNGs.
"""

from runner.reports._all import all_tables
from runner.reports._box_tables import BoxReport, BoxRun, box_benchmark_table, load_box_report
from runner.reports._data import (
    ALTERNATE_REFERENCES,
    PHASE_REFERENCES,
    Cell,
    Question,
    ReportData,
    Rescored,
    ViewScores,
    load_report_data,
)
from runner.reports._figures import write_figures
from runner.reports._render import FORMATS, SUFFIX, render, rich_table
from runner.reports._tables import (
    ReportTable,
    table1,
    table2,
    table3,
    table4,
    table5,
)

__all__ = [
    "ALTERNATE_REFERENCES",
    "FORMATS",
    "PHASE_REFERENCES",
    "SUFFIX",
    "BoxReport",
    "BoxRun",
    "Cell",
    "Question",
    "ReportData",
    "ReportTable",
    "Rescored",
    "ViewScores",
    "all_tables",
    "box_benchmark_table",
    "load_box_report",
    "load_report_data",
    "render",
    "rich_table",
    "table1",
    "table2",
    "table3",
    "table4",
    "table5",
    "write_figures",
]
