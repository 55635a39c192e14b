"""The cohort's terminal tables (``cohort build``, ``cohort summary``) at common widths."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from conditions import Cohort, SourceReport
from runner._tables import print_whole, report_table, summary_tables

_RULES = re.compile(r"[\s\u2500-\u257f]+")


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_cohort_tables_fit_and_break_no_word(small_cohort: Cohort, width: int) -> None:
    """Every line within the terminal, nothing cut to "…", every word printed one of the
    tables' own: large counts and long reasons of ineligibility included."""
    reasons = {"crowd": 12_345, "too small": 6_789, "no sentence": 3, "multi-part": 1_024}
    reports = [
        SourceReport(source=s, asked=500, selected=500, eligible=123_456, image_taken=7_890,
                     ineligible=reasons)
        for s in ("refcoco", "refcoco+", "refcocog")
    ]  # fmt: skip
    console = Console(file=io.StringIO(), width=width, force_terminal=True, record=True)
    for table in [report_table(reports), *summary_tables(small_cohort)]:
        print_whole(console, table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    wide = Console(file=io.StringIO(), width=1_000, record=True)  # every cell on one line
    for table in [report_table(reports), *summary_tables(small_cohort)]:
        wide.print(table)
    words = {w for w in _RULES.split(wide.export_text()) if w}
    assert {w for w in _RULES.split(text) if w} <= words
