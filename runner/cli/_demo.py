"""``groundbench demo``: the whole pipeline on a fresh machine, against the built-in simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.cli._app import app
from runner.cli._common import DEMO_IMAGES, DEMO_PER_SOURCE, BenchmarkName, console


@app.command()
def demo(
    folder: Annotated[Path, typer.Option("--dir", help="Where the demo lives.")] = Path(
        "groundbench-demo"
    ),
    images: Annotated[int, typer.Option(min=20, help="Synthetic images to make.")] = DEMO_IMAGES,
    per_source: Annotated[int, typer.Option(min=2, help="Questions per source.")] = DEMO_PER_SOURCE,
    benchmark: Annotated[
        BenchmarkName | None,
        typer.Option(help="Run this box benchmark instead, on a made-up file in its format."),
    ] = None,
    questions: Annotated[
        int, typer.Option(min=6, help="The box benchmark's questions (with --benchmark).")
    ] = 120,
) -> None:
    """The whole pipeline on a fresh machine: synthetic data, a cohort, the paper's grid against
    the built-in simulator on a local Ray, the live monitor, then the tables and figures.
    Running it again resumes."""
    from runner.cli._report import report
    from runner.cli._rescore import rescore
    from runner.cli._run import run_in_view
    from runner.demo import prepare, prepare_boxes
    from runner.distributed import RunOptions
    from runner.experiment import load_experiment

    if benchmark is None:
        path, out = prepare(folder, images, per_source), folder / "report"
    else:
        path, out = prepare_boxes(folder, benchmark, questions), folder / f"report-{benchmark}"
    console.print(f"experiment {path} (edit it, or run it with `groundbench run`)", soft_wrap=True)
    experiment = load_experiment(path)
    result = run_in_view(experiment, path, RunOptions(progress_every_s=2.0, preflight=True))
    if benchmark is None:  # the report's re-scored tables read what this writes
        rescore(experiment.store)
    report(experiment.store, out=out, html=out / "html", images=None)
    _screenshot(out / "html" / "index.html")
    if not result.complete:
        raise typer.Exit(code=3)


def _screenshot(index: Path) -> None:
    """A picture of the HTML report as a browser shows it, beside it, where Chromium is
    installed; a line saying why not otherwise (the report itself is written either way)."""
    from runner.pages import BrowserError, check_page, find_chromium

    if find_chromium() is None:
        console.print(
            "no screenshot of the HTML report: no Chromium found (install Debian's chromium "
            "package, or set GROUNDBENCH_CHROMIUM)",
            soft_wrap=True,
        )
        return
    picture = index.with_name("screenshot.png")
    try:
        seen = check_page(index, screenshot=picture)
    except BrowserError as exc:
        console.print(f"no screenshot of the HTML report: {exc}", soft_wrap=True, markup=False)
        return
    errors = f"; console errors: {'; '.join(seen.console_errors)}" if seen.console_errors else ""
    console.print(f"wrote {picture}{errors}", soft_wrap=True, markup=False, highlight=False)
