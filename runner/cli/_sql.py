"""``groundbench sql``: a read-only query on an experiment's store, during a run or after."""

from __future__ import annotations

import csv
import functools
import json
import sys
from typing import Annotated

import typer
from rich.table import Table

from runner.cli._app import app
from runner.cli._common import (
    MAX_QUERY_TIMEOUT,
    QUERY_TIMEOUT,
    OutputFormat,
    StoreArgument,
    console,
    shown,
    store_given,
)


@app.command()
def sql(
    store: StoreArgument,
    query: Annotated[str, typer.Argument(help='A query, e.g. "SELECT * FROM cell_summary".')],
    output: Annotated[
        OutputFormat, typer.Option("--format", help="table, csv or json (one object per row).")
    ] = "table",
    address: Annotated[
        str | None,
        typer.Option(
            help="The Ray cluster of the run that holds STORE, HOST:PORT [default: the one the "
            "run noted beside it (STORE.ray.json), else $RAY_ADDRESS]."
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(help=f"Seconds before the query is stopped (at most {MAX_QUERY_TIMEOUT:g})."),
    ] = QUERY_TIMEOUT,
) -> None:
    """Query an experiment's store, read-only: the file after a run, the run's store during one.
    A query reads the store and nothing else (no files, URLs or extensions). The table shows
    floats to 6 significant digits and, piped, at its own width (csv and json keep every digit).

    Views: request_status (one row per request), question_scores (per question, cell and
    view iou0/iou1/iou2/best_effort), cell_summary (per cell and view).
    """
    from runner._tables import print_whole
    from runner.distributed import query_running_store
    from runner.store import query_store

    store = store_given(store)
    through_run = functools.partial(query_running_store, address=address)
    names, rows = query_store(store, query, through_run, timeout)
    if output == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(rows)
        return
    if output == "json":
        for row in rows:
            typer.echo(json.dumps(dict(zip(names, row, strict=True)), default=str))
        return
    table = Table(show_lines=False)
    for name in names:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(shown(v) for v in row))
    print_whole(console, table)
    console.print(f"{len(rows):,} rows")
