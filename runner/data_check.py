"""``groundbench data check``'s output: one table of what a data root holds, a line per
problem naming the file and what to do, and a verdict last (the checking is
:func:`conditions.check_data_root`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from conditions import DataCheck, DataFinding, DataState
from runner._tables import print_whole

_STYLE = {
    DataState.OK: "green",
    DataState.MISSING: "bold red",
    DataState.MALFORMED: "bold red",
    DataState.UNCHECKED: "yellow",
}


def findings_table(check: DataCheck) -> Table:
    """A row per source and item: its state and what was found (counts, or what is wrong)."""
    table = Table(title=f"Data root {check.root.root}")
    if check.images_in_folder is not None:  # else its rows say why not
        table.caption = (
            f"images: {check.root.images}, {check.images_in_folder:,} files "
            "(looked up by name, none opened)"
        )
    table.add_column("source", no_wrap=True)
    table.add_column("file", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("found", overflow="fold")
    for f in check.findings:
        # Text, not markup: a path or a reason may hold "[…]".
        state = Text(str(f.state), style=_STYLE[f.state])
        table.add_row(Text(f.source), Text(f.item), state, Text(f.found))
    return table


def problem_line(finding: DataFinding) -> str:
    """One problem: the file, what is wrong with it, and what to do."""
    return f"{finding.path}: {finding.found}; {finding.fix}"


def verdict(check: DataCheck, sources: tuple[str, ...]) -> str:
    """The last line: ready, or not and which items are not."""
    if check.ready:
        return (
            f"ready: {', '.join(sources)} have every file a run needs (images by name, "
            "unopened: the cohort build reads the ones it draws)"
        )
    faults = [f"{f.source} {f.item} {f.state}" for f in check.findings if f.problem]
    return "not ready: " + ", ".join(faults)


def print_data_check(console: Console, check: DataCheck, sources: tuple[str, ...]) -> None:
    """The table, then each problem on a line of its own, then the verdict."""
    print_whole(console, findings_table(check))
    whole = not console.is_terminal  # piped: one whole line each; on a terminal, at spaces
    for f in check.problems:
        console.print(problem_line(f), soft_wrap=whole, markup=False, highlight=False)
    console.print(verdict(check, sources), soft_wrap=whole, markup=False, highlight=False)
