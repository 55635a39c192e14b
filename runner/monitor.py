"""The live view of a run: what each backend is doing, how far each cell is, when it will end.

Plain Python over what the store and the backend actors report; :class:`Snapshot` is built from
two consecutive samples (for rates), :func:`render` draws it with rich, :func:`plain_lines`
writes it as lines for a log when there is no terminal (:func:`echoing`, line by line). The run's
closing text is :mod:`runner.summary`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from runner._fit import Column, fitted
from runner._port import Stop, StopKind
from runner.batch import OpenBatch
from runner.estimate import Limited, eta_s
from runner.experiment import Prices
from runner.store import CellProgress, Progress

if TYPE_CHECKING:  # the worker's package imports this module for its driver
    from runner.distributed._worker import WorkerStats


@dataclass(frozen=True)
class Sample:
    """What was read at one moment: store progress, cells, backend counters."""

    at: float  # monotonic seconds
    progress: Sequence[Progress]
    cells: Sequence[CellProgress]
    backends: Mapping[str, WorkerStats | None]  # None: the actor gave nothing (restarting)


@dataclass(frozen=True)
class BackendView:
    """One backend's counters since its worker started, and its rates since the last sample.

    Each request takes one or more attempts, each attempt one or more HTTP calls (a failure
    retried within the attempt is another call): ``calls_sent`` ≥ attempts ≥ ``finished``.
    """

    name: str
    requests_per_s: float  # requests finished per second
    tokens_per_min: float
    in_flight: int
    ceiling: int  # the most calls admitted in flight now (lowered on a throttle)
    spend: float  # from the configured prices
    calls_sent: int = 0  # HTTP calls: every try of every attempt
    answered: int = 0  # attempts that got an answer
    finished: int = 0  # requests whose attempts ended
    throttled: int = 0  # 429s met (each pauses the backend)
    transient_retried: int = 0  # transient failures tried again within their attempt
    transient_ended: int = 0  # attempts that a transient failure ended (stored as errors)
    reachable: bool = True
    stop: Stop | None = None  # what stopped it (spent quota, a refusal), if anything did
    batch: bool = False  # in batch mode: spend at the batch price; no HTTP rates
    batches: tuple[OpenBatch, ...] = ()  # its batches open now
    saved: float = 0.0  # what the batch price saved against the online one


@dataclass(frozen=True)
class Snapshot:
    elapsed_s: float
    backends: tuple[BackendView, ...]
    cells: tuple[CellProgress, ...]
    requests: int
    complete: int
    errored: int
    rate: float | None  # requests completed per second since the last sample
    eta_s: float | None
    notes: tuple[str, ...] = field(default=())


def snapshot(
    now: Sample,
    before: Sample | None,
    begun: float,
    prices: Mapping[str, Prices],
    *,
    since: Sample | None = None,
    limited: Limited | None = None,
) -> Snapshot:
    """The view at ``now``; rates come from the change since ``before``, the ETA from the
    rate achieved since ``since`` (the first sample; default ``before``) over what is left.
    ``limited``: the run sends only ``--limit``'s requests, which are its totals."""
    grid_complete = sum(p.complete for p in now.progress)
    requests = sum(p.requests for p in now.progress)
    complete = grid_complete
    if limited is not None:
        requests, complete = limited.total, limited.complete(grid_complete)
    errored = sum(p.errored for p in now.progress)
    span = (now.at - before.at) if before is not None else 0.0
    rate = None
    if before is not None and span > 0:
        rate = (grid_complete - sum(p.complete for p in before.progress)) / span
    start = since if since is not None else before
    eta = None
    if start is not None:
        done = grid_complete - sum(p.complete for p in start.progress)
        eta = eta_s(requests - complete, done, now.at - start.at)
    elif requests == complete:
        eta = 0.0
    views = []
    for name, stats in sorted(now.backends.items()):
        old = before.backends.get(name) if before is not None else None
        views.append(_backend_view(name, stats, old, span, prices.get(name, Prices())))
    return Snapshot(
        elapsed_s=now.at - begun,
        backends=tuple(views),
        cells=tuple(now.cells),
        requests=requests,
        complete=complete,
        errored=errored,
        rate=rate,
        eta_s=eta,
    )


