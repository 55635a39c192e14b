"""``groundbench data check``: what a data root holds, missing or malformed, before a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.cli._app import data_app
from runner.cli._common import console, sources_asked


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

    sources = sources_asked(source)
    check = check_data_root(DataRoot.at(root, images), sources)
    print_data_check(console, check, sources)
    if not check.ready:
        raise typer.Exit(code=1)
