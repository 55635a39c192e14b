"""``groundbench cohort build`` and ``cohort summary``: draw a cohort into a store, show one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.cli._app import cohort_app
from runner.cli._common import COHORT_SEED, StoreArgument, console, sources_asked, store_given


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

    sources = sources_asked(source)
    if store.exists():  # a store to make is no file yet; one there may be the experiment's TOML
        store = store_given(store)
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
    store: StoreArgument,
) -> None:
    """Show a cohort: counts per source and bin, thresholds, C_N per budget."""
    from conditions import load_cohort
    from runner._tables import print_whole, summary_tables

    for table in summary_tables(load_cohort(store_given(store))):
        print_whole(console, table)