def _backend_view(
    name: str, stats: WorkerStats | None, old: WorkerStats | None, span: float, prices: Prices
) -> BackendView:
    if stats is None:
        return BackendView(
            name=name, requests_per_s=0.0, tokens_per_min=0.0, in_flight=0, ceiling=0, spend=0.0,
            reachable=False,
        )  # fmt: skip
    tally = stats.tally
    per_s = tokens = 0.0
    if old is not None and span > 0:
        grown = tally.since(old.tally)
        per_s = grown.finished / span
        tokens = 60.0 * (grown.input_tokens + grown.output_tokens) / span
    online = tally.spent(prices.cost)
    spend = tally.spent(prices.batch_cost) if stats.batch else online
    return BackendView(
        name=name,
        requests_per_s=max(per_s, 0.0),
        tokens_per_min=max(tokens, 0.0),
        in_flight=stats.in_flight,
        ceiling=stats.ceiling,
        spend=spend,
        batch=stats.batch,
        batches=stats.batches,
        saved=online - spend,
        calls_sent=tally.http_calls,
        answered=tally.answered,
        finished=tally.finished,
        throttled=stats.limiter.throttles,
        transient_retried=tally.transient_retried,
        transient_ended=tally.transient_ended,
        stop=stats.stop,
    )


MAX_CELLS = 24  # the paper's grid has ~100 cells: a terminal shows the ones moving


def render(view: Snapshot, max_cells: int = MAX_CELLS) -> RenderableType:
    """The run as rich tables: the totals (progress and ETA) first, then backends, then cells
    with progress bars.

    Cells being worked on come first, then those waiting, then finished ones, ``max_cells`` at
    most and fewer when the screen is shorter (:class:`_Fitted`); the rest are counted below
    the table. The tables fit the screen's width without breaking a name or a number
    (:func:`_group`).
    """
    return _Fitted(view, max_cells)


@dataclass(frozen=True)
class _Fitted:
    """The view cut to the screen: rich's live display crops what is taller than the terminal
    from the bottom, which at 80×24 took the progress/ETA line with it. The totals come first
    and cells are left out (and counted) until the whole fits the screen's height."""

    view: Snapshot
    max_cells: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        height = options.height or options.size.height
        shown = min(self.max_cells, len(self.view.cells))
        while True:
            group = _group(self.view, shown, options.max_width, console)
            overflow = len(console.render_lines(group, options.update(height=None))) - height
            if overflow <= 0 or shown == 0:
                yield group
                return
            shown = max(shown - overflow, 0)  # each cell takes at least one line


@dataclass(frozen=True)
class _Spec:
    """One of the view's tables before it is laid out: ``labels`` columns name a row."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[RenderableType, ...], ...]
    labels: int
    caption: str | None = None


def _group(view: Snapshot, max_cells: int, width: int, console: Console) -> Group:
    """The totals line and the tables, in the wide layout (rules, every header, the rates,
    20-character bars) where each table fits ``width`` whole, else the narrow one (no rules,
    short headers, short bars), a table still too wide in parts that repeat its row names.
    Names, counts and headers' words are never folded (``transien`` / ``t``)."""
    for narrow in (False, True):
        specs = [_backends(view, narrow)]
        if any(b.batches for b in view.backends):
            specs.append(_batches(view, narrow))
        specs.append(_cells(view, max_cells, narrow))
        laid = [_laid_out(spec, narrow, width, console) for spec in specs]
        if narrow or all(len(tables) == 1 for tables in laid):
            break
    return Group(Text(summary_line(view)), *(t for tables in laid for t in tables))


def _laid_out(spec: _Spec, narrow: bool, width: int, console: Console) -> list[Table]:
    def new_table(i: int, parts: int) -> Table:
        title = spec.title if i == 0 else f"{spec.title} (continued)"
        return _table(title, narrow, spec.caption if i == parts - 1 else None)

    return fitted(spec.columns, spec.rows, spec.labels, width, console, new_table)


def _batches(view: Snapshot, narrow: bool) -> _Spec:
    """Each open batch of the batch-mode backends: its state, its lines done, its age."""
    columns = tuple(
        Column(c, "left" if c in ("backend", "batch", "state") else "right")
        for c in ("backend", "batch", "state", "done", "failed", "requests", "age")
    )
    rows = tuple(
        (b.name, o.id, o.state, _count(o.succeeded), _count(o.failed), f"{o.requests:,}",
         _duration(o.age_s))
        for b in view.backends
        for o in b.batches
    )  # fmt: skip
    return _Spec("Open batches", columns, rows, labels=2)


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _table(title: str, narrow: bool, caption: str | None = None) -> Table:
    """Narrow, a table goes without rules (columns two spaces apart): 80 columns then hold
    every column whole."""
    return Table(
        title=title,
        caption=caption,
        expand=False,
        box=None if narrow else box.HEAVY_HEAD,
        pad_edge=not narrow,
        header_style="bold underline" if narrow else "table.header",
    )


