"""Tables that fit a terminal's width without breaking a number or a word.

Rich fits a wide table into a narrow terminal by shrinking its widest columns, whatever they
hold, and folds what no longer fits: ``70.4 / 70.4`` became ``70.`` over ``4 /``, a header
``Config`` / ``uratio`` / ``n``. :func:`fitted` lays a table out itself instead: each column gets
at least its :class:`Span` minimum (its longest figure or name whole, its header's longest word,
a prose cell's longest word), and a table whose minimums do not fit is split into parts, each
repeating the row labels, the columns that do not fit going to the next part. Widths are then
set on every column, so rich never shrinks one below what it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, JustifyMethod, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

NewTable = Callable[[int, int], Table]
"""An empty table (title, box, caption) for part ``i`` of ``n``: :func:`fitted` adds columns."""


@dataclass(frozen=True)
class Column:
    """One column of a table to fit: its header, how it aligns, and whether its cells are
    prose that may wrap at their spaces (names and figures never wrap; headers wrap at their
    spaces only when the column is narrower than the whole header)."""

    header: str
    justify: JustifyMethod = "right"
    wraps: bool = False


@dataclass(frozen=True)
class Span:
    """A column's narrowest width that breaks nothing, and the width of its longest line."""

    minimum: int
    whole: int


def fitted(
    columns: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    labels: int,
    width: int,
    console: Console,
    new_table: NewTable,
) -> list[Table]:
    """The table as one part or more, each no wider than ``width``; the first ``labels``
    columns name the row and start every part. Only where a single label set and one column
    cannot fit even at their minimums is a part wider (rich folds it then)."""
    spans = [_span(c, [row[j] for row in rows], console) for j, c in enumerate(columns)]
    overheads: dict[int, int] = {}

    def overhead(n: int) -> int:
        if n not in overheads:
            overheads[n] = _overhead(new_table, n, console)
        return overheads[n]

    parts = _parts(spans, labels, width, overhead)
    tables = []
    for i, part in enumerate(parts):
        table = new_table(i, len(parts))
        room = width - overhead(len(part))
        for j, w in zip(part, _widths([spans[j] for j in part], room), strict=True):
            c = columns[j]
            table.add_column(c.header, justify=c.justify, width=w, overflow="fold")
        for row in rows:
            table.add_row(*(row[j] for j in part))
        tables.append(table)
    return tables


def whole_width(
    columns: Sequence[Column],
    rows: Sequence[Sequence[RenderableType]],
    console: Console,
    new_table: NewTable,
) -> int:
    """The width the table takes with every cell and header on one line."""
    spans = [_span(c, [row[j] for row in rows], console) for j, c in enumerate(columns)]
    return sum(s.whole for s in spans) + _overhead(new_table, len(columns), console)


def _parts(
    spans: Sequence[Span], labels: int, width: int, overhead: Callable[[int], int]
) -> list[list[int]]:
    """Column indices per part: all in one where every column fits whole, else as many
    columns per part as fit at their minimums, in order."""
    everything = list(range(len(spans)))
    if sum(s.whole for s in spans) + overhead(len(spans)) <= width:
        return [everything]
    head = everything[:labels]
    parts: list[list[int]] = []
    current: list[int] = []
    for j in everything[labels:]:
        trial = [*head, *current, j]
        if current and sum(spans[k].minimum for k in trial) + overhead(len(trial)) > width:
            parts.append([*head, *current])
            current = []
        current.append(j)
    parts.append([*head, *current])
    return parts


def _widths(spans: Sequence[Span], room: int) -> list[int]:
    """Every column whole if all fit ``room``; else each its minimum plus a share of what is
    left by how much more it wants."""
    if sum(s.whole for s in spans) <= room:
        return [s.whole for s in spans]
    spare = room - sum(s.minimum for s in spans)
    wanted = [s.whole - s.minimum for s in spans]
    if spare <= 0 or not sum(wanted):
        return [s.minimum for s in spans]
    return [
        s.minimum + spare * extra // sum(wanted) for s, extra in zip(spans, wanted, strict=True)
    ]


def _span(column: Column, cells: Sequence[RenderableType], console: Console) -> Span:
    spans = [_text_span(column.header, wraps=True)]
    for cell in cells:
        if isinstance(cell, str | Text):
            spans.append(_text_span(cell if isinstance(cell, str) else cell.plain, column.wraps))
        else:  # a progress bar: its own measure
            m = Measurement.get(console, console.options, cell)
            spans.append(Span(m.minimum, m.maximum))
    return Span(max(s.minimum for s in spans), max(s.whole for s in spans))


def _text_span(text: str, wraps: bool) -> Span:
    lines = text.splitlines() or [""]
    whole = max(cell_len(line) for line in lines)
    if not wraps:
        return Span(whole, whole)
    return Span(max((cell_len(word) for word in text.split()), default=0), whole)


def _overhead(new_table: NewTable, columns: int, console: Console) -> int:
    """What rules and padding add to the columns' widths in a table of ``columns`` columns."""
    probe = new_table(0, 1)
    for _ in range(columns):
        probe.add_column(width=1)
    wide = console.options.update_width(100_000)
    return Measurement.get(console, wide, probe).maximum - columns
