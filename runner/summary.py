"""The run's closing text: what it did, what it spent, what is left (its cost and time, by
:mod:`runner.estimate`), where the store is and how to go on.

Beside :mod:`runner.monitor`, the live view: the monitor draws a run as it goes, the summary
writes it out once it has ended, from the driver's :class:`~runner.distributed.RunReport`; on a
terminal it is written below the live view's last frame, once the view has closed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from runner.backends import one_line, what_to_do
from runner.backends._secrets import MAX_MESSAGE
from runner.estimate import duration, eta_s, left_cost
from runner.experiment import Experiment

# Annotations only: runner.distributed's __init__ imports the driver, which imports this module.
if TYPE_CHECKING:
    from runner._port import StopKind
    from runner.distributed._report import BatchReport, RunReport
    from runner.store import ErrorCount


def summary_lines(
    report: RunReport, experiment_file: Path | None, experiment: Experiment | None = None
) -> list[str]:
    """What the run did, what is left, and how to resume; with ``experiment``, what is left
    costs and takes, and where its store is."""
    tally = report.tally
    lines = [
        f"run ended after {report.elapsed_s:.1f} s: {tally.http_calls:,} HTTP calls sent, "
        f"{tally.answered:,} attempts answered, {tally.finished:,} requests finished",
    ]
    if tally.transient_retried or tally.throttles_retried or tally.transient_ended:
        lines.append(
            f"  transient failures (5xx, resets, timeouts, broken bodies): "
            f"{tally.transient_retried:,} retried, {tally.transient_ended:,} ended an attempt; "
            f"throttles (429): {tally.throttles_retried:,} retried"
        )
    for p in report.progress:
        state = "complete" if p.pending == 0 else f"{p.pending:,} pending ({p.errored:,} errored)"
        lines.append(
            f"  {p.configuration}: {p.complete:,}/{p.requests:,} requests complete, {state}; "
            f"{p.answered:,} answers, {p.scored:,} scored"
        )
    for b in report.backends:
        if b.stop is not None and b.stop.kind != "capped":  # the cap's line is the run's, below
            lines.append(f"  backend {b.name} stopped: {b.stop.said} ({_said(b.stop.why)})")
        if b.learnt_per_minute is not None:
            learnt = math.floor(b.learnt_per_minute)
            lines.append(
                f"  backend {b.name}: its server admits about {learnt:,} requests/min, below its "
                f"requests_per_minute (learnt from its 429s, and kept to, rising each minute "
                f"without one); set requests_per_minute = {learnt} to start there"
            )
    if report.errors:
        lines.append("  errors that keep requests from completing, most frequent first:")
        lines.extend(f"    {error_line(e)}" for e in report.errors)
    if report.unscored:
        lines.append(f"  {report.unscored:,} stored answers are not scored yet")
    if report.held:
        lines.append(
            f"  {report.held:,} requests are held by open batches (groundbench batches EXPERIMENT "
            "lists them): a run with their backend in batch mode collects them, and none is "
            "sent again meanwhile"
        )
    preflight = (
        f" (its pre-flight's calls ${report.preflight_spent:,.2f})"
        if report.preflight_spent
        else ""
    )
    lines.append(
        f"  spend: ${report.spent:,.2f} this run{preflight}, ${report.spent_total:,.2f} for the "
        "answers in the store over every run (tokens at the configured prices)"
    )
    if tally.usage_unknown:
        lines.append(
            f"  {tally.usage_unknown:,} billed calls reported no usable token counts: each is "
            "counted at its worst case (its input bound and max_output_tokens), and the "
            f"attempts that made them at ${report.unknown_spent:,.2f} of the spend "
            "(SELECT * FROM responses WHERE usage_unknown > 0)"
        )
    for b in report.backends:
        if b.batch is not None:
            lines += batch_lines(b.name, b.spent, b.batch)
    if _stopped(report, "capped"):
        lines.append(
            f"  stopped at the spending cap (--max-spend ${report.max_spend:,.2f}); "
            "run again with a higher cap to go on"
        )
    command = f"groundbench run {experiment_file}" if experiment_file else "the same command"
    if report.limit is not None:
        done = report.limited_requests - report.limited_left
        lines.append(
            f"  --limit {report.limit}: the first {report.limit} questions of every cell, "
            f"{done:,}/{report.limited_requests:,} of their requests complete, "
            f"{report.limited_left:,} left"
        )
    if experiment is not None:
        lines += _left_lines(report, experiment)
    if not report.complete:
        again = "without --limit" if report.limit is not None and report.done else "again"
        lines.append(
            f"{report.pending:,} requests left: run {command} {again} to send exactly those"
            + _once(report)
        )
    return lines


def _left_lines(report: RunReport, experiment: Experiment) -> list[str]:
    """What the grid's requests left cost at the tokens the store measured, and take at this
    run's pace; where the store is, and the report's command."""
    lines = []
    left = left_cost(experiment, report.progress)
    if left.requests:
        cost = f"≈ ${left.dollars:,.2f} at the tokens stored so far"
        if left.unmeasured:
            cost += f" ({', '.join(left.unmeasured)}: nothing stored to measure yet)"
        eta = eta_s(left.requests, report.tally.finished, report.elapsed_s)
        pace = f", ≈ {duration(eta)} at this run's pace" if eta is not None else ""
        lines.append(f"  the grid's {left.requests:,} requests left: {cost}{pace}")
    store = experiment.store
    lines.append(f"  store: {store}; its tables and figures: groundbench report {store}")
    return lines


def batch_lines(name: str, spent: float, batch: BatchReport) -> list[str]:
    """A batch-mode backend's batches, and what they saved against the online price."""
    saved = batch.online_cost - spent
    share = f" ({100 * saved / batch.online_cost:.0f}%)" if batch.online_cost > 0 else ""
    extra = []
    if batch.unrun:
        extra.append(f"{batch.unrun:,} lines never ran (expired, cancelled or failed batches)")
    if batch.problems:
        extra.append(f"{batch.problems:,} result lines unreadable (SELECT * FROM batch_problems)")
    more = f"; {'; '.join(extra)}" if extra else ""
    line = (
        f"  backend {name} (batch mode): {batch.created:,} batches created, {batch.read:,} read; "
        f"${spent:,.2f} at the batch price, ${batch.online_cost:,.2f} online: ${saved:,.2f} "
        f"saved{share}{more}"
    )
    lines = [line]
    if batch.not_made is not None:
        # A batch whose id was refused (code bad-id) is the server's fault, not the file's size.
        hint = "" if "bad-id" in batch.not_made else _TOO_LARGE
        lines.append(
            f"  backend {name}: no more batches made after the provider refused one: "
            f"{_said(batch.not_made)}{hint}"
        )
    if batch.elsewhere:
        more = f" (and {batch.elsewhere - 1:,} more alike)" if batch.elsewhere > 1 else ""
        lines.append(f"  backend {name}: {batch.elsewhere_why}{more}")
    return lines


