"""The ``groundbench`` command line.

Errors of the packages below are translated here, at one boundary, into one readable line and
exit status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import math
from importlib.metadata import version
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from conditions import ConditionsError, eligible_referents, load_instances
from scoring import BUDGETS, PHASES, ScoringError, construction_fidelity

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Run the GroundBench polygon-grounding grid and the box benchmarks around it.",
)
console = Console()


def _show_version(value: bool) -> None:
    if value:
        console.print(f"groundbench {version('groundbench')}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Run the GroundBench polygon-grounding grid and the box benchmarks around it."""


@app.command()
def fidelity(
    instances: Annotated[Path, typer.Argument(help="A COCO instances.json file.")],
    phases: Annotated[
        bool, typer.Option("--phases", help="Also show the spread over the 8 sampling phases.")
    ] = False,
) -> None:
    """Construction fidelity C_N per budget over a file's eligible referents (PROTOCOL §2, §8)."""
    referents = eligible_referents(load_instances(instances), instances)
    console.print(f"{len(referents)} eligible referents in {instances}", soft_wrap=True)
    table = Table(title="Construction fidelity C_N")
    table.add_column("N", justify="right")
    table.add_column("C_N (phase 0)", justify="right")
    if phases:
        table.add_column("phases 0-7: min", justify="right")
        table.add_column("max", justify="right")
    for n in BUDGETS:
        row = [str(n), _points(construction_fidelity(referents, n))]
        if phases:
            spread = [construction_fidelity(referents, n, k) for k in range(PHASES)]
            row += [_points(min(spread)), _points(max(spread))]
        table.add_row(*row)
    console.print(table)


def _points(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}"


def main() -> None:
    """Entry point of the ``groundbench`` console script."""
    try:
        app()
    except (ScoringError, ConditionsError) as exc:
        # Plain echo, not rich: one line however long, never wrapped to the terminal's width.
        typer.echo(f"groundbench: {exc}", err=True)
        raise SystemExit(2) from None
