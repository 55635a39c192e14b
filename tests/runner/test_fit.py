"""Laying a table out for a terminal's width: parts that repeat the labels, nothing broken."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from runner._fit import Column, fitted


def _new(i: int, parts: int) -> Table:
    return Table(title=f"part {i + 1} of {parts}")


def test_columns_that_do_not_fit_go_to_the_next_part_with_the_labels() -> None:
    columns = [Column("name", "left"), *(Column(f"figure number {k}") for k in range(12))]
    rows = [[f"row-{r}", *(f"{1000.5 * r + k:,.1f}" for k in range(12))] for r in range(3)]
    console = Console(file=io.StringIO(), width=80, record=True)
    tables = fitted(columns, rows, labels=1, width=80, console=console, new_table=_new)
    assert len(tables) > 1
    assert all(t.columns[0].header == "name" for t in tables)  # the label starts every part
    data = [c.header for t in tables for c in t.columns[1:]]
    assert data == [c.header for c in columns[1:]]  # each column once, in order
    for table in tables:
        console.print(table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    words = set(text.split())
    assert {cell for row in rows for cell in row} <= words  # every figure whole
    assert {"figure", "number", "11"} <= words  # headers wrap at their spaces only


def test_a_table_that_fits_is_one_part_with_every_line_whole() -> None:
    columns = [Column("name", "left"), Column("claim", "left", wraps=True), Column("n")]
    rows = [["a", "a claim long enough to wrap somewhere", "12,345"]]
    console = Console(file=io.StringIO(), width=200, record=True)
    (table,) = fitted(columns, rows, labels=1, width=200, console=console, new_table=_new)
    console.print(table)
    assert "a claim long enough to wrap somewhere" in console.export_text()
    narrow = Console(file=io.StringIO(), width=30, record=True)
    (table,) = fitted(columns, rows, labels=1, width=30, console=narrow, new_table=_new)
    narrow.print(table)
    text = narrow.export_text()
    assert max(len(line) for line in text.splitlines()) <= 30
    assert "12,345" in text and "somewhere" in text.split()  # prose wrapped at its spaces