# A stopped backend's quota cell, narrow and wide: a worker stops for these three (the
# spending cap stops the feeder, not a worker; the summary tells it).
_STOP_CELLS: dict[StopKind, tuple[str, str]] = {
    "quota": ("SPENT", "EXHAUSTED"),
    "refused": ("REFUSED", "KEY/MODEL REFUSED"),
    "driver": ("NO DRIVER", "LIFELINE BROKE"),
}


def _backends(view: Snapshot, narrow: bool = False) -> _Spec:
    headers = [(short if narrow else column, column) for column, short in _BACKEND_COLUMNS]
    columns = tuple(
        Column(header, "left" if column in ("backend", "quota") else "right")
        for header, column in headers
        if header is not None
    )
    rows = []
    for b in view.backends:
        quota: str | Text = "—"
        if b.stop is not None and b.stop.kind in _STOP_CELLS:  # stopped: quota, key or model
            short, word = _STOP_CELLS[b.stop.kind]
            quota = Text(short if narrow else word, style="bold red")
        rates = [] if narrow else [f"{b.requests_per_s:,.1f}", f"{b.tokens_per_min:,.0f}"]
        rows.append(
            (
                b.name if b.reachable else f"{b.name} (restarting)",
                *rates,
                "batch" if b.batch else f"{b.in_flight}/{b.ceiling}",
                f"{b.calls_sent:,}",
                f"{b.answered:,}",
                f"{b.finished:,}",
                f"{b.throttled:,}",
                f"{b.transient_retried:,}",
                f"{b.transient_ended:,}",
                quota,
                f"{b.spend:,.2f}",
            )
        )
    return _Spec("Backends", columns, tuple(rows), labels=1)


def _cells(view: Snapshot, max_cells: int, narrow: bool) -> _Spec:
    ordered = sorted(view.cells, key=_cell_order)
    shown, hidden = ordered[:max_cells], ordered[max_cells:]
    caption = None
    if hidden:
        done = sum(c.complete == c.requests for c in hidden)
        caption = f"and {len(hidden)} more cells: {done} complete, {len(hidden) - done} waiting"
    columns = tuple(
        Column(short if narrow else column, "left" if column in _CELL_NAMES else "right")
        for column, short in _CELL_COLUMNS
    )
    rows = tuple(
        (
            c.configuration,
            c.condition,
            "box" if c.budget == 0 else str(c.budget),
            ProgressBar(total=max(c.requests, 1), completed=c.complete, width=6 if narrow else 20),
            f"{c.complete:,}",
            f"{c.requests - c.complete:,}",
            f"{c.errored:,}",
            _maybe(c.parse_rate),
            _maybe(c.fixed_iou),
        )
        for c in shown
    )
    return _Spec("Cells (IoU2, settled questions)", columns, rows, labels=2, caption=caption)


_BACKEND_COLUMNS = (("backend", "backend"), ("req/s", None), ("tokens/min", None),
                    ("in flight", "flight"), ("HTTP calls", "calls"), ("answered", "answ"),
                    ("finished", "done"), ("429s", "429s"), ("transient retried", "retried"),
                    ("transient ended", "ended"), ("quota", "quota"), ("spend $", "$"))  # fmt: skip
_CELL_COLUMNS = (("configuration", "config"), ("condition", "condition"), ("N", "N"),
                 ("progress", ""), ("done", "done"), ("pending", "left"),
                 ("errored", "err"), ("parse %", "parse%"), ("fixed IoU", "IoU"))  # fmt: skip
"""The tables' columns: header, and header in the narrow layout. None: not there, for 80
columns to hold the counts whole; the totals line gives the run's requests/s."""
_CELL_NAMES = ("configuration", "condition")


def _cell_order(c: CellProgress) -> tuple[int, str, str, int]:
    state = 0 if 0 < c.complete < c.requests else 1 if c.complete == 0 else 2
    return (state, c.configuration, c.condition, c.budget)


