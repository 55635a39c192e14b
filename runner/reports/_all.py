"""Every table of a GroundBench report, in the order the report prints them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from conditions import holds_box_set
from runner.reports._box_tables import load_box_report
from runner.reports._cohort_tables import cohort_tables
from runner.reports._data import ReportData, load_report_data
from runner.reports._findings import findings_table
from runner.reports._ranks import rank_stability_table
from runner.reports._robustness import (
    alternate_references_table,
    phase_audit_table,
    phase_claims_table,
)
from runner.reports._slices import subdivision_table
from runner.reports._tables import ReportTable, table1, table2, table3, table4, table5


def all_tables(data: ReportData) -> list[ReportTable]:
    """The paper's Tables 1–5, then the analyses its text rests on, then the cohort section
    (what the answers were asked about: the diagnostics of the paper's §3)."""
    return [
        table1(data),
        table2(data),
        table3(data),
        table4(data),
        table5(data),
        rank_stability_table(data),
        subdivision_table(data),
        phase_audit_table(data),
        phase_claims_table(data),
        alternate_references_table(data),
        findings_table(data),
        *cohort_tables(data),
    ]


@dataclass(frozen=True)
class StoreReport:
    """What a store reports: the tables with rows, those left out for having none, and the
    data they were read from (``None`` for a box benchmark's store, which has one table)."""

    shown: list[ReportTable]
    omitted: list[ReportTable]
    data: ReportData | None


def report_of(con: duckdb.DuckDBPyConnection, store: Path) -> StoreReport:
    """Every table of the store open on ``con``: a box benchmark's one table, or the grid's."""
    if holds_box_set(con):
        tables, data = [load_box_report(con, store).table()], None
    else:
        data = load_report_data(con, store)
        tables = all_tables(data)
    shown, omitted = shown_and_omitted(tables)
    return StoreReport(shown=shown, omitted=omitted, data=data)


def shown_and_omitted(tables: list[ReportTable]) -> tuple[list[ReportTable], list[ReportTable]]:
    """The tables with rows, and those left out for having none (Tables 2 and 3 of a
    base-only grid): an empty table printed or written would read as a result."""
    return [t for t in tables if t.rows], [t for t in tables if not t.rows]


def omitted_note(table: ReportTable) -> str:
    """The one line said in place of a table left out."""
    return f"{table.title}: omitted, {table.why_empty()}"
