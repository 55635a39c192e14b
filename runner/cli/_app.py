"""The Typer app, its sub-apps, and :func:`main`: the one boundary where an error of the packages
below is told in one line (:func:`runner._errors.told`); anything else is a bug and keeps its
traceback."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated

import typer

from runner.cli._common import console

# Help is plain text: rich markup would read "[boxes]" or "[default: …]" in it as tags and
# drop them.
PLAIN = None
app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=PLAIN,
    help="Run the GroundBench polygon-grounding grid and the box benchmarks around it.",
)
cohort_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=PLAIN, help="Build and inspect cohorts (PROTOCOL §8)."
)
app.add_typer(cohort_app, name="cohort")
boxes_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=PLAIN,
    help="The box benchmarks (Ref-Adv, GroundingME, RefBench-PRO): read their files, score "
    "answers collected elsewhere by their own protocols (PROTOCOL §10). To ask a model, put "
    "[boxes] in an experiment file and use `groundbench run`.",
)
app.add_typer(boxes_app, name="boxes")
data_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=PLAIN,
    help="Check a RefCOCO-family data root (refs, instances.json, COCO images) before a run.",
)
app.add_typer(data_app, name="data")


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


def main() -> None:
    """Entry point of the ``groundbench`` console script (through :mod:`runner._launch`)."""
    try:
        app()
    except Exception as exc:
        from runner._errors import told  # imported as an error is met: --help imports none

        said = told(exc)
        if said is None:  # a bug: its traceback stays
            raise
        # Plain echo, not rich: one line however long, never wrapped to the terminal's width.
        typer.echo(f"groundbench: {said.line}", err=True)
        raise SystemExit(said.status) from None
