"""Rich tables the command line prints: a cohort's summary and its build report, and
:func:`print_whole`, how every table reaches the screen or a file whole."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table

from conditions import GROUPS, Cohort, SourceReport
from scoring import BUDGETS

_BINS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("D", "d_bin", ("D1", "D2", "D3+")),
    ("Q", "q_bin", ("Q1", "Q2", "Q3")),
    ("RS", "rs_bin", ("RS1", "RS2", "RS3")),
    ("difficulty", "difficulty", ("easy", "medium", "hard")),
    ("group", "group", GROUPS),
)


def report_table(reports: Iterable[SourceReport]) -> Table:
    """Per source: asked, selected, eligible, skipped for a used image, and why others were not."""
    table = Table(title="Cohort draw")
    for name in ("source", "asked", "selected", "eligible", "image used", "ineligible"):
        table.add_column(name, justify="left" if name in ("source", "ineligible") else "right")
    for r in reports:
        why = ", ".join(f"{k}: {v}" for k, v in r.ineligible.items()) or "—"
        selected = f"[bold red]{r.selected}[/]" if r.short else str(r.selected)
        table.add_row(r.source, str(r.asked), selected, str(r.eligible), str(r.image_taken), why)
    return table


def summary_tables(cohort: Cohort) -> list[Table]:
    """Counts per source and per metadata bin (with the matched subset), and ``C_N``."""
    sources = list(dict.fromkeys(q.source for q in cohort.questions))
    counts = Table(title=f"Cohort {cohort.hash[:12]}: {len(cohort.questions)} questions")
    counts.add_column("slice")
    counts.add_column("bin")
    for s in sources:
        counts.add_column(s, justify="right")
    counts.add_column("all", justify="right")
    counts.add_column("matched", justify="right")
    per = Counter((q.source, "all", "") for q in cohort.questions)
    counts.add_row(
        "questions",
        "",
        *[str(per[(s, "all", "")]) for s in sources],
        str(len(cohort.questions)),
        str(sum(q.matched for q in cohort.questions)),
    )
    for label, field, bins in _BINS:
        tally = Counter((q.source, getattr(q, field)) for q in cohort.questions)
        matched = Counter(getattr(q, field) for q in cohort.questions if q.matched)
        for i, b in enumerate(bins):
            row = [str(tally[(s, b)]) for s in sources]
            total = sum(tally[(s, b)] for s in sources)
            counts.add_row(
                label if i == 0 else "",
                b,
                *row,
                str(total),
                str(matched[b]),
                end_section=i == len(bins) - 1,
            )
    words = [
        [q.phrase_length for q in cohort.questions if source is None or q.source == source]
        for source in [*sources, None]
    ]
    matched_words = [q.phrase_length for q in cohort.questions if q.matched]
    counts.add_row("phrase length", "mean words", *[_mean(w) for w in words], _mean(matched_words))
    thresholds = Table(title="Frozen tertile thresholds")
    for name in ("", "bin 1 ≤", "bin 3 >"):
        thresholds.add_column(name, justify="right")
    thresholds.add_row("Q", f"{cohort.thresholds.q.low:.4g}", f"{cohort.thresholds.q.high:.4g}")
    thresholds.add_row("RS", f"{cohort.thresholds.rs.low:.4g}", f"{cohort.thresholds.rs.high:.4g}")
    fidelity = Table(title="Construction fidelity C_N (phase 0)")
    for n in BUDGETS:
        fidelity.add_column(f"N={n}", justify="right")
    fidelity.add_row(*[f"{cohort.fidelity[n]:.2f}" for n in BUDGETS])
    return [counts, thresholds, fidelity]


def _mean(values: list[int]) -> str:
    return f"{sum(values) / len(values):.1f}" if values else "—"


PIPED_WIDTH = 240  # piped, a table no wider than this keeps each row on one line
_UNBOUNDED = 100_000  # wider than any table: to measure a table's own widths


def print_whole(console: Console, renderable: RenderableType) -> None:
    """Print ``renderable`` with nothing cut.

    On a terminal it fits the terminal (tables fold their cells, see ``overflow="fold"`` in
    the reports). Piped or redirected, a console has no width of its own (rich assumes 80
    and would cut names to ``ge…``), so the table is drawn at its own width instead: whole
    rows up to :data:`PIPED_WIDTH` characters; a wider table (long prose cells) wraps those
    cells at spaces, never narrower than its longest word, so nothing is cut either way.
    """
    if console.is_terminal:
        console.print(renderable)
        return
    wide = console.options.update_width(_UNBOUNDED)
    needed = Measurement.get(console, wide, renderable)
    width = max(needed.minimum, min(needed.maximum, PIPED_WIDTH), 1)
    whole = Console(file=console.file, width=width, color_system=None, soft_wrap=False)
    whole.print(renderable)
