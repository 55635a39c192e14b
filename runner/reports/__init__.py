"""The paper's tables and figures from an experiment's store.

Plain Python over the store's views and the ``scoring`` package: :func:`load_report_data`
reads the ``iou2`` and best-effort views back as scores, :func:`all_tables` builds Tables 1–5
and the audits behind the text (the eight-phase audit and the alternate references, from the
re-scored answers: :func:`phase_audit_figures`, :func:`alternate_reference_figures`),
:func:`render` writes one as Markdown, CSV (:func:`csv_columns`: one number a column) or LaTeX
(:func:`render_html`: as HTML, for the HTML report),
:func:`write_results` every cell's figures as one tidy long table (CSV and Parquet), and
:func:`write_figures` draws the figures (Figure 1, target construction, from the cohort
:func:`load_report_data` reads with the scores: :class:`StoredCohort`; the cohort section's
tables are :func:`cohort_tables`).
The rank-stability and subdivision-only analyses are plain values too (:func:`rank_stability`,
:func:`subdivision_contrasts`), and :func:`findings` states the paper's §4 claims as verdicts
from all of them. :func:`report_of` is every table of a store (a box benchmark's one, or the
grid's), and :func:`write_report_files` writes the tables, figures and results as files.
"""

from runner.reports._all import (
    StoreReport,
    all_tables,
    omitted_note,
    report_of,
    shown_and_omitted,
)
from runner.reports._box_tables import BoxReport, BoxRun, box_benchmark_table, load_box_report
from runner.reports._cohort import (
    Allowance,
    Example,
    LongestAnswer,
    PartShare,
    PartStatistics,
    Shape,
    StoredCohort,
    example_qid,
    part_share,
    part_statistics,
)
from runner.reports._cohort_tables import cohort_tables, parts_table, slices_table, targets_table
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
from runner.reports._files import ReportFiles, write_report_files
from runner.reports._findings import Finding, findings, findings_table
from runner.reports._ranks import (
    RANK_METRICS,
    BudgetOrdering,
    RankStability,
    rank_stability,
    rank_stability_table,
)
from runner.reports._render import (
    FORMATS,
    SUFFIX,
    CsvColumn,
    csv_columns,
    fitting_table,
    render,
    render_html,
    rich_table,
)
from runner.reports._results import Result, results, write_results
from runner.reports._robustness import (
    AlternateReferences,
    PhaseAudit,
    PhaseCell,
    PhaseOrdering,
    PhaseReversal,
    ReferenceMeans,
    Shift,
    Unscored,
    alternate_reference_figures,
    alternate_references_table,
    fixed_iou,
    phase_audit_figures,
    phase_audit_table,
    phase_claims_table,
)
from runner.reports._slices import (
    BudgetContrast,
    SubdivisionContrast,
    subdivision_contrast,
    subdivision_contrasts,
    subdivision_table,
)
from runner.reports._tables import (
    Mark,
    ReportTable,
    best_and_second,
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
    "RANK_METRICS",
    "SUFFIX",
    "Allowance",
    "AlternateReferences",
    "BoxReport",
    "BoxRun",
    "BudgetContrast",
    "BudgetOrdering",
    "Cell",
    "CsvColumn",
    "Example",
    "Finding",
    "LongestAnswer",
    "Mark",
    "PartShare",
    "PartStatistics",
    "PhaseAudit",
    "PhaseCell",
    "PhaseOrdering",
    "PhaseReversal",
    "Question",
    "RankStability",
    "ReferenceMeans",
    "ReportData",
    "ReportFiles",
    "ReportTable",
    "Rescored",
    "Result",
    "Shape",
    "Shift",
    "StoreReport",
    "StoredCohort",
    "SubdivisionContrast",
    "Unscored",
    "ViewScores",
    "all_tables",
    "alternate_reference_figures",
    "alternate_references_table",
    "best_and_second",
    "box_benchmark_table",
    "cohort_tables",
    "csv_columns",
    "example_qid",
    "findings",
    "findings_table",
    "fitting_table",
    "fixed_iou",
    "load_box_report",
    "load_report_data",
    "omitted_note",
    "part_share",
    "part_statistics",
    "parts_table",
    "phase_audit_figures",
    "phase_audit_table",
    "phase_claims_table",
    "rank_stability",
    "rank_stability_table",
    "render",
    "render_html",
    "report_of",
    "results",
    "rich_table",
    "shown_and_omitted",
    "slices_table",
    "subdivision_contrast",
    "subdivision_contrasts",
    "subdivision_table",
    "table1",
    "table2",
    "table3",
    "table4",
    "table5",
    "targets_table",
    "write_figures",
    "write_report_files",
    "write_results",
]
