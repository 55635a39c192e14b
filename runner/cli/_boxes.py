"""``groundbench boxes check`` and ``boxes score``: a box benchmark's released file, and answers
to it collected elsewhere, scored as its own code does."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table

from runner.cli._app import boxes_app
from runner.cli._common import BenchmarkName, ConventionName, ReaderName, console


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
