"""``groundbench simulate``: the provider simulator served for a store's questions."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner.cli._app import app
from runner.cli._common import store_given

if TYPE_CHECKING:
    from runner.simulator import SimSpec, Simulator


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
    store = store_given(store)
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


def load_sim_spec(path: Path | None) -> SimSpec:
    """A :class:`SimSpec` from a JSON file (``None``: the defaults).

    Raises
    ------
    ConfigError
        The file is missing or not a valid spec (the message names the file and the field).
    """
    from pydantic import ValidationError

    from runner._errors import ConfigError
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
