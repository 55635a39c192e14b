"""``groundbench check``: each configuration proved callable, and what the calls left cost."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from runner.cli._app import app
from runner.cli._common import OUTPUT_TOKENS_HELP, echo, experiment_given, finite


@app.command("check")
def check_experiment(
    experiment: Annotated[
        Path,
        typer.Argument(
            help="The experiment file (TOML), or a store whose last run names its file."
        ),
    ],
    output_tokens: Annotated[int | None, typer.Option(min=1, help=OUTPUT_TOKENS_HELP)] = None,
    max_spend: Annotated[
        float | None,
        typer.Option(min=0.0, callback=finite, help="Say whether the estimate fits this cap."),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(min=1, help="Estimate `run --limit N`: the first N questions of every cell."),
    ] = None,
) -> None:
    """Prove each configuration can be called, and say what the calls left cost and take.

    Six calls per configuration and decoding (real requests of the grid, spread over those
    left; not stored), then, per configuration, the requests left with their tokens and cost
    at the configured prices, and per backend the wall time at its limits. Tokens per call
    are measured from the stored answers and the check's calls. When each call left, and the
    tokens measured, are noted beside the store, for a run's limiters and its estimate. Exit
    status 0 when every decoding was proved, 1 when the first call of one failed.
    """
    from runner.calls_note import read_calls
    from runner.experiment import load_experiment
    from runner.plan import prepare
    from runner.preflight import note_real_calls, preflight_lines, preflight_report, stored_state

    loaded = load_experiment(experiment_given(experiment, "check"))
    plan = prepare(loaded)
    noted, ignored = read_calls(loaded.store)
    if ignored is not None:
        echo(ignored)
    stored, left = stored_state(loaded)
    report = asyncio.run(
        preflight_report(
            plan, stored, stated_output=output_tokens, accounts=noted, left=left, limit=limit,
        )
    )  # fmt: skip
    for line in preflight_lines(report, max_spend):
        echo(line)
    unnoted = note_real_calls(loaded, report)
    if unnoted is not None:
        echo(unnoted)
    if not report.ok:
        raise typer.Exit(code=1)
