"""A :class:`ReportTable` as a terminal table, Markdown, CSV or LaTeX."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import TypeVar

from rich.table import Table
from rich.text import Text

from runner.reports._tables import Mark, ReportTable

T = TypeVar("T")

FORMATS = ("markdown", "csv", "latex")
SUFFIX = {"markdown": "md", "csv": "csv", "latex": "tex"}


def rich_table(table: ReportTable) -> Table:
    """``table`` for a terminal: a cell that does not fit folds onto a second line rather than
    end in ``…`` (names like ``cue-colour-true`` and ``-wrong`` would otherwise read alike)."""
    out = Table(title=table.title, caption="\n".join(table.notes) or None)
    for i, column in enumerate(table.columns):
        out.add_column(column, justify="left" if i < 2 else "right", overflow="fold")
    for row in _styled(table, _rich_cell):
        out.add_row(*row)
    return out


def render(table: ReportTable, kind: str) -> str:
    """``table`` as text of one of :data:`FORMATS`."""
    if kind == "markdown":
        return markdown(table)
    if kind == "csv":
        return csv_text(table)
    if kind == "latex":
        return latex(table)
    raise ValueError(f"unknown format {kind!r}; known: {', '.join(FORMATS)}")


def markdown(table: ReportTable) -> str:
    lines = [f"**{table.title}**", "", _md_row([_md_escape(c) for c in table.columns])]
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    lines += [_md_row(r) for r in _styled(table, _md_cell)]
    lines += [""] + [f"_{n}_" for n in table.notes]
    return "\n".join(lines).rstrip() + "\n"


def csv_text(table: ReportTable) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows(table.rows)
    return out.getvalue()


def latex(table: ReportTable) -> str:
    spec = "ll" + "r" * (len(table.columns) - 2)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{_tex(table.title)}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(_tex(c) for c in table.columns) + r" \\",
        r"\midrule",
        *(" & ".join(row) + r" \\" for row in _styled(table, _tex_cell)),
        r"\bottomrule",
        r"\end{tabular}",
        *(rf"\par\footnotesize {_tex(n)}" for n in table.notes),
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _styled(table: ReportTable, cell: Callable[[str, Mark | None], T]) -> list[list[T]]:
    """Every row's cells through one format's ``cell``, which escapes a value and styles it by
    its mark: the one place a renderer meets :attr:`ReportTable.marks`."""
    return [
        [cell(value, table.marks.get((i, j))) for j, value in enumerate(row)]
        for i, row in enumerate(table.rows)
    ]


_RICH_STYLE = {"best": "bold", "second": "underline"}
_MD_STYLE = {None: "{}", "best": "**{}**", "second": "<u>{}</u>"}
_TEX_STYLE = {None: "{}", "best": r"\textbf{{{}}}", "second": r"\underline{{{}}}"}


def _rich_cell(value: str, mark: Mark | None) -> str | Text:
    # A Text, not markup: cells hold brackets ("[95% CI]") that rich would read as tags.
    return value if mark is None else Text(value, style=_RICH_STYLE[mark])


def _md_cell(value: str, mark: Mark | None) -> str:
    return _MD_STYLE[mark].format(_md_escape(value))


def _tex_cell(value: str, mark: Mark | None) -> str:
    return _TEX_STYLE[mark].format(_tex(value))


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_escape(value: str) -> str:
    return value.replace("|", r"\|")


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "Δ": r"$\Delta$", "·": r"$\cdot$", "—": "---", "τ": r"$\tau$", "≤": r"$\leq$",
        "−": r"$-$", "<": r"$<$", ">": r"$>$"}  # fmt: skip


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)
