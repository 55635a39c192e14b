"""The ``groundbench`` command line.

Errors of the packages below are translated here, at one boundary, into one readable line and
exit status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import functools
import json
import math
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.live import Live
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from runner._errors import ConfigError, RunnerError
from runner._output import check_folder, write_whole, writing_into
from runner._sigterm import TERMINATED_STATUS, terminated

if TYPE_CHECKING:
    from runner.backends import ApiKey, Origin, Provider
    from runner.batch import RemoteBatch
    from runner.distributed import RunReport
    from runner.experiment import Experiment
    from runner.overlays import AnswerView
    from runner.simulator import SimSpec, Simulator
    from runner.store import (
        BatchRecord,
        Held,
        Reading,
    )

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
BenchmarkName = Literal["ref-adv", "groundingme", "refbench-pro"]
ReaderName = Literal["ref-adv", "groundingme", "refbench-pro", "groundbench"]
ConventionName = Literal["norm999", "norm1000", "unit", "pixels"]
console = Console()
# Defaults --help shows, written here so that help imports none of the packages the commands
# use (under a second: issue 39); tests/runner/test_cli.py holds each equal to its source.
SYNTH_IMAGES = 2400  # conditions.SynthSpec.images
COHORT_SEED = 0  # conditions.CohortSpec().seed
QUERY_TIMEOUT = 60.0  # runner.store.QUERY_TIMEOUT_S
MAX_QUERY_TIMEOUT = 600.0  # runner.store.MAX_QUERY_TIMEOUT_S
DEMO_IMAGES = 600  # runner.demo.IMAGES
DEMO_PER_SOURCE = 100  # runner.demo.PER_SOURCE
OutputFormat = Literal["table", "csv", "json"]
_OUTPUT_TOKENS_HELP = (
    "Mean output tokens per call to assume in the estimates [default: measured from the "
    "stored answers, else from the check's call]."
)


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


@app.command()
def synth(
    out: Annotated[Path, typer.Argument(help="Folder to write the synthetic data root into.")],
    seed: Annotated[int, typer.Option(help="Everything generated follows from it.")] = 0,
    images: Annotated[int, typer.Option(min=10, help="Number of images.")] = SYNTH_IMAGES,
) -> None:
    """Write synthetic data in the real RefCOCO layout (images, instances.json, refs pickles)."""
    from conditions import SynthSpec, generate_synthetic

    check_folder(out, "OUT")
    with writing_into(out, "OUT"):
        counts = generate_synthetic(out, SynthSpec(seed=seed, images=images))
    refs = ", ".join(f"{k} {v}" for k, v in counts.items())
    console.print(f"wrote {images} images and refs ({refs}) under {out}", soft_wrap=True)


@cohort_app.command("build")
def cohort_build(
    root: Annotated[Path, typer.Argument(help="Data root holding refcoco/, refcoco+/, refcocog/.")],
    store: Annotated[
        Path,
        typer.Argument(
            help="The experiment's store (DuckDB file, made if missing) or the experiment file."
        ),
    ],
    images: Annotated[
        Path | None,
        typer.Option(help="COCO train2014 image folder [default: ROOT/images/train2014]."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Selection seed.")] = COHORT_SEED,
    per_source: Annotated[int, typer.Option(min=1, help="Questions per source.")] = 500,
    matched: Annotated[
        int, typer.Option(min=1, help="Size of the image-intervention subset.")
    ] = 500,
    source: Annotated[
        list[str] | None,
        typer.Option(
            help="Draw only from this source (repeatable) [default: all three, in order]."
        ),
    ] = None,
) -> None:
    """Draw a cohort from a data root and keep it in the experiment's store (DuckDB file)."""
    from conditions import CohortSpec, DataRoot, build_cohort, write_cohort
    from runner._tables import print_whole, report_table

    sources = _sources(source)
    if store.exists():  # a store to make is no file yet; one there may be the experiment's TOML
        store = _store_given(store)
    spec = CohortSpec(seed=seed, per_source=per_source, matched=matched, sources=sources)
    cohort = build_cohort(DataRoot.at(root, images), spec)
    print_whole(console, report_table(cohort.reports))
    for r in cohort.reports:
        if r.short:
            console.print(f"[bold red]{r.source}: only {r.selected} of {r.asked} questions[/]")
    fresh = write_cohort(store, cohort)
    state = "stored in" if fresh else "already in"
    console.print(
        f"cohort {cohort.hash} ({len(cohort.questions)} questions) {state} {store}",
        soft_wrap=True,
    )


