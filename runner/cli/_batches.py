"""``groundbench batches``: every batch a run of an experiment made, and with ``--cancel`` each
open one cancelled at its provider (:func:`runner.batch.cancel_batches`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from runner.cli._app import app
from runner.cli._common import console, echo, experiment_given, shown, store_given

if TYPE_CHECKING:
    from runner.experiment import Experiment
    from runner.store import BatchRecord


@app.command()
def batches(
    source: Annotated[
        Path,
        typer.Argument(
            help="The experiment file (TOML); to list only, its store (DuckDB file) will do."
        ),
    ],
    cancel: Annotated[
        bool,
        typer.Option(
            "--cancel",
            help="Ask the provider to cancel every open batch that has not ended. Needs the "
            "experiment file: each backend's key is read from the variable the experiment names "
            "and sent only to its base_url; a batch the store records at another address, key "
            "variable or provider is refused, unsent. The next `groundbench run` collects what "
            "they answered and sends the rest again.",
        ),
    ] = False,
) -> None:
    """Every batch a run of the experiment made, oldest first, and how many are still open.

    Exit status 1 when a cancel failed or was refused; 2 when the store cannot be read (a run
    holds it: its monitor shows its open batches).
    """
    from runner.batch import cancel_batches, cancellable, record_cancels
    from runner.experiment import load_experiment

    experiment: Experiment | None = None
    if cancel:  # only the experiment names each backend's key variable and address
        experiment = load_experiment(experiment_given(source, "batches --cancel"))
    recorded = _recorded_batches(store_given(source) if experiment is None else experiment.store)
    if not cancel:
        _batch_table(recorded)
        return
    assert experiment is not None
    open_ones = cancellable(recorded)
    if not open_ones:
        console.print(f"no open batch in {experiment.store} to cancel", soft_wrap=True)
        return
    outcomes = asyncio.run(cancel_batches(experiment, open_ones, echo=echo))
    record_cancels(experiment.store, outcomes, echo=echo)
    if any(o.remote is None for o in outcomes):
        raise typer.Exit(code=1)


def _recorded_batches(store: Path) -> list[BatchRecord]:
    from runner.store import StoreError, batch_records, read_only

    try:
        con = read_only(store)
    except StoreError as exc:
        if "a run holds the file" in str(exc):
            raise StoreError(f"a run holds {store}; its monitor shows its open batches") from None
        raise
    with con:
        return batch_records(con)


_BATCH_COLUMNS = (
    *("id", "backend", "model", "phase", "provider state", "requests", "succeeded/failed"),
    *("answered/errored/unrun/problems", "created", "ended"),
)


def _batch_table(recorded: list[BatchRecord]) -> None:
    from runner._tables import print_whole
    from runner.batch import server_text

    if not recorded:
        console.print("no batches recorded", soft_wrap=True)
        return
    table = Table(show_lines=False)
    for name in _BATCH_COLUMNS:
        table.add_column(name, overflow="fold")
    for b in recorded:
        table.add_row(
            b.id,
            b.backend,
            b.model,
            b.phase,
            Text(server_text(b.provider_state or b.state or "")),  # Text: no markup read
            f"{b.requests:,}",
            _counts(b.succeeded, b.failed),
            _counts(b.answered, b.errored, b.unrun, b.problems),
            f"{b.created_at:%Y-%m-%d %H:%M}",
            f"{b.ended_at:%Y-%m-%d %H:%M}" if b.ended_at else "",
        )
    print_whole(console, table)
    still = sum(b.open for b in recorded)
    console.print(f"{len(recorded):,} batches, {still:,} open", soft_wrap=True)


def _counts(*values: int | None) -> str:
    return "" if all(v is None for v in values) else "/".join(shown(v) for v in values)
