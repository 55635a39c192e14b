"""A :class:`ReportTable` as a terminal table, Markdown, CSV, LaTeX or an HTML fragment."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from html import escape
from typing import Literal, TypeVar

from rich.console import Console, ConsoleOptions, JustifyMethod, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from runner._fit import Column, NewTable, fitted, whole_width
from runner._tables import PIPED_WIDTH
from runner.reports._tables import INCOMPLETE, Mark, ReportTable

T = TypeVar("T")

FORMATS = ("markdown", "csv", "latex")
SUFFIX = {"markdown": "md", "csv": "csv", "latex": "tex"}


def rich_table(table: ReportTable) -> Table:
    """``table`` for a terminal: a cell that does not fit wraps at its spaces, no column
    narrower than its longest word, and a word that does not fit even so folds onto a second
    line rather than end in ``…`` (names like ``cue-colour-true`` and ``-wrong`` would
    otherwise read alike)."""
    out = Table(title=table.title, caption="\n".join(table.notes) or None)
    for i, column in enumerate(table.columns):
        out.add_column(column, justify="left" if i < 2 else "right", overflow="fold",
                       min_width=_longest_word(column, [row[i] for row in table.rows]))  # fmt: skip
    for row in _styled(table, _rich_cell):
        out.add_row(*row)
    return out


def _longest_word(header: str, cells: list[str]) -> int:
    """The column's longest word (header or cell, ``*`` included): rich may wrap a cell at its
    spaces but never narrows the column below this, so a word folds only where it alone is
    wider than the console (a table wider than ``print_whole``'s 240 characters, Table 1's 18
    columns, had ``Configurati`` over ``on``)."""
    return max((len(word) for text in (header, *cells) for word in text.split()), default=1)


def fitting_table(table: ReportTable, console: Console) -> RenderableType:
    """``table`` for ``console``: on a terminal, laid out to its width when printed
    (:func:`terminal_tables`); not on a terminal, :func:`rich_table` whole, which
    ``print_whole`` draws at the table's own width (rows whole) — unless its rows of
    ``fixed / parseable`` pairs are wider than :data:`PIPED_WIDTH` on one line: then laid out
    at that width as on a terminal (rich would fold its headers, ``Configurati`` / ``on``)."""
    if console.is_terminal or _pairs_too_wide(table, console):
        return _Terminal(table)
    return rich_table(table)


def _pairs_too_wide(table: ReportTable, console: Console) -> bool:
    """Whether ``table`` has ``fixed / parseable`` pairs to take apart and its rows, on one
    line each, are wider than a piped table is drawn (Table 1's 18 columns); a wide table of
    prose (the findings) is left to wrap at its spaces."""
    if fixed_and_parseable(table) is None:
        return False
    rows = _styled(table, _rich_cell)
    return whole_width(_fit_columns(table), rows, console, _part_table(table.title)) > PIPED_WIDTH


@dataclass(frozen=True)
class _Terminal:
    """A table laid out for the width it is printed at."""

    table: ReportTable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from terminal_tables(self.table, console, options.max_width)


def terminal_tables(table: ReportTable, console: Console, width: int) -> list[RenderableType]:
    """``table`` no wider than ``width`` without a number or a word broken across lines.

    As one table where every cell fits on one line; else the ``fixed / parseable`` pairs as
    two tables (fixed, then parseable-only), and a table still too wide in parts that each
    repeat the row labels (Configuration, N), the columns that do not fit going to the next
    part. The notes follow the last part, at the full width.
    """
    views = [table]
    columns, rows = _fit_columns(table), _styled(table, _rich_cell)
    if whole_width(columns, rows, console, _part_table(table.title)) > width:
        views = fixed_and_parseable(table) or views
    out: list[RenderableType] = []
    for view in views:
        out += fitted(
            _fit_columns(view),
            _styled(view, _rich_cell),
            labels=_labels(view),
            width=width,
            console=console,
            new_table=_part_table(view.title),
        )
    out += [Text(note, overflow="fold") for note in table.notes]
    return out


def _part_table(title: str) -> NewTable:
    def new(i: int, parts: int) -> Table:
        return Table(title=title if i == 0 else f"{title} (continued)")

    return new


def _labels(table: ReportTable) -> int:
    """The columns that name a row (and are repeated in each part): the table's first
    :attr:`~ReportTable.label_columns`, a figure column at least left after them."""
    return min(table.label_columns, len(table.columns) - 1) if len(table.columns) > 1 else 1


def _fit_columns(table: ReportTable) -> list[Column]:
    """Labels left; figures right, never wrapped; a column of prose (a cell of :data:`PROSE`
    characters or more that is not a figure: claims, orderings, verdicts) left, wrapped at
    its spaces."""
    labels = _labels(table)
    out = []
    for j, name in enumerate(table.columns):
        cells = [row[j].removesuffix(INCOMPLETE) for row in table.rows]
        prose = any(len(c) >= PROSE and not _is_figure(c) for c in cells)
        justify: JustifyMethod = "left" if j < labels or prose else "right"
        out.append(Column(name, justify, wraps=prose))
    return out


def _is_figure(cell: str) -> bool:
    return any(pattern.fullmatch(cell) for pattern, _ in _SHAPES)


def fixed_and_parseable(table: ReportTable) -> list[ReportTable] | None:
    """``table``'s ``fixed / parseable`` columns taken apart: the table with each pair's fixed
    value (its other columns and its marks, which rank the fixed value, kept), and the row
    labels with each pair's parseable-only value. ``None`` without such a column."""
    labels = _labels(table)
    pairs = [j for j in range(labels, len(table.columns)) if _all_pairs(table, j)]
    if not pairs:
        return None

    def value(cell: str, group: int) -> str:
        found = _PAIR.fullmatch(cell.removesuffix(INCOMPLETE))
        if found is None:  # a missing value (—)
            return cell
        return found[group] + (INCOMPLETE if cell.endswith(INCOMPLETE) else "")

    fixed_rows = tuple(
        tuple(value(c, 1) if j in pairs else c for j, c in enumerate(row)) for row in table.rows
    )
    kept = [*range(labels), *pairs]
    parseable_rows = tuple(
        tuple(value(row[j], 2) if j in pairs else row[j] for j in kept) for row in table.rows
    )
    return [
        replace(table, title=f"{table.title} — fixed", rows=fixed_rows),
        replace(
            table,
            title=f"{table.title} — parseable-only",
            columns=tuple(table.columns[j] for j in kept),
            rows=parseable_rows,
            marks={},
        ),
    ]


def _all_pairs(table: ReportTable, j: int) -> bool:
    present = [r[j].removesuffix(INCOMPLETE) for r in table.rows if r[j] not in ("", "—")]
    return bool(present) and all(_PAIR.fullmatch(c) for c in present)


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


def render_html(table: ReportTable) -> str:
    """``table`` as an HTML fragment for the HTML report: a ``<table>`` with its title as
    caption, names left and figures right, a best cell bold and a second one underlined, an
    incomplete cell (``*``) shaded and titled, its notes in a list below. Every text escaped."""
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join(f"<tr>{''.join(row)}</tr>" for row in _styled_at(table, _html_cell))
    notes = "".join(f"<li>{escape(n)}</li>" for n in table.notes)
    return (
        f'<div class="scroll" id="table-{escape(table.name)}"><table>'
        f"<caption>{escape(table.title)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
        + (f'<ul class="notes">{notes}</ul>' if notes else "")
    )


def csv_text(table: ReportTable) -> str:
    """``table`` for analysis: one value per column (see :func:`csv_columns`), a missing value
    an empty cell."""
    columns = csv_columns(table)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in columns])
    writer.writerows([c.values[i] for c in columns] for i in range(len(table.rows)))
    return out.getvalue()


