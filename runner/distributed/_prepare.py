"""What a run settles before its actors start, on a thread beside Ray's start: its plan (the
questions and the grid, :func:`runner.plan.plan_run`), and the estimate the spending cap starts
from (the pre-flight's calls, made first when asked).

Ray takes seconds to start, most of them spent waiting on its own processes; the driver runs
:func:`prepared` meanwhile, :func:`beside` it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar

from conditions import Configuration
from runner._errors import RunnerError
from runner.backends import Account
from runner.calls_note import read_calls, read_tokens
from runner.distributed._options import Echo, RunOptions
from runner.experiment import Experiment
from runner.plan import RunPlan, configurations_of, ensure_questions, plan_run
from runner.preflight import (
    PreflightReport,
    cap_lines,
    preflight_lines,
    preflight_report,
    stored_state,
)

_T = TypeVar("_T")


class PreflightFailed(RunnerError):
    """A pre-flight call failed: the run would pay for calls that fail the same way."""


@dataclass(frozen=True)
class Prepared:
    """What a run settles before its actors start."""

    plan: RunPlan
    estimate: PreflightReport | None  # the pre-flight's (its calls made), else the cap's, else None
    accounts: Mapping[str, Account]  # by backend: the calls already made on its account


def prepared(
    experiment: Experiment,
    options: RunOptions,
    echo: Echo,
    configurations: Sequence[Configuration] | None = None,
) -> Prepared:
    """The run's plan (``configurations``, read from ``experiment`` once, and its questions),
    the estimate the spending cap starts from, and the calls a check and the pre-flight made
    on each backend's account."""
    if configurations is None:
        configurations = configurations_of(experiment)
    plan = plan_run(experiment, configurations, ensure_questions(experiment))
    noted, ignored = read_calls(experiment.store)
    if ignored is not None:
        echo(ignored)
    if options.preflight:
        report = preflight(plan, options, echo, noted)
        return Prepared(plan, report, report.accounts)
    if options.max_spend is None:
        return Prepared(plan, None, noted)
    # The cap needs a cost per call before any is measured.
    stored, left = stored_state(experiment)
    estimate = asyncio.run(
        preflight_report(
            plan, stored, stated_output=options.output_tokens, call=False, left=left,
            limit=options.limit, noted=read_tokens(experiment.store),
        )
    )  # fmt: skip
    for line in cap_lines(estimate.costs, options.max_spend):
        echo(line)
    return Prepared(plan, estimate, noted)


def beside(work: Callable[[], _T]) -> Future[_T]:
    """``work`` on a thread of its own. A daemon: Ctrl-C ends the run without waiting for it."""
    future: Future[_T] = Future()

    def target() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # handed to whoever reads the result
            future.set_exception(exc)

    threading.Thread(target=target, name="groundbench-prepare", daemon=True).start()
    return future


def preflight(
    plan: RunPlan,
    options: RunOptions,
    echo: Echo,
    noted: Mapping[str, Account] | None = None,
) -> PreflightReport:
    """Call each configuration of a real backend a few times per decoding
    (:func:`runner.preflight.probe_requests`), and say what the calls left will cost and take (a
    simulated backend costs nothing and is not called).

    Each call is a request the grid has left (under ``--limit``, one the limit sends), made as
    its attempt: the run stores it and does not send it again (:attr:`Probe.record`), and its
    backend's limiter goes on from the calls made (:attr:`PreflightReport.accounts`), so nothing
    is paid twice and the server's window and the run's agree.

    Raises
    ------
    PreflightFailed
        A call failed: each failure with what to do is echoed first.
    OverCap
        Under `--max-spend`, the calls' worst case does not fit in the cap: none is made.
    """
    store = plan.experiment.store
    stored, left = stored_state(plan.experiment)
    report = asyncio.run(
        preflight_report(
            plan, stored, stated_output=options.output_tokens, only_real=True,
            cap=options.max_spend, left=left, as_grid=True, accounts=noted,
            limit=options.limit, noted=read_tokens(store),
        )
    )  # fmt: skip
    for line in preflight_lines(report, options.max_spend):
        echo(f"pre-flight: {line}")
    if not report.ok:
        failed = len(report.failed)
        proving = sum(p.nth == 0 for p in report.probes)
        raise PreflightFailed(
            f"pre-flight: {failed} of {proving} calls failed (see above); nothing "
            "was run. Put it right and run again, or skip the pre-flight with --no-check"
        )
    return report
