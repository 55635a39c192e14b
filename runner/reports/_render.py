"""A :class:`ReportTable` as a terminal table, Markdown, CSV or LaTeX."""

from __future__ import annotations

import csv
import io

from rich.table import Table

from runner.reports._tables import ReportTable

FORMATS = ("markdown", "csv", "latex")
SUFFIX = {"markdown": "md", "csv": "csv", "latex": "tex"}


def rich_table(table: ReportTable) -> Table:
    out = Table(title=table.title, caption="\n".join(table.notes) or None)
    for i, column in enumerate(table.columns):
        out.add_column(column, justify="left" if i < 2 else "right")
    for row in table.rows:
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
    lines = [f"**{table.title}**", "", _md_row(table.columns)]
    lines.append("|" + "|".join("---" for _ in table.columns) + "|")
    lines += [_md_row(r) for r in table.rows]
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
        *(" & ".join(_tex(v) for v in row) + r" \\" for row in table.rows),
        r"\bottomrule",
        r"\end{tabular}",
        *(rf"\par\footnotesize {_tex(n)}" for n in table.notes),
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _md_row(values: tuple[str, ...]) -> str:
    return "| " + " | ".join(v.replace("|", r"\|") for v in values) + " |"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "Δ": r"$\Delta$", "·": r"$\cdot$", "—": "---", "τ": r"$\tau$"}  # fmt: skip


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)