@dataclass(frozen=True)
class CsvColumn:
    """One column of a table's CSV: ``kind`` says what its values are ("number": every
    value parses as a float, or is empty where missing; "flag": true/false; "text")."""

    name: str
    kind: Literal["number", "flag", "text"]
    values: tuple[str, ...]


_NUM = r"[+-]?\d+(?:\.\d+)?|—"  # "—" is a value the table has none for
_SHAPES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(rf"({_NUM}) \[({_NUM}), ({_NUM})\]"), ("estimate", "low", "high")),
    (re.compile(rf"({_NUM}) / ({_NUM})"), ("fixed", "parseable")),
    (re.compile(r"(\d+)(?:/(\d+))?"), ("", "total")),  # settled (of all) a cell's questions
    (re.compile(rf"({_NUM})"), ("",)),
)
_PAIR = _SHAPES[1][0]  # fixed / parseable
_INTERVAL = re.compile(r"\s*\[95% CI\]")


def csv_columns(table: ReportTable) -> list[CsvColumn]:
    """The table's columns with each printed figure taken apart: ``78.9 / 78.9`` becomes
    ``IoU_fixed`` and ``IoU_parseable``; ``-61.7 [-70.5, -51.9]`` becomes ``Δ_estimate``,
    ``Δ_low`` and ``Δ_high`` (the 95% interval); ``5/8*`` becomes ``Questions`` and
    ``Questions_total``; the ``*`` of an incomplete cell a ``…_incomplete`` flag column; a
    column mixing numbers and words (Table 1's N: budgets and Pooled) a number column and a
    ``…_label`` one. Missing (``—``) is an empty cell."""
    out: list[CsvColumn] = []
    for j, name in enumerate(table.columns):
        out += _split(name, [row[j] for row in table.rows])
    return out


