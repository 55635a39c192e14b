"""What several commands share: the console, the defaults ``--help`` shows, the option types,
and the reading of what a command was given (an experiment file or a store)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

if TYPE_CHECKING:
    from runner.store import Held, Reading

console = Console()
BenchmarkName = Literal["ref-adv", "groundingme", "refbench-pro"]
ReaderName = Literal["ref-adv", "groundingme", "refbench-pro", "groundbench"]
ConventionName = Literal["norm999", "norm1000", "unit", "pixels"]
OutputFormat = Literal["table", "csv", "json"]
# Defaults --help shows, written here so that help imports none of the packages the commands
# use (under a second: issue 39); tests/runner/test_cli.py holds each equal to its source.
SYNTH_IMAGES = 2400  # conditions.SynthSpec.images
COHORT_SEED = 0  # conditions.CohortSpec().seed
QUERY_TIMEOUT = 60.0  # runner.store.QUERY_TIMEOUT_S
MAX_QUERY_TIMEOUT = 600.0  # runner.store.MAX_QUERY_TIMEOUT_S
DEMO_IMAGES = 600  # runner.demo.IMAGES
DEMO_PER_SOURCE = 100  # runner.demo.PER_SOURCE
OUTPUT_TOKENS_HELP = (
    "Mean output tokens per call to assume in the estimates [default: measured from the "
    "stored answers, else from the check's call]."
)
# The argument of every command that reads a store: the store, or the experiment that names it.
StoreArgument = Annotated[
    Path, typer.Argument(help="The experiment file (TOML) or its store (DuckDB file).")
]
# ... where the store is read after a run.
RunStoreArgument = Annotated[
    Path, typer.Argument(help="The experiment file (TOML) or its store (after a run).")
]
SHOWN_DIGITS = 6  # significant digits of a float in a table; csv and json keep all


def echo(line: str) -> None:
    """One message: a whole line piped (a log, grep); on a terminal wrapped at its spaces, so
    no word or number is split at the edge."""
    if console.is_terminal:
        console.print(line, markup=False, highlight=False)
        return
    typer.echo(line)
    sys.stdout.flush()


def finite(value: float | None) -> float | None:
    """A number option's value, refused when infinite (its range refuses nan and negatives):
    --max-spend inf was taken as a cap and --every inf as a wait."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def sources_asked(asked: list[str] | None) -> tuple[str, ...]:
    """The sources a command was asked for (repeated --source), all three by default."""
    from conditions import SOURCE_NAMES

    sources = tuple(asked) if asked else SOURCE_NAMES
    unknown = [s for s in sources if s not in SOURCE_NAMES]
    if unknown:
        raise typer.BadParameter(f"unknown source {unknown[0]!r}; known: {', '.join(SOURCE_NAMES)}")
    return sources


def store_given(path: Path) -> Path:
    """The store a command reads, given the experiment file or the store; what was resolved
    said on stderr (stdout may be a query's CSV)."""
    from runner._target import store_for

    store, said = store_for(path)
    if said is not None:
        typer.echo(said, err=True)
    return store


def experiment_given(path: Path, command: str) -> Path:
    """The experiment file ``command`` needs, given it or a store that names it; what was
    resolved said on stderr."""
    from runner._target import experiment_for

    experiment, said = experiment_for(path, command)
    if said is not None:
        typer.echo(said, err=True)
    return experiment


def snapshot_of_run(store: Path) -> Held:
    """A snapshot from the run that holds ``store`` (Ray is imported only then)."""
    from runner.distributed import snapshot_running_store

    return snapshot_running_store(store)


def say_snapshot(source: Reading) -> None:
    """One line where a command reads a run's snapshot, not the store itself."""
    if source.said is not None:
        console.print(source.said, soft_wrap=True, markup=False, highlight=False)


def shown(value: object) -> str:
    """A value as a table shows it: a float to :data:`SHOWN_DIGITS` significant digits
    (0.1 + 0.2 reads 0.3, not 0.30000000000000004), never ``-0``; NULL empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return "0" if value == 0 else f"{value:.{SHOWN_DIGITS}g}"
    return str(value)