def summary_line(view: Snapshot) -> str:
    share = 100.0 * view.complete / view.requests if view.requests else 100.0
    parts = [
        f"[{view.elapsed_s:7.1f} s] {view.complete:,}/{view.requests:,} requests complete "
        f"({share:.1f}%)",
        f"{view.errored:,} errored",
    ]
    if view.rate is not None:
        parts.append(f"{view.rate:,.1f} requests/s")
    parts.append(f"ETA {_duration(view.eta_s)}")
    throttled = sum(b.throttled for b in view.backends)
    parts.append(f"{throttled:,} throttled (429)")
    spent = [b.name for b in view.backends if _why(b, "quota")]
    if spent:
        parts.append(f"quota exhausted: {', '.join(spent)}")
    refused = [b.name for b in view.backends if _why(b, "refused")]
    if refused:
        parts.append(f"key or model refused: {', '.join(refused)}")
    return " · ".join(parts)


def echoing(echo: Callable[[str], object]) -> Callable[[Snapshot], None]:
    """Show each snapshot through ``echo`` as a log, no terminal: the totals line, and a
    backend's lines only when its figures changed since it was last shown
    (:class:`ChangedLines`)."""
    changed = ChangedLines()

    def show(view: Snapshot) -> None:
        for line in changed(view):
            echo(line)

    return show


class ChangedLines:
    """:func:`plain_lines` for successive snapshots of one run, a backend's lines left out
    while its figures stay as last shown: a finished or stalled backend is shown once, not
    every few seconds. The totals line is always there (the run's heartbeat). A batch's age
    alone is no change."""

    def __init__(self) -> None:
        self._shown: dict[str, tuple[str, ...]] = {}

    def __call__(self, view: Snapshot) -> list[str]:
        lines = [summary_line(view)]
        for b in view.backends:
            figures = tuple(_backend_lines(b, ages=False))
            if self._shown.get(b.name) != figures:
                self._shown[b.name] = figures
                lines += _backend_lines(b)
        return lines


def plain_lines(view: Snapshot) -> list[str]:
    """The snapshot for a log: the summary, then one line per backend (and per open batch)."""
    return [summary_line(view), *(line for b in view.backends for line in _backend_lines(b))]


def _why(b: BackendView, kind: StopKind) -> str | None:
    """The words of what stopped ``b``, if it stopped for ``kind``."""
    return b.stop.why if b.stop is not None and b.stop.kind == kind else None


def _stop_note(b: BackendView) -> str:
    """What stopped ``b``, at the end of its log line."""
    if quota := _why(b, "quota"):
        return f", QUOTA EXHAUSTED ({quota})"
    if refused := _why(b, "refused"):
        return f", STOPPED: {refused}"
    if lost := _why(b, "driver"):
        return f", STOPPED, its lifeline to the driver broke: {lost}"
    return ""


def _backend_lines(b: BackendView, ages: bool = True) -> list[str]:
    """A backend for a log: one line, or a batch-mode backend's totals and each open batch
    (``ages``: with how long each has been open)."""
    if b.batch:
        return _batch_lines(b, ages)
    return [
        f"  {b.name}: {b.requests_per_s:,.1f} req/s, {b.tokens_per_min:,.0f} tokens/min, "
        f"{b.in_flight}/{b.ceiling} in flight; {b.calls_sent:,} HTTP calls sent, "
        f"{b.answered:,} attempts answered, {b.finished:,} requests finished; "
        f"{b.throttled:,} × 429; transient failures: {b.transient_retried:,} retried, "
        f"{b.transient_ended:,} ended an attempt; spend ${b.spend:,.2f}"
        + _stop_note(b)
        + ("" if b.reachable else " (restarting)")
    ]


def _batch_lines(b: BackendView, ages: bool = True) -> list[str]:
    """A batch-mode backend for a log: its totals, then each open batch."""
    lines = [
        f"  {b.name} (batch mode): {len(b.batches):,} batches open; {b.answered:,} attempts "
        f"answered, {b.finished:,} stored; spend ${b.spend:,.2f} at the batch price "
        f"(${b.saved:,.2f} saved)" + _stop_note(b)
    ]
    for o in b.batches:
        lines.append(
            f"    batch {o.id}: {o.state}, {_count(o.succeeded)} done, {_count(o.failed)} "
            f"failed of {o.requests:,}" + (f", open {_duration(o.age_s)}" if ages else "")
        )
    return lines


def _maybe(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.1f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