def _split(name: str, cells: list[str]) -> list[CsvColumn]:
    flags = [c.endswith(INCOMPLETE) for c in cells]
    bare = [c.removesuffix(INCOMPLETE) for c in cells]
    present = [c for c in bare if c not in ("", "—")]
    columns = _as_numbers(_INTERVAL.sub("", name), bare, present) if present else None
    if columns is None:
        return [CsvColumn(name, "text", tuple(cells))]
    if any(flags):
        columns.append(
            CsvColumn(f"{name}_incomplete", "flag", tuple(str(f).lower() for f in flags))
        )
    return columns


def _as_numbers(name: str, cells: list[str], present: list[str]) -> list[CsvColumn] | None:
    """The first shape every present cell has, taken apart; a mix of numbers and words as a
    number and a label; ``None`` for text."""
    for pattern, parts in _SHAPES:
        matches = [pattern.fullmatch(c) for c in present]
        if not all(matches) or (parts == ("", "total") and not any(m and m[2] for m in matches)):
            continue
        found = [pattern.fullmatch(c) for c in cells]
        return [
            CsvColumn(
                f"{name}_{part}" if part else name,
                "number",
                tuple(_number(m, k, part) for m in found),
            )
            for k, part in enumerate(parts, start=1)
        ]
    numbers = [c for c in present if _SHAPES[-1][0].fullmatch(c)]
    if numbers and all(c in numbers or not re.search(r"\d", c) for c in present):
        number = tuple(c.lstrip("+") if c in numbers else "" for c in cells)
        label = tuple("" if c in numbers or c == "—" else c for c in cells)
        return [CsvColumn(name, "number", number), CsvColumn(f"{name}_label", "text", label)]
    return None


def _number(match: re.Match[str] | None, group: int, part: str) -> str:
    """One value of a matched cell as a CSV number: the digits as printed, no ``+``; empty
    where missing. A count without a slash is its own total."""
    if match is None:
        return ""
    value = match[group] if match[group] is not None or part != "total" else match[1]
    return "" if value == "—" else value.lstrip("+")


PROSE = 32  # characters from which a column's text wraps in a paragraph column
_TABLE_NUMBER = re.compile(r"^Table \d+: ")
PREAMBLE = (
    "% GroundBench table. Preamble: \\usepackage{booktabs} (rules), \\usepackage{graphicx} "
    "(\\resizebox) and \\usepackage{array} (wrapped columns)"
)
# Scales the table down to the text width when wider, never up: \width is its natural width.
_FIT = r"\resizebox{\ifdim\width>\textwidth\textwidth\else\width\fi}{!}{%"


