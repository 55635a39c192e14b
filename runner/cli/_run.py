"""``groundbench run``: every pending call of an experiment, sent, stored and scored; and
:func:`run_in_view`, a run with the live monitor in front, which ``demo`` shares.

A run's settings are :class:`runner.distributed.RunOptions`' fields: the command's options map
onto them one to one and the options object is what is passed on, so a setting is added there
and as an option here, nowhere else."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.live import Live

from runner.cli._app import app
from runner.cli._common import OUTPUT_TOKENS_HELP, console, echo, experiment_given, finite

if TYPE_CHECKING:
    from runner.distributed import RunOptions, RunReport
    from runner.experiment import Experiment


@app.command()
def run(
    experiment: Annotated[
        Path,
        typer.Argument(
            help="The experiment file (TOML), or a store whose last run names its file."
        ),
    ],
    address: Annotated[
        str | None,
        typer.Option(
            help="Ray cluster to join: HOST:PORT, or auto (Ray's search: the cluster the "
            "machine's last `ray start` noted, anyone's; only where no one else starts Ray, "
            "e.g. your cluster's head node) [default: $RAY_ADDRESS, else a local Ray of the "
            "run's own, never one it was not told to join]."
        ),
    ] = None,
    wait_on_quota: Annotated[
        float | None,
        typer.Option(
            min=0.0, callback=finite, help="After a quota error, wait this many seconds and go on."
        ),
    ] = None,
    quota_waits: Annotated[int, typer.Option(min=1, help="How many such waits.")] = 1,
    progress_every: Annotated[
        float, typer.Option(min=0.1, callback=finite, help="Seconds between progress lines.")
    ] = 5.0,
    max_spend: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            callback=finite,
            help="Never spend more than this many US dollars this run: a call (a batch's "
            "lines) is sent only while what is spent plus the worst case of every call not yet "
            "answered fits (each attempt left at 4x its estimated input, or the largest input "
            "seen, plus max_output_tokens, at the configured prices); a rerun resumes.",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Send only the first N questions of every cell: a smoke run into the same "
            "store, which a later run without --limit completes.",
        ),
    ] = None,
    preflight: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="First call each configuration of a real backend a few times per decoding, "
            "and estimate the cost (see `groundbench check`).",
        ),
    ] = True,
    output_tokens: Annotated[int | None, typer.Option(min=1, help=OUTPUT_TOKENS_HELP)] = None,
) -> None:
    """Send every pending call of an experiment, store the responses, score them as they land.

    Running it again resumes: it sends exactly the calls that have no stored answer. Exit
    status 0 when every request asked for is complete (the grid, or with --limit the
    limit's), 3 when calls are left (quota, errors, the spending cap), 2 when the pre-flight
    or the set-up fails, 130 on Ctrl-C and 143 on SIGTERM (everything stored is kept).
    """
    from runner.distributed import RunOptions
    from runner.experiment import load_experiment

    experiment = experiment_given(experiment, "run")
    loaded = load_experiment(experiment)
    options = RunOptions(
        address=address,
        wait_on_quota_s=wait_on_quota,
        max_quota_waits=quota_waits,
        progress_every_s=progress_every,
        max_spend=max_spend,
        limit=limit,
        preflight=preflight,
        output_tokens=output_tokens,
    )
    report = run_in_view(loaded, experiment, options)
    if not report.done:
        raise typer.Exit(code=3)


def run_in_view(experiment: Experiment, where: Path, options: RunOptions) -> RunReport:
    """Run with the live monitor in front on a terminal (progress at least every second),
    plain progress lines otherwise; Ctrl-C or SIGTERM said in a line that repeats the run's
    bounds, and exit status 130 or 143."""
    from runner._sigterm import TERMINATED_STATUS, terminated
    from runner.distributed import run_experiment  # Ray loads only for a run
    from runner.monitor import render
    from runner.summary import summary_lines

    try:
        if not console.is_terminal:
            return run_experiment(experiment, options, echo=echo, experiment_file=where)
        every = min(options.progress_every_s, 1.0)
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            report = run_experiment(
                experiment,
                dataclasses.replace(options, progress_every_s=every),
                # On a terminal prose wraps at spaces: no word or number split at the edge.
                echo=lambda line: live.console.print(line, markup=False),
                experiment_file=where,
                show=lambda view: live.update(render(view)),
                summarise=False,
            )
        # The summary below the view's last frame, once it has closed: the last thing on
        # screen (printed through the live view, it went above the frame and scrolled off).
        for line in summary_lines(report, where, experiment):
            console.print(line, markup=False)
        return report
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM taken as it (runner._sigterm)
        # Every attempt is stored before its worker sends again: nothing stored is lost.
        stopped = "terminated (SIGTERM)" if terminated() else "interrupted"
        # The run's own bounds repeated: a smoke run's resume is not the whole grid, nor a
        # capped run's one without its cap.
        bounds = (f" --limit {options.limit}" if options.limit is not None else "") + (
            f" --max-spend {options.max_spend:g}" if options.max_spend is not None else ""
        )
        typer.echo(
            f"groundbench: {stopped}; everything stored is kept: run `groundbench run {where}"
            f"{bounds}` again to resume",
            err=True,
        )
        raise typer.Exit(code=TERMINATED_STATUS if terminated() else 130) from None