def _stopped(report: RunReport, kind: StopKind) -> bool:
    """Whether a backend of the run stopped for ``kind``."""
    return any(b.stop is not None and b.stop.kind == kind for b in report.backends)


def _said(text: str) -> str:
    """A server's words as one line of the summary, capped and redacted (issue 37)."""
    return one_line(text, limit=MAX_MESSAGE)


_TOO_LARGE = " (a file too large: set a lower batch.max_bytes or max_requests)"


def _once(report: RunReport) -> str:
    """What must happen before the requests left can succeed, where a backend was stopped."""
    needs = []
    if _stopped(report, "refused"):
        needs.append("the key or model is put right")
    if _stopped(report, "quota"):
        needs.append("the quota resets")
    return f" (once {' and '.join(needs)})" if needs else ""


def error_line(error: ErrorCount) -> str:
    """One kind of stored error: where, how often, the server's words (one line, at most
    ``_MESSAGE_CHARACTERS``) and what to do."""
    where = f"HTTP {error.status}" if error.status is not None else "no response"
    code = f" {error.code}" if error.code else ""
    message = " ".join((error.message or "").split())
    if len(message) > _MESSAGE_CHARACTERS:
        message = message[: _MESSAGE_CHARACTERS - 1] + "…"
    said = f": {message}" if message else ""
    return (
        f"{error.configuration}: {error.count:,} × {error.kind} ({where}{code}){said} — "
        f"{what_to_do(error.kind, error.status, error.code)}"
    )


_MESSAGE_CHARACTERS = 160