def latex(table: ReportTable) -> str:
    """``table`` as a LaTeX float that compiles with booktabs, graphicx and array loaded (said
    in its first line): the caption once (LaTeX numbers it: the title's own "Table 1: " is
    dropped), a label ``tab:<name>``, prose columns wrapped (:func:`_column_spec`), the whole
    scaled down to the text width where still wider (Table 1's 14 columns), every character
    the text holds escaped or spelt in ASCII LaTeX."""
    spec = "".join(_column_spec(table, j) for j in range(len(table.columns)))
    tabular = [
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(_tex(c) for c in table.columns) + r" \\",
        r"\midrule",
        *(" & ".join(row) + r" \\" for row in _styled(table, _tex_cell)),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    lines = [
        PREAMBLE,
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{_tex(_TABLE_NUMBER.sub('', table.title))}}}",
        rf"\label{{tab:{table.name.replace('_', '-')}}}",
        _FIT,
        *tabular,
        "}",
        *(rf"\par\footnotesize {_tex(n)}" for n in table.notes),
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _column_spec(table: ReportTable, j: int) -> str:
    """Names left, figures right; a column of prose (a cell of :data:`PROSE` characters or
    more: claims, orderings, verdicts) a ragged paragraph column, its share of the text width
    by its longest cell, so that a findings table wraps rather than shrinks to nothing."""
    longest = [max((len(r[k]) for r in table.rows), default=0) for k in range(len(table.columns))]
    prose = [k for k, n in enumerate(longest) if n >= PROSE]
    if j not in prose:
        return "l" if j < 2 else "r"
    share = 0.8 * longest[j] / sum(longest[k] for k in prose)
    return rf">{{\raggedright\arraybackslash}}p{{{max(share, 0.15):.2f}\linewidth}}"


def _styled(table: ReportTable, cell: Callable[[str, Mark | None], T]) -> list[list[T]]:
    """Every row's cells through one format's ``cell``, which escapes a value and styles it by
    its mark: the one place a renderer meets :attr:`ReportTable.marks`."""
    return [
        [cell(value, table.marks.get((i, j))) for j, value in enumerate(row)]
        for i, row in enumerate(table.rows)
    ]


def _styled_at(table: ReportTable, cell: Callable[[str, Mark | None, int], T]) -> list[list[T]]:
    """:func:`_styled` for a format that also places a cell by its column."""
    return [
        [cell(value, table.marks.get((i, j)), j) for j, value in enumerate(row)]
        for i, row in enumerate(table.rows)
    ]


_HTML_STYLE = {None: "{}", "best": "<strong>{}</strong>", "second": "<u>{}</u>"}


def _html_cell(value: str, mark: Mark | None, column: int) -> str:
    classes = ["num"] if column >= 2 else []
    title = ""
    if value.endswith(INCOMPLETE):
        classes.append("incomplete")
        title = ' title="incomplete: some of its questions are not settled"'
    attributes = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{attributes}{title}>{_HTML_STYLE[mark].format(escape(value))}</td>"


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


# Every non-ASCII character a table's text holds, spelt so that pdflatex needs no font for it.
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "Δ": r"$\Delta$", "·": r"$\cdot$", "—": "---", "–": "--", "τ": r"$\tau$",
        "≤": r"$\leq$", "≥": r"$\geq$", "−": r"$-$", "<": r"$<$", ">": r"$>$", "§": r"\S{}",
        "±": r"$\pm$", "×": r"$\times$", "≈": r"$\approx$", "≫": r"$\gg$", "…": r"\dots{}",
        "✓": r"yes", "✗": r"no"}  # fmt: skip


_MINUS = re.compile(r"(?<![\w-])-(?=\d)")  # a number's sign, not a name's hyphen (no-image)


def _tex(text: str) -> str:
    """``text`` escaped for LaTeX, a negative number's sign a minus rather than a hyphen."""
    return _MINUS.sub(r"$-$", "".join(_TEX.get(ch, ch) for ch in text))