@cohort_app.command("summary")
def cohort_summary(
    store: Annotated[
        Path, typer.Argument(help="The experiment file (TOML) or its store (DuckDB file).")
    ],
) -> None:
    """Show a cohort: counts per source and bin, thresholds, C_N per budget."""
    from conditions import load_cohort
    from runner._tables import print_whole, summary_tables

    for table in summary_tables(load_cohort(_store_given(store))):
        print_whole(console, table)


@data_app.command("check")
def data_check(
    root: Annotated[Path, typer.Argument(help="Data root holding refcoco/, refcoco+/, refcocog/.")],
    images: Annotated[
        Path | None,
        typer.Option(help="COCO train2014 image folder [default: ROOT/images/train2014]."),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(help="Check only this source (repeatable) [default: all three]."),
    ] = None,
) -> None:
    """Say per source what the data root holds, missing or malformed, in one table, before
    any run: the refs pickle (read as a cohort build reads it; refs in the evaluation splits),
    instances.json (images, annotations) and the images those refs name (looked up by name,
    none opened: COCO's 13 GB cost one folder listing). A line per problem says what to do.
    Exit status 0 when all is there, 1 when not."""
    from conditions import DataRoot, check_data_root
    from runner.data_check import print_data_check

    sources = _sources(source)
    check = check_data_root(DataRoot.at(root, images), sources)
    print_data_check(console, check, sources)
    if not check.ready:
        raise typer.Exit(code=1)


@boxes_app.command("check")
def boxes_check(
    benchmark: Annotated[BenchmarkName, typer.Argument(help="Which benchmark's file it is.")],
    file: Annotated[Path, typer.Argument(help="Its released file (parquet or JSON lines).")],
    images: Annotated[
        Path, typer.Option(help="Where its images are (or are written, when the file holds them).")
    ],
) -> None:
    """Read a benchmark's released file; show its questions per dimension and rejections."""
    from conditions import FILE_LOADERS
    from runner._tables import print_whole

    questions = FILE_LOADERS[benchmark](file, images)
    counts: dict[tuple[str, str], list[int]] = {}
    for q in questions:
        entry = counts.setdefault((q.dimension, q.subdimension or ""), [0, 0])
        entry[0] += 1
        entry[1] += q.rejection
    table = Table(title=f"{benchmark}: {len(questions):,} questions from {file.name}")
    for column in ("dimension", "sub-dimension", "questions", "rejection"):
        table.add_column(
            column, justify="right" if column in ("questions", "rejection") else "left"
        )
    for (dimension, sub), (total, rejections) in sorted(counts.items()):
        table.add_row(dimension, sub, f"{total:,}", f"{rejections:,}")
    print_whole(console, table)


@boxes_app.command("score")
def boxes_score(
    benchmark: Annotated[BenchmarkName, typer.Argument(help="Which benchmark the answers are to.")],
    file: Annotated[Path, typer.Argument(help="Its released file (parquet or JSON lines).")],
    answers: Annotated[Path, typer.Argument(help="Answers, JSON lines: qid, configuration, …")],
    images: Annotated[Path, typer.Option(help="Where its images are (or are written).")],
    convention: Annotated[
        ConventionName | None,
        typer.Option(help="The coordinate convention of answers that name none."),
    ] = None,
    output: Annotated[
        Literal["table", "markdown", "csv", "latex"], typer.Option("--format")
    ] = "table",
    reader: Annotated[
        ReaderName | None,
        typer.Option(
            help="Read the answers by this benchmark's code [default: its own]; "
            "groundbench: the lenient reading (corners ordered, clipped)."
        ),
    ] = None,
) -> None:
    """Score collected answers as the benchmark's released code does; print its main table."""
    from conditions import FILE_LOADERS
    from runner._tables import print_whole
    from runner.boxes import judge_answers, load_box_answers
    from runner.reports import box_benchmark_table, fitting_table, render

    questions = FILE_LOADERS[benchmark](file, images)
    collected = load_box_answers(answers)
    runs = judge_answers(benchmark, questions, collected, convention, answers, reader)
    table = box_benchmark_table(benchmark, runs)
    if output == "table":
        print_whole(console, fitting_table(table, console))
    else:
        typer.echo(render(table, output), nl=False)


