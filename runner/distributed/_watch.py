"""Reading a run for its live view: the store's progress and cells, each backend's counters;
shown by the driver as it runs (:class:`LiveView`), or from another process (:func:`watch_run`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runner._errors import RunnerError
from runner._names import NAMESPACE, actor_name, run_tag
from runner.distributed import _ray
from runner.distributed._address import RunAddress, read_note
from runner.distributed._store_actor import StoreClosed
from runner.distributed._worker import WorkerStats
from runner.estimate import Limited
from runner.experiment import Experiment
from runner.monitor import Sample, Snapshot, snapshot


async def read_run(store: Any, backends: Mapping[str, Any]) -> Sample:
    """One :class:`Sample` from a run's store actor and backend actors (by backend name).

    A backend actor that cannot answer (being replaced, or already gone) reads as ``None``.
    """
    progress, cells = await asyncio.gather(store.progress.remote(), store.cells.remote())
    names = list(backends)
    stats = await asyncio.gather(*(_stats(backends[n]) for n in names), return_exceptions=True)
    return Sample(
        at=time.monotonic(),
        progress=progress,
        cells=cells,
        backends={
            n: s if isinstance(s, WorkerStats) else None for n, s in zip(names, stats, strict=True)
        },
    )


class LiveView:
    """The live view of the run this process drives: a sample shown every so often, with the
    rates since the one before."""

    def __init__(
        self,
        store: Any,
        backends: Callable[[], Mapping[str, Any]],
        experiment: Experiment,
        show: Callable[[Snapshot], object],
        begun: float,
        limited: Limited | None = None,
    ) -> None:
        self._store = store
        self._backends = backends  # asked each time: a restarted backend has a new actor
        self._prices = {name: b.prices for name, b in experiment.backends.items()}
        self._show = show
        self._begun = begun
        self._limited = limited  # --limit: its requests are the run's totals
        self._first: Sample | None = None  # the ETA's rate is the one achieved since
        self._last: Sample | None = None

    async def every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            await self.once()

    async def once(self) -> None:
        now = await read_run(self._store, self._backends())
        view = snapshot(
            now, self._last, self._begun, self._prices, since=self._first, limited=self._limited
        )
        self._show(view)
        self._first = self._first or now
        self._last = now


async def _stats(handle: Any) -> WorkerStats | None:
    if handle is None:
        return None
    stats: WorkerStats = await asyncio.wait_for(
        asyncio.wrap_future(handle.stats.remote().future()), 5.0
    )
    return stats


def watch_run(
    experiment: Experiment, address: str | None, every_s: float, show: Callable[[Snapshot], object]
) -> None:
    """Show a run started elsewhere every ``every_s`` until it ends.

    The cluster is ``address`` if given, else the one the run noted beside its store
    (:func:`_ray.attach`).

    Raises
    ------
    RunnerError
        No run of this experiment is going, or its cluster cannot be joined.
    """
    note = _ray.attach(experiment.store, address)
    namespace = note.namespace if note is not None else NAMESPACE
    tag = run_tag(experiment.store)
    store = _ray.named_actor(actor_name(tag, "store"), namespace)
    if store is None:
        raise RunnerError(
            f"{experiment.store}: no run of this experiment is going on the Ray cluster "
            f"reached ({_ray.cluster_address()}); `groundbench run` starts one"
        )
    prices = {name: b.prices for name, b in experiment.backends.items()}

    async def loop() -> None:
        begun = time.monotonic()
        before: Sample | None = None
        first: Sample | None = None  # the ETA's rate is the one achieved since
        while not _ended(experiment.store, note):
            backends = {
                n: _ray.named_actor(actor_name(tag, f"backend-{n}"), namespace)
                for n in experiment.backends
            }
            try:
                now = await asyncio.wait_for(read_run(store, backends), READ_WAIT_S)
                limited = await asyncio.wait_for(_limited(store), READ_WAIT_S)
            except TimeoutError:
                if _ended(experiment.store, note):
                    return
                raise RunnerError(
                    f"{experiment.store}: the run's Ray cluster gave no sample for "
                    f"{READ_WAIT_S:g} s; `groundbench monitor` again once it answers"
                ) from None
            except Exception as exc:
                if _ray.is_gone(exc, StoreClosed):  # the run ended: its store is closed or gone
                    return
                raise
            show(snapshot(now, before, begun, prices, since=first, limited=limited))
            first = first or now
            before = now
            await asyncio.sleep(every_s)

    asyncio.run(loop())


# A sample takes well under a second; a run's local Ray goes away with it, and a call in
# flight then would wait a minute for the cluster before the process is killed.
READ_WAIT_S = 15.0


def _ended(store: Path, note: RunAddress | None) -> bool:
    """Whether the run followed has ended: it removes its note as it starts to end, before
    it closes its store or stops a local Ray (watching a given address, no note to follow)."""
    return note is not None and read_note(store) != note


async def _limited(store: Any) -> Limited | None:
    """--limit's totals, which the run told its store actor (None: the grid's, or a run of an
    earlier groundbench, whose store actor keeps none)."""
    try:
        method = store.limited
    except AttributeError:
        return None
    result: Limited | None = await method.remote()
    return result
