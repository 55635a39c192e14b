"""``groundbench fidelity``: construction fidelity C_N over a file's eligible referents."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from runner.cli._app import app
from runner.cli._common import console


@app.command()
def fidelity(
    instances: Annotated[Path, typer.Argument(help="A COCO instances.json file.")],
    phases: Annotated[
        bool, typer.Option("--phases", help="Also show the spread over the 8 sampling phases.")
    ] = False,
) -> None:
    """Construction fidelity C_N per budget over a file's eligible referents (PROTOCOL §2, §8)."""
    from conditions import eligible_referents, load_instances
    from runner._tables import print_whole
    from scoring import BUDGETS, PHASES, construction_fidelity

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
    print_whole(console, table)


def _points(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}"