@app.command()
def simulate(
    store: Annotated[
        Path,
        typer.Argument(
            help="The experiment file (TOML) or its store (DuckDB file): its cohort or box "
            "questions."
        ),
    ],
    images: Annotated[Path, typer.Option(help="The questions' image folder.")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 8765,
    seed: Annotated[int | None, typer.Option(help="Seed [default: the spec's].")] = None,
    spec: Annotated[
        Path | None, typer.Option(help="JSON file of behaviour and faults (SimSpec).")
    ] = None,
    cache: Annotated[
        Path | None, typer.Option(help="Image-variant cache [default: STORE.variants/].")
    ] = None,
) -> None:
    """Serve the provider simulator for a store's questions: dry-run a grid before paying.

    Point a configuration's transport.base_url at the printed address: it answers both the
    OpenAI-compatible and the Gemini wire formats, from the cohort's own targets (or a box
    benchmark's boxes).
    """
    from conditions import VariantCache, load_box_set, load_cohort, stored_box_set_hash
    from runner.simulator import Simulator

    sim_spec = load_sim_spec(spec)  # a bad spec is named first: the store is read after it
    if seed is not None:
        sim_spec = sim_spec.model_copy(update={"seed": seed})
    store = _store_given(store)
    questions = (
        load_box_set(store) if stored_box_set_hash(store) is not None else load_cohort(store)
    )
    variants = VariantCache(cache or store.with_suffix(".variants"))
    simulator = Simulator(questions, images, variants, sim_spec)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(simulator, host, port))


async def _serve(simulator: Simulator, host: str, port: int) -> None:
    from runner.simulator import serving

    async with serving(simulator, host, port) as url:
        # Plain echo: the first line is read by scripts that start the simulator on port 0.
        typer.echo(f"simulator serving {url}")
        typer.echo(
            f"  OpenAI-compatible: {url}/v1/chat/completions; "
            f"Gemini: {url}/v1beta/models/<model>:generateContent; Ctrl-C stops"
        )
        sys.stdout.flush()
        await asyncio.Event().wait()  # until Ctrl-C or a signal ends the process


