"""Every table of a GroundBench report, in the order the report prints them."""

from __future__ import annotations

from runner.reports._data import ReportData
from runner.reports._tables import ReportTable, table1, table2, table3, table4, table5


def all_tables(data: ReportData) -> list[ReportTable]:
    """The paper's Tables 1–5, then the analyses its text rests on."""
    return [
        table1(data),
        table2(data),
        table3(data),
        table4(data),
        table5(data),
    ]
