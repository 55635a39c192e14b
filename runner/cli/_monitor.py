"""``groundbench monitor``: the live monitor attached to a run started elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.live import Live

from runner.cli._app import app
from runner.cli._common import console, echo, experiment_given, finite


@app.command()
def monitor(
    experiment: Annotated[
        Path,
        typer.Argument(help="The experiment file of a running run, or the store it holds."),
    ],
    address: Annotated[
        str | None,
        typer.Option(
            help="Its Ray cluster, HOST:PORT [default: the one the run noted beside its store "
            "(STORE.ray.json), else $RAY_ADDRESS]."
        ),
    ] = None,
    every: Annotated[
        float, typer.Option(min=0.2, callback=finite, help="Seconds between readings.")
    ] = 2.0,
) -> None:
    """Attach the live monitor to a run started elsewhere (another terminal, `ray job submit`);
    it ends when the run does."""
    from runner.distributed import watch_run
    from runner.experiment import load_experiment
    from runner.monitor import echoing, render

    loaded = load_experiment(experiment_given(experiment, "monitor"))
    if console.is_terminal:
        with Live(console=console, refresh_per_second=4) as live:
            watch_run(loaded, address, every, lambda view: live.update(render(view)))
    else:
        watch_run(loaded, address, every, echoing(echo))
    console.print("the run has ended", soft_wrap=True)