def _finite(value: float | None) -> float | None:
    """A number option's value, refused when infinite (its range refuses nan and negatives):
    --max-spend inf was taken as a cap and --every inf as a wait."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


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
            min=0.0, callback=_finite, help="After a quota error, wait this many seconds and go on."
        ),
    ] = None,
    quota_waits: Annotated[int, typer.Option(min=1, help="How many such waits.")] = 1,
    progress_every: Annotated[
        float, typer.Option(min=0.1, callback=_finite, help="Seconds between progress lines.")
    ] = 5.0,
    max_spend: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            callback=_finite,
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
    output_tokens: Annotated[int | None, typer.Option(min=1, help=_OUTPUT_TOKENS_HELP)] = None,
) -> None:
    """Send every pending call of an experiment, store the responses, score them as they land.

    Running it again resumes: it sends exactly the calls that have no stored answer. Exit
    status 0 when every request asked for is complete (the grid, or with --limit the
    limit's), 3 when calls are left (quota, errors, the spending cap), 2 when the pre-flight
    or the set-up fails, 130 on Ctrl-C and 143 on SIGTERM (everything stored is kept).
    """
    from runner.experiment import load_experiment

    experiment = _experiment_given(experiment, "run")
    report = _run_in_view(
        load_experiment(experiment),
        experiment,
        address=address,
        wait_on_quota=wait_on_quota,
        quota_waits=quota_waits,
        progress_every=progress_every,
        max_spend=max_spend,
        limit=limit,
        preflight=preflight,
        output_tokens=output_tokens,
    )
    if not report.done:
        raise typer.Exit(code=3)


@app.command("check")
def check_experiment(
    experiment: Annotated[
        Path,
        typer.Argument(
            help="The experiment file (TOML), or a store whose last run names its file."
        ),
    ],
    output_tokens: Annotated[int | None, typer.Option(min=1, help=_OUTPUT_TOKENS_HELP)] = None,
    max_spend: Annotated[
        float | None,
        typer.Option(min=0.0, callback=_finite, help="Say whether the estimate fits this cap."),
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
    from runner.check import check, check_lines, note_real_calls, stored_state
    from runner.experiment import load_experiment
    from runner.plan import prepare

    loaded = load_experiment(_experiment_given(experiment, "check"))
    questions = prepare(loaded)
    noted, ignored = read_calls(loaded.store)
    if ignored is not None:
        _echo(ignored)
    stored, left = stored_state(loaded)
    report = asyncio.run(
        check(
            loaded, questions, stored, stated_output=output_tokens, accounts=noted, left=left,
            limit=limit,
        )
    )  # fmt: skip
    for line in check_lines(report, max_spend):
        _echo(line)
    unnoted = note_real_calls(loaded, report)
    if unnoted is not None:
        _echo(unnoted)
    if not report.ok:
        raise typer.Exit(code=1)


def _run_in_view(
    experiment: Experiment,
    where: Path,
    *,
    address: str | None = None,
    wait_on_quota: float | None = None,
    quota_waits: int = 1,
    progress_every: float = 5.0,
    max_spend: float | None = None,
    limit: int | None = None,
    preflight: bool = True,
    output_tokens: int | None = None,
) -> RunReport:
    """Run with the live monitor in front on a terminal, plain progress lines otherwise."""
    from runner.distributed import RunOptions, run_experiment  # Ray loads only for a run
    from runner.monitor import render
    from runner.summary import summary_lines

    options = RunOptions(
        address=address,
        wait_on_quota_s=wait_on_quota,
        max_quota_waits=quota_waits,
        progress_every_s=progress_every if not console.is_terminal else min(progress_every, 1.0),
        max_spend=max_spend,
        limit=limit,
        preflight=preflight,
        output_tokens=output_tokens,
    )
    try:
        if not console.is_terminal:
            return run_experiment(experiment, options, echo=_echo, experiment_file=where)
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            report = run_experiment(
                experiment,
                options,
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
        bounds = (f" --limit {limit}" if limit is not None else "") + (
            f" --max-spend {max_spend:g}" if max_spend is not None else ""
        )
        typer.echo(
            f"groundbench: {stopped}; everything stored is kept: run `groundbench run {where}"
            f"{bounds}` again to resume",
            err=True,
        )
        raise typer.Exit(code=TERMINATED_STATUS if terminated() else 130) from None


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
    from runner.demo import prepare, prepare_boxes
    from runner.experiment import load_experiment

    if benchmark is None:
        path, out = prepare(folder, images, per_source), folder / "report"
    else:
        path, out = prepare_boxes(folder, benchmark, questions), folder / f"report-{benchmark}"
    console.print(f"experiment {path} (edit it, or run it with `groundbench run`)", soft_wrap=True)
    experiment = load_experiment(path)
    result = _run_in_view(experiment, path, progress_every=2.0)
    if benchmark is None:  # the report's re-scored tables read what this writes
        rescore(experiment.store)
    report(experiment.store, out=out, html=out / "html", images=None)
    _screenshot(out / "html" / "index.html")
    if not result.complete:
        raise typer.Exit(code=3)


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
        float, typer.Option(min=0.2, callback=_finite, help="Seconds between readings.")
    ] = 2.0,
) -> None:
    """Attach the live monitor to a run started elsewhere (another terminal, `ray job submit`);
    it ends when the run does."""
    from runner.distributed import watch_run
    from runner.experiment import load_experiment
    from runner.monitor import echoing, render

    loaded = load_experiment(_experiment_given(experiment, "monitor"))
    if console.is_terminal:
        with Live(console=console, refresh_per_second=4) as live:
            watch_run(loaded, address, every, lambda view: live.update(render(view)))
    else:
        watch_run(loaded, address, every, echoing(_echo))
    console.print("the run has ended", soft_wrap=True)


@app.command()
def sql(
    store: Annotated[
        Path, typer.Argument(help="The experiment file (TOML) or its store (DuckDB file).")
    ],
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

    store = _store_given(store)
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
        table.add_row(*(_shown(v) for v in row))
    print_whole(console, table)
    console.print(f"{len(rows):,} rows")


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
    from runner.batch import ENDED
    from runner.experiment import load_experiment

    experiment: Experiment | None = None
    if cancel:  # only the experiment names each backend's key variable and address
        experiment = load_experiment(_experiment_given(source, "batches --cancel"))
    recorded = _recorded_batches(_store_given(source) if experiment is None else experiment.store)
    if not cancel:
        _batch_table(recorded)
        return
    assert experiment is not None
    cancellable = [
        b
        for b in recorded
        if b.open and b.remote_id and b.phase != "ended" and b.state not in ENDED
    ]
    if not cancellable:
        console.print(f"no open batch in {experiment.store} to cancel", soft_wrap=True)
        return
    outcomes = asyncio.run(_cancel_batches(experiment, cancellable))
    failed = sum(remote is None for _, remote in outcomes)
    cancelled = [(b, remote) for b, remote in outcomes if remote is not None]
    if cancelled:
        _record_cancels(experiment.store, cancelled)
    if failed:
        raise typer.Exit(code=1)


def _sources(asked: list[str] | None) -> tuple[str, ...]:
    """The sources a command was asked for (repeated --source), all three by default."""
    from conditions import SOURCE_NAMES

    sources = tuple(asked) if asked else SOURCE_NAMES
    unknown = [s for s in sources if s not in SOURCE_NAMES]
    if unknown:
        raise typer.BadParameter(f"unknown source {unknown[0]!r}; known: {', '.join(SOURCE_NAMES)}")
    return sources


def _store_given(path: Path) -> Path:
    """The store a command reads, given the experiment file or the store; what was resolved
    said on stderr (stdout may be a query's CSV)."""
    from runner._target import store_for

    store, said = store_for(path)
    if said is not None:
        typer.echo(said, err=True)
    return store


def _experiment_given(path: Path, command: str) -> Path:
    """The experiment file ``command`` needs, given it or a store that names it; what was
    resolved said on stderr."""
    from runner._target import experiment_for

    experiment, said = experiment_for(path, command)
    if said is not None:
        typer.echo(said, err=True)
    return experiment


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
            Text(_server_text(b.provider_state or b.state or "")),  # Text: no markup read
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
    return "" if all(v is None for v in values) else "/".join(_shown(v) for v in values)


async def _cancel_batches(
    experiment: Experiment, cancellable: list[BatchRecord]
) -> list[tuple[BatchRecord, RemoteBatch | None]]:
    """Cancel each batch at its provider, one line each; ``None`` where it failed or was
    refused. Its key is the experiment's backend's, sent only to that backend's base_url."""
    import aiohttp

    from runner.backends import CallError, OffOrigin, key_from_env, what_to_do
    from runner.batch import batch_api

    outcomes: list[tuple[BatchRecord, RemoteBatch | None]] = []
    async with aiohttp.ClientSession() as session:
        for b in cancellable:
            assert b.remote_id is not None
            remote: RemoteBatch | None = None
            key: ApiKey | None = None
            try:
                target = _cancel_target(experiment, b)
                key = key_from_env(target.key_variable)
                api = batch_api(
                    session, target.provider, b.model, b.base_url, key, origin=target.origin
                )
                remote = await api.cancel(b.remote_id)
            except OffOrigin as exc:  # nothing was sent: the line says both addresses
                line = exc.message
            except CallError as exc:
                if exc.status is None and exc.kind == "transient" and _loopback(b.base_url):
                    line = (
                        f"cannot reach {b.base_url}: the simulator that held it ended with its run"
                    )
                else:
                    line = f"{exc}; {what_to_do(exc.kind, exc.status, exc.code)}"
            except RunnerError as exc:
                line = str(exc)
            else:
                line = _server_text(remote.provider_state, key)
            _echo(f"batch {b.id} ({_server_text(b.remote_id, key)}): {line}")
            outcomes.append((b, remote))
    return outcomes


@dataclass(frozen=True)
class _CancelTarget:
    """Where a batch's cancel goes and with which key: the experiment's backend's."""

    provider: Provider
    key_variable: str
    origin: Origin


def _cancel_target(experiment: Experiment, batch: BatchRecord) -> _CancelTarget:
    """The experiment's backend of ``batch``: its provider, key variable and origin. A store
    names a variable or an address only to be checked against the experiment's, never used.

    Raises
    ------
    ConfigError
        The experiment has no such backend, or names another provider or key variable than
        the store recorded, or its backend is the run's own simulator (gone with its run).
    OffOrigin
        The store records the batch at another origin than the backend's base_url.
    """
    from runner.backends import configured_origin, provider_named

    spec = experiment.backends.get(batch.backend)
    if spec is None:
        raise ConfigError(
            f"the experiment has no backend {batch.backend}, so no key or address for it; "
            "cancel it at the provider"
        )
    if spec.simulated:
        raise ConfigError("made on a run's own simulator, which ended with its run")
    if batch.provider != spec.provider:
        raise ConfigError(
            f"recorded for provider {batch.provider}, but backend {batch.backend} is "
            f"{spec.provider} in the experiment; cancel it at the provider"
        )
    provider = provider_named(spec.provider)
    variable = spec.api_key_env or provider.key_variable
    if batch.api_key_env is not None and batch.api_key_env != variable:
        raise ConfigError(
            f"the store names key variable {batch.api_key_env}, but backend {batch.backend} "
            f"reads {variable} in the experiment: only the experiment's is read; if the store's "
            "is right, set api_key_env to it"
        )
    origin = configured_origin(f"backend {batch.backend}", spec.base_url or provider.base_url)
    origin.check(batch.base_url)
    return _CancelTarget(provider, variable, origin)


def _server_text(text: str, key: ApiKey | None = None) -> str:
    """A text a server gave, as the ledger may hold it (uncut, from an older version), shown
    as one short line, the key (where it was read) and anything key-shaped redacted."""
    from runner.backends import one_line

    return one_line(text, key, limit=80)


def _loopback(url: str) -> bool:
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


def _record_cancels(store: Path, cancelled: list[tuple[BatchRecord, RemoteBatch]]) -> None:
    """The providers' new states, in the store if no run holds it (the next run reads them from
    the providers anyway)."""
    from runner.store import Store, StoreError

    try:
        with Store(store, lock_wait_s=0) as writable:
            for b, remote in cancelled:
                writable.update_batch(
                    b.id, state=remote.state, provider_state=remote.provider_state
                )
    except StoreError as exc:
        _echo(f"the new states are not recorded ({exc}); the next run reads them")


@app.command()
def rescore(
    store: Annotated[
        Path, typer.Argument(help="The experiment file (TOML) or its store (after a run).")
    ],
) -> None:
    """Score every stored polygon answer against the other references, sending no call: G_N
    at each of the 8 sampling phases, the unreduced part, the union of all parts, and the
    continuous-area IoU. Answers already re-scored are skipped: running it again writes
    nothing."""
    from runner.rescore import rescore as rescore_store
    from scoring import REFERENCES

    store = _store_given(store)
    if console.is_terminal:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("re-scoring", total=None)
            done = rescore_store(
                store, progress=lambda k, total: bar.update(task, completed=k, total=total)
            )
    else:
        done = rescore_store(store)
    console.print(
        f"re-scored {done.rescored:,} answers against {len(REFERENCES)} references "
        f"({done.rows:,} rows); {done.already:,} already done"
        + (f"; {done.unparsed:,} no longer parse" if done.unparsed else ""),
        soft_wrap=True,
    )


@app.command()
def report(
    store: Annotated[
        Path, typer.Argument(help="The experiment file (TOML) or its store (after a run).")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write every table as Markdown, CSV (one number a column; missing: an "
            "empty cell) and LaTeX, every cell's figures as results.csv and results.parquet, "
            "and the figures as PNG (300 dpi), PDF and SVG."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write the report as HTML into this folder: index.html (every table, "
            "the figures, galleries of each cell's answers drawn over their images) and a page "
            "per question under q/ with all its attempts side by side. Self-contained: open "
            "index.html from disk, nothing is fetched.",
        ),
    ] = None,
    images: Annotated[
        Path | None,
        typer.Option(
            help="The cohort's images folder for --html [default: the one the store's last "
            "run used]."
        ),
    ] = None,
) -> None:
    """The paper's Tables 1–5 from a store (incomplete cells marked *), the analyses behind
    its text (rank stability, the subdivision slice, the phase audit, alternate references,
    the §4 findings as verdicts) and its figures; for a box benchmark's store, that
    benchmark's main table. A table with no rows is left out with a line saying why. With
    --html, all of it as a web page too, with every answer drawn over its image.

    Nothing printed is cut: on a terminal a table too wide is split (fixed and parseable-only
    apart, then parts that repeat the row labels), never a number or a word; piped or
    redirected, each table is drawn at its own width (rows whole up to 240 characters, long
    prose wrapped at spaces beyond)."""
    from conditions import holds_box_set
    from runner._tables import print_whole
    from runner.reports import (
        FORMATS,
        SUFFIX,
        all_tables,
        fitting_table,
        load_box_report,
        load_report_data,
        omitted_note,
        render,
        shown_and_omitted,
        write_figures,
        write_results,
    )
    from runner.store import reading

    store = _store_given(store)
    for folder, option in ((html, "--html"), (out, "--out")):
        if folder is not None:  # refused now, not after every table is printed
            check_folder(folder, option)
    with reading(store, _snapshot_of_run) as source:
        _say_snapshot(source)
        with source.open() as con:
            if holds_box_set(con):
                tables, data = [load_box_report(con, store).table()], None
            else:
                data = load_report_data(con, store)
                tables = all_tables(data)
        tables, omitted = shown_and_omitted(tables)
        for table in tables:
            print_whole(console, fitting_table(table, console))
        for table in omitted:
            console.print(
                omitted_note(table),
                soft_wrap=not console.is_terminal, markup=False, highlight=False,
            )  # fmt: skip
        if html is not None:
            _write_html(store, html, images, source)
    if out is None:
        return
    with writing_into(out, "--out"):
        out.mkdir(parents=True, exist_ok=True)
        for table in omitted:  # an earlier report's files of it would now read as this store's
            for kind in FORMATS:
                (out / f"{table.name}.{SUFFIX[kind]}").unlink(missing_ok=True)
        for table in tables:
            for kind in FORMATS:
                write_whole(out / f"{table.name}.{SUFFIX[kind]}", render(table, kind))
        figures = write_figures(data, out) if data is not None else []
        tidy = write_results(data, out) if data is not None else []
    console.print(
        f"wrote {len(tables) * len(FORMATS)} table files, {len(figures)} figure files"
        + (f" and {' and '.join(p.name for p in tidy)} (every cell, long format)" if tidy else "")
        + f" to {out}",
        soft_wrap=True,
    )


def _screenshot(index: Path) -> None:
    """A picture of the HTML report as a browser shows it, beside it, where Chromium is
    installed; a line saying why not otherwise (the report itself is written either way)."""
    from runner.pages._browser import BrowserError, check_page, find_chromium

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


def _snapshot_of_run(store: Path) -> Held:
    """A snapshot from the run that holds ``store`` (Ray is imported only then)."""
    from runner.distributed import snapshot_running_store

    return snapshot_running_store(store)


def _say_snapshot(source: Reading) -> None:
    """One line where a report reads a run's snapshot, not the store itself."""
    if source.said is not None:
        console.print(source.said, soft_wrap=True, markup=False, highlight=False)


def _write_html(store: Path, out: Path, images: Path | None, source: Reading) -> None:
    """The HTML report, with a progress bar over its question pages on a terminal; one line
    saying what it wrote, how big and how long."""
    from runner.pages import write_html_report

    started = time.monotonic()
    with writing_into(out, "--html"):
        if console.is_terminal:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task("question pages", total=None)
                done = write_html_report(
                    store, out, images=images, reading=source,
                    progress=lambda k, total: bar.update(task, completed=k, total=total),
                )  # fmt: skip
        else:
            done = write_html_report(store, out, images=images, reading=source)
    console.print(
        f"wrote the HTML report to {done.index}: {done.question_pages:,} question pages, "
        f"{done.answers:,} answers, {done.bytes / 1e6:.1f} MB in "
        f"{time.monotonic() - started:.1f} s",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )


@app.command()
def show(
    store: Annotated[
        Path, typer.Argument(help="The experiment file (TOML) or its store (DuckDB file).")
    ],
    qid: Annotated[str, typer.Argument(help="The question, as the cohort names it.")],
    configuration: Annotated[
        str | None, typer.Option(help="The configuration [default: the only one stored for QID].")
    ] = None,
    condition: Annotated[str, typer.Option(help="The condition, e.g. no-image.")] = "base",
    budget: Annotated[
        int | None,
        typer.Option(help="N, or 0 for the box question [default: the only one stored]."),
    ] = None,
    attempt: Annotated[
        int | None, typer.Option(help="The stored attempt [default: the last].")
    ] = None,
    control: Annotated[
        int | None,
        typer.Option(
            help="Draw the box answer (budget 0) with its box-derived control for this N, and G_N."
        ),
    ] = None,
    images: Annotated[
        Path | None,
        typer.Option(help="The images folder [default: the one the store's last run used]."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="The file to write: .png (300 dpi), .svg or .pdf "
            "[default: QID-CONFIGURATION-CONDITION-N-aATTEMPT.png here]."
        ),
    ] = None,
) -> None:
    """Draw one stored answer over its image as the model saw it (its condition's variant):
    the target G_N, the selected source part and the distractors, the answer as scored
    (mapped from 0-999, filled even-odd, vertices numbered, crossings and duplicate vertices
    marked), a legend and a caption with the expression, hint, scores and defect. A missing
    or changed image file is named in the caption."""
    from conditions import BOX
    from runner.overlays import (
        OverlayError,
        Pictures,
        Selection,
        read_answers,
        read_question,
        recorded_images,
    )
    from runner.overlays._caption import NO_BREAK, result
    from runner.overlays._figure import draw_overlay, save_overlay
    from runner.overlays._pick import pick_answer
    from runner.store import reading

    if control is not None and budget not in (None, BOX):
        raise OverlayError(f"--control draws a box answer's control: pass --budget {BOX} or none")
    budget = BOX if control is not None else budget
    store = _store_given(store)
    check_folder(out.parent if out is not None else Path(), "--out", file=True)  # before drawing
    with reading(store, _snapshot_of_run) as source:
        _say_snapshot(source)
        with source.open() as con, tempfile.TemporaryDirectory() as cache:
            question = read_question(con, qid)
            pictures = Pictures(images or recorded_images(con), Path(cache))
            answers = read_answers(con, question, pictures)
            selection = Selection(configuration, condition, budget, attempt)
            answer = pick_answer(answers, selection, qid)
            figure = draw_overlay(question, answer, control=control)
    path = save_overlay(figure, out or Path(_overlay_name(answer)))
    console.print(f"wrote {path}", soft_wrap=True, markup=False, highlight=False)
    scores = result(answer, control=control).replace(NO_BREAK, " ")  # a terminal wraps anyway
    console.print(scores, soft_wrap=True, markup=False, highlight=False)


def _overlay_name(answer: AnswerView) -> str:
    """``qid-configuration-condition-budget-aAttempt.png``, safe as a file name."""
    parts = (answer.qid, answer.configuration, answer.condition, str(answer.budget))
    stem = "-".join(re.sub(r"[^\w.-]+", "_", part) for part in parts)
    return f"{stem}-a{answer.attempt}.png"


def _echo(line: str) -> None:
    """One message: a whole line piped (a log, grep); on a terminal wrapped at its spaces, so
    no word or number is split at the edge."""
    if console.is_terminal:
        console.print(line, markup=False, highlight=False)
        return
    typer.echo(line)
    sys.stdout.flush()


def load_sim_spec(path: Path | None) -> SimSpec:
    """A :class:`SimSpec` from a JSON file (``None``: the defaults).

    Raises
    ------
    ConfigError
        The file is missing or not a valid spec (the message names the file and the field).
    """
    from runner.simulator import SimSpec

    if path is None:
        return SimSpec()
    try:
        return SimSpec.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the simulator spec: {exc.strerror}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None


SHOWN_DIGITS = 6  # significant digits of a float in `sql`'s table; csv and json keep all


def _shown(value: object) -> str:
    """A value as `sql`'s table shows it: a float to :data:`SHOWN_DIGITS` significant digits
    (0.1 + 0.2 reads 0.3, not 0.30000000000000004), never ``-0``; NULL empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "0" if value == 0 else f"{value:.{SHOWN_DIGITS}g}"
    return str(value)


def _points(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}"


def main() -> None:
    """Entry point of the ``groundbench`` console script."""
    try:
        app()
    except Exception as exc:
        line = _one_line(exc)
        if line is None:  # a bug: its traceback stays
            raise
        # Plain echo, not rich: one line however long, never wrapped to the terminal's width.
        typer.echo(f"groundbench: {line}", err=True)
        raise SystemExit(2) from None


def _one_line(exc: Exception) -> str | None:
    """The line an error of the packages below is told in; None for any other (a bug). They
    are imported here, as an error is met, so that --help imports none of them."""
    import duckdb

    from conditions import ConditionsError
    from runner.store import DAMAGED_FILE, first_line
    from scoring import ScoringError

    if isinstance(exc, ScoringError | ConditionsError | RunnerError):
        return str(exc)
    if isinstance(exc, duckdb.Error):  # reading a store that opened but is damaged inside
        line = first_line(exc)
        if DAMAGED_FILE not in line:
            line += "; if its file is damaged, restore it from a copy"
        return f"the store could not be read: {line}"
    return None
