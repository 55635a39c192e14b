"""``groundbench rescore``: every stored polygon answer scored against the other references."""

from __future__ import annotations

from rich.progress import Progress

from runner.cli._app import app
from runner.cli._common import RunStoreArgument, console, store_given


@app.command()
def rescore(
    store: RunStoreArgument,
) -> None:
    """Score every stored polygon answer against the other references, sending no call: G_N
    at each of the 8 sampling phases, the unreduced part, the union of all parts, and the
    continuous-area IoU. Answers already re-scored are skipped: running it again writes
    nothing."""
    from runner.rescore import rescore as rescore_store
    from scoring import REFERENCES

    store = store_given(store)
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
