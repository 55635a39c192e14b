"""``groundbench synth``: synthetic data in the real RefCOCO layout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.cli._app import app
from runner.cli._common import SYNTH_IMAGES, console


@app.command()
def synth(
    out: Annotated[Path, typer.Argument(help="Folder to write the synthetic data root into.")],
    seed: Annotated[int, typer.Option(help="Everything generated follows from it.")] = 0,
    images: Annotated[int, typer.Option(min=10, help="Number of images.")] = SYNTH_IMAGES,
) -> None:
    """Write synthetic data in the real RefCOCO layout (images, instances.json, refs pickles)."""
    from conditions import SynthSpec, generate_synthetic
    from runner._output import check_folder, writing_into

    check_folder(out, "OUT")
    with writing_into(out, "OUT"):
        counts = generate_synthetic(out, SynthSpec(seed=seed, images=images))
    refs = ", ".join(f"{k} {v}" for k, v in counts.items())
    console.print(f"wrote {images} images and refs ({refs}) under {out}", soft_wrap=True)
