"""``groundbench check``, and a run's pre-flight: prove each configuration can be called, and
say what the calls left will cost and take, before anything is paid for at scale.

A few calls per configuration and decoding its conditions send (the base decoding, a thinking
setting, a temperature): real requests of the grid still to make, spread over its budgets,
conditions and questions so that their tokens stand for theirs (one call's output stood for
the grid's mean off by up to half: a question's output tokens spread by a third about it), so
the endpoint, the key, the model, the image and every decoding setting are proved together.
Each decoding's first call proves it; the rest follow when every first call has succeeded. A
run's pre-flight keeps each call as that request's attempt (:attr:`Probe.record`: the run
stores it, and does not send it again), and hands on what the calls left on each backend's
account (:attr:`PreflightReport.accounts`: the run's limiters count them); ``groundbench check``
stores nothing, so a check never changes what a run will send, but notes the tokens its calls
measured beside the store (:mod:`runner.calls_note`), which a run's pre-flight estimates from
(:mod:`runner.estimate` is the one estimator). A call gets at most :data:`PROBE_RETRIES`
transport retries within :data:`PROBE_RETRY_TIME_S`, so a check answers within a minute or two;
a throttled one is sent again within that time (a limit set too high is learnt, not failed).

A server of one's own (``openai-compatible``) is first asked which models it serves
(``GET {base_url}/models``, :mod:`runner.backends._served`): a configured model it does not
serve fails the check, in one line naming the backend, before any call; a server with no list
is a note (:attr:`PreflightReport.notes`), and its calls prove the model.

Plain asyncio, no Ray: the CLI runs it before Ray starts. A simulated backend is checked
against the built-in simulator, started here for the check.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import statistics
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from conditions import (
    Builder,
    Configuration,
    Decoding,
    Questions,
    Request,
    RequestKey,
    VariantCache,
    task_of,
)
from runner._errors import RunnerError
from runner._port import Tally
from runner.backends import (
    DEFAULT_OUTPUT_ESTIMATE,
    Account,
    AttemptRecord,
    Bill,
    CallError,
    Client,
    Exchange,
    ModelCheck,
    RateLimiter,
    Sender,
    answer_record,
    error_record,
    key_for,
    parses,
    provider_named,
    rough_input_tokens,
    what_to_do,
)
from runner.calls_note import NotedTokens, write_calls
from runner.estimate import (
    CostEstimate,
    CostInputs,
    Measured,
    Tokens,
    WallEstimate,
    capped_spend,
    duration,
    estimated,
    input_bound,
    money,
    stored_measure,
)
from runner.experiment import Experiment
from runner.plan import Grid, RunPlan, first_questions
from runner.simulator import Simulator, serving
from runner.store import Pending, Progress, Repository

PROBE_RETRIES = 2
_T = TypeVar("_T")
PROBE_RETRY_TIME_S = 60.0
THROTTLED_SENDS = 10  # a call sent again after a throttle: at most so many sends in all
# Calls per decoding: the mean output of k requests drawn so from a stored demo grid's fell
# outside ±25% of the grid's in 47% of draws at k=1, 12% at k=3 and 0.5% at k=6
# (benchmarks/estimate_vs_spend.py measures the estimate against the spend).
PROBES_PER_DECODING = 6


@dataclass(frozen=True)
class Probe:
    """One check call: which configuration and condition it proves, and how it went."""

    configuration: str
    backend: str
    condition: str
    error: str | None = None  # the failure, redacted of the key, with its status and code
    advice: str | None = None  # what to do about it
    stops: bool = False  # the failure stops the backend: no call of it can succeed
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float | None = None
    dollars: float = 0.0  # its tokens at the backend's prices
    record: AttemptRecord | None = None  # the call as the grid's attempt (None: not sent)
    parsed: bool = False  # the answer parses: had it not, the run would re-ask
    nth: int = 0  # its place among its decoding's calls (Asked.nth)
    rough_input: int = 0  # the rough count of its request's input (runner.estimate)
    weight: float = 1.0  # the requests left its tokens stand for (Asked.weight)
    # What its billed calls are counted at, as a run's attempt is (unknown usage at its worst
    # case): its dollars. Its tokens above are what the provider reported, for the estimates.
    billed: Bill = field(default_factory=Bill)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class PreflightReport:
    """The check calls, and what the calls left will cost and take."""

    probes: tuple[Probe, ...]
    costs: tuple[CostEstimate, ...]
    walls: tuple[WallEstimate, ...]
    accounts: Mapping[str, Account] = field(default_factory=dict)  # by backend: calls sent
    # by backend: every HTTP call the probes made
    traffic: Mapping[str, Tally] = field(default_factory=dict)
    limit: int | None = None  # --limit: the costs are of its requests
    protocols: Mapping[str, str] = field(default_factory=dict)  # by configuration
    attempts: Mapping[str, int] = field(default_factory=dict)  # a request's most, by configuration
    # What a server's model list left unproved (none kept, or none read): said, not failed.
    notes: tuple[str, ...] = ()

    def measured(self) -> dict[str, NotedTokens]:
        """The tokens each configuration's calls reported, for the note a run reads."""
        noted = {}
        for configuration, protocol in self.protocols.items():
            mine = _probed(configuration, self.probes, self.attempts.get(configuration, 1))
            if mine is not None:
                noted[configuration] = NotedTokens(
                    protocol=protocol,
                    calls=mine.answers,
                    input_tokens=mine.input_tokens,
                    output_tokens=mine.output_tokens,
                    rough_input=mine.rough_input,
                )
        return noted

    @property
    def ok(self) -> bool:
        """Every decoding proved: its first call answered. A later call, made for the
        estimate alone, may fail (a throttle the limiter then learns from) without failing
        the check: the estimate counts those that answered."""
        return not self.failed

    @property
    def failed(self) -> tuple[Probe, ...]:
        """The decodings' first calls that failed."""
        return tuple(p for p in self.probes if not p.ok and p.nth == 0)

    @property
    def dollars(self) -> float:
        """The estimated cost of the calls left."""
        return sum(c.dollars for c in self.costs)

    @property
    def spent(self) -> float:
        """What the check's own calls cost."""
        return sum(p.dollars for p in self.probes)

    @property
    def records(self) -> tuple[AttemptRecord, ...]:
        """The calls as the grid's attempts (a pre-flight's; a check keeps none)."""
        return tuple(p.record for p in self.probes if p.record is not None)

    def input_per_call(self, configurations: Sequence[str]) -> float:
        """The largest estimated input per call among ``configurations`` (0 where none is
        estimated): what the spending cap's bound on a call's input starts from."""
        inputs = [c.tokens.input for c in self.costs if c.configuration in configurations]
        return max(inputs, default=0.0)


# The store's requests left, by configuration: each with the attempt it makes next. A
# configuration the store has not registered is left whole, from attempt 0.
Left = Mapping[str, Mapping[RequestKey, int]]


@dataclass(frozen=True)
class Asked:
    """One check call to make: the condition it proves, its request, and its attempt;
    ``weight``: its share of the requests left that its decoding sends (its conditions'),
    for which its tokens stand in the estimate."""

    condition: str
    request: Request
    attempt: int = 0
    weight: float = 1.0
    nth: int = 0  # its place among its decoding's calls: the first proves the decoding


async def preflight_report(
    plan: RunPlan,
    stored: Sequence[Progress] = (),
    *,
    stated_output: int | None = None,
    call: bool = True,
    only_real: bool = False,
    cap: float | None = None,
    left: Left | None = None,
    as_grid: bool = False,
    accounts: Mapping[str, Account] | None = None,
    limit: int | None = None,
    noted: Mapping[str, NotedTokens] | None = None,
) -> PreflightReport:
    """Call each configuration of ``plan`` a few times per decoding (:func:`probe_requests`;
    unless ``call`` is false), then estimate the calls left from ``stored`` (the store's progress:
    what is complete, and the tokens of its answers). ``only_real``: call no simulated
    backend (a run's pre-flight). ``cap``: the run's spending cap, which the calls' worst case
    must fit before any is made. ``left``: the requests the store has left, among which the
    calls are chosen. ``as_grid``: each call is the grid's attempt, under its id, and its
    record is kept (a run's pre-flight; a throttled one's is not: its attempt is unspent).
    ``accounts``: calls made on the backends' accounts before (a check's, noted): their
    limiters count them, and the report's accounts hold them. ``limit``: the run sends only
    the first ``limit`` questions of every cell (``--limit``): the calls are among those, and
    the estimate is of those. ``noted``: the tokens a check measured, by configuration (a
    configuration this check does not call is estimated from them).

    Raises
    ------
    OverCap
        The calls' worst case does not fit in ``cap``: none was made.
    """
    experiment, questions, grid = plan.experiment, plan.questions, plan.grid
    backend_of = plan.backend_of
    async with _simulator(experiment, questions, wanted=call and not only_real) as url:
        configurations = plan.at(url)
        builder = task_of(questions).builder(experiment.images, VariantCache(_cache(experiment)))
        sending = _sending(grid, questions, left or {}, limit)
        requests = {
            c.name: probe_requests(experiment, questions, c, builder, sending.get(c.name))
            for c in configurations
        }
        protocols = {r.name: r.protocol for r in grid.registrations}
        attempts = {r.name: r.attempts for r in grid.registrations}
        rows = _rows_of(grid)
        totals = {name: len(mine) for name, mine in rows.items()}
        rough_left, rough_stored = {}, {}
        for c in configurations:
            mine = [grid.rows[i].request for i in _spread(rows.get(c.name, []), ROUGH_SAMPLE)]
            sent = sending.get(c.name)
            sample = mine if sent is None else _spread(list(sent), ROUGH_SAMPLE)
            rough_left[c.name] = _rough_mean(builder, c, sample)
            complete = sum(p.complete for p in stored if p.configuration == c.name)
            if complete and left and c.name in left:
                done = _stored_sample(grid, rows[c.name], left[c.name], complete)
                rough_stored[c.name] = _rough_mean(builder, c, done)
        measuring = _Measuring(
            totals, sending, stored, protocols, attempts, noted or {}, rough_left, rough_stored
        )
        sim_key = experiment.simulator_key
        probes: list[Probe] = []
        notes: list[str] = []
        limiters: dict[str, RateLimiter] = {}
        traffic: dict[str, Tally] = {}
        if call:
            chosen = [
                (c, asked)
                for c in configurations
                if not (only_real and plan.backend(c.name).simulated)
                for asked in requests[c.name]
            ]
            if cap is not None:
                inputs = _cost_inputs(plan, configurations, requests, (), measuring)
                rough, _ = estimated(inputs, experiment.backends, None)
                _fits(plan, rough, [c for c, _ in chosen], cap)
            # One limiter per backend, as a run has: the calls of one account count together.
            for c, _ in chosen:
                name = backend_of(c.name)
                if name not in limiters:
                    limiters[name] = RateLimiter.for_transport(c.transport)
                    if accounts and name in accounts:
                        limiters[name].inherit(accounts[name])

            async def made(calls: list[tuple[Configuration, Asked]]) -> None:
                with _backend_log_quiet():
                    done = await asyncio.gather(
                        *(
                            _probe(
                                c,
                                backend_of(c.name),
                                asked,
                                sim_key if plan.backend(c.name).simulated else None,
                                limiters[backend_of(c.name)],
                                as_grid=as_grid,
                            )
                            for c, asked in calls
                        )
                    )
                probes.extend(_priced(plan, p) for p, _ in done)
                for (c, _), (_, used) in zip(calls, done, strict=True):
                    name = backend_of(c.name)
                    traffic[name] = traffic.get(name, Tally()) + used

            # A server of one's own names the models it serves: a model it does not is
            # refused before any call (the configuration's calls are not made).
            for check in await _model_checks(plan, [c for c, _ in chosen], sim_key):
                line = check.line()
                if line is not None and check.refused:
                    probes.extend(_refusal(plan, check, line, [c for c, _ in chosen]))
                elif line is not None:
                    notes.append(line)
            refused = {p.configuration for p in probes}
            chosen = [(c, asked) for c, asked in chosen if c.name not in refused]
            # Each decoding's first call proves it; the rest, which sharpen the estimate,
            # follow only when every one succeeded: a failing check pays no more than it must.
            await made([(c, asked) for c, asked in chosen if asked.nth == 0])
            if all(p.ok for p in probes):
                await made([(c, asked) for c, asked in chosen if asked.nth > 0])
    inputs = _cost_inputs(plan, configurations, requests, probes, measuring)
    costs, walls = estimated(inputs, experiment.backends, stated_output)
    after = {**(accounts or {}), **{name: lim.account() for name, lim in limiters.items()}}
    return PreflightReport(
        tuple(probes), tuple(costs), tuple(walls), after, traffic, limit, protocols, attempts,
        notes=tuple(notes),
    )  # fmt: skip


class OverCap(RunnerError):
    """A pre-flight whose calls could cost more than the run's spending cap."""


async def _model_checks(
    plan: RunPlan, configurations: Sequence[Configuration], sim_key: str | None
) -> list[ModelCheck]:
    """What the model lists say, for each backend and model whose provider keeps a list
    (:attr:`Provider.lists_models`: a server of one's own), asked once each."""
    checks: list[ModelCheck] = []
    asked: set[tuple[str, str]] = set()
    for c in configurations:
        backend = plan.backend_of(c.name)
        if not provider_named(c.provider).lists_models or (backend, c.model) in asked:
            continue
        asked.add((backend, c.model))
        key = key_for(sim_key if plan.backend(c.name).simulated else None)(c)
        async with Client(c, key) as client:
            checks.append(await client.model_check(backend))
    return checks


def _refusal(
    plan: RunPlan, check: ModelCheck, line: str, configurations: Sequence[Configuration]
) -> list[Probe]:
    """A failed probe, never sent, for each configuration that asks ``check``'s backend for
    the model its server does not serve."""
    return [
        Probe(c.name, check.backend, "GET /models", error=line, advice="no call was made",
              stops=True)
        for c in {c.name: c for c in configurations}.values()
        if plan.backend_of(c.name) == check.backend and c.model == check.model
    ]  # fmt: skip


def _fits(
    plan: RunPlan,
    estimates: Sequence[CostEstimate],
    calls: Sequence[Configuration],
    cap: float,
) -> None:
    """Raise :class:`OverCap` unless the worst case of ``calls`` (one per entry, each at its
    input bound and ``max_output_tokens``, as the run's cap counts a call) fits in ``cap``."""
    inputs = {e.configuration: e.tokens.input for e in estimates}
    worst = sum(
        plan.backend(c.name).prices.cost(input_bound(inputs[c.name]), c.decoding.max_output_tokens)
        for c in calls
    )
    if worst > cap:
        raise OverCap(
            f"pre-flight: its {len(calls)} calls could cost up to ${worst:,.4f}, more than "
            f"--max-spend ${cap:,.2f}; nothing was sent. Raise the cap, or skip the pre-flight "
            "with --no-check"
        )


def _priced(plan: RunPlan, probe: Probe) -> Probe:
    prices = plan.backend(probe.configuration).prices
    dollars = prices.cost(probe.billed.input_tokens, probe.billed.output_tokens)
    return dataclasses.replace(probe, dollars=dollars)


def probe_requests(
    experiment: Experiment,
    questions: Questions,
    configuration: Configuration,
    builder: Builder,
    left: Mapping[RequestKey, int] | None = None,
) -> list[Asked]:
    """Up to :data:`PROBES_PER_DECODING` requests of each decoding the configuration sends,
    evenly spread over its requests still to make, ordered by budget (its tokens, the output's
    above all, grow with the budget), condition and question, so that their mean stands for
    theirs. ``left``: the requests the store has left, with the attempt each makes next
    (``None``: every request, from attempt 0); a decoding with none left is not proved, nor
    paid for."""
    plan = task_of(questions).plan([configuration], experiment.budgets, experiment.box)
    by_condition: dict[str, list[tuple[int, str, int, RequestKey]]] = {}
    for i, key in enumerate(plan):
        if left is None or key in left:
            by_condition.setdefault(key.condition, []).append((key.budget, key.condition, i, key))
    # The conditions of one decoding pooled: a condition's requests share its decoding, so
    # its first request tells it.
    by_decoding: dict[Decoding, list[tuple[int, str, int, RequestKey]]] = {}
    for found in by_condition.values():
        decoding = builder.build(found[0][3], configuration).decoding
        by_decoding.setdefault(decoding, []).extend(found)
    asked = []
    for found in by_decoding.values():
        picked = _spread(sorted(found), PROBES_PER_DECODING)
        weight = len(found) / len(picked)
        for nth, (*_, key) in enumerate(picked):
            attempt = left[key] if left is not None else 0
            request = builder.build(key, configuration)
            asked.append(Asked(key.condition, request, attempt, weight, nth))
    return asked


async def _probe(
    configuration: Configuration,
    backend_name: str,
    asked: Asked,
    sim_key: str | None,
    limiter: RateLimiter,
    *,
    as_grid: bool,
) -> tuple[Probe, Tally]:
    quick = configuration.transport.model_copy(
        update={
            "max_transport_retries": min(
                configuration.transport.max_transport_retries, PROBE_RETRIES
            ),
            "max_retry_time_s": min(configuration.transport.max_retry_time_s, PROBE_RETRY_TIME_S),
        }
    )
    configuration = configuration.model_copy(update={"transport": quick})
    request = asked.request
    # A check's call has an id of its own: the provider (and the simulator) see a check, not
    # the grid's attempt at this request, which the run will make. A pre-flight's is that
    # attempt, under its id.
    call = None if as_grid else f"gb-check-{request.fingerprint[:24]}"
    started = datetime.now(UTC)
    backend = Client(configuration, key_for(sim_key)(configuration), limiter=limiter)
    try:
        async with backend:
            exchange = await _through_throttles(backend, request, asked.attempt, call)
    except CallError as exc:
        record = None
        # A throttle did no work at the server: no attempt is spent on it, and the grid sends
        # the request with a run's patience (its retries over minutes, not a check's minute).
        if as_grid and exc.sent and exc.kind != "rate-limited":
            record = error_record(Sender.of(backend), request, asked.attempt, exc, started)
        probe = Probe(
            configuration.name,
            backend_name,
            asked.condition,
            error=str(exc),
            advice=what_to_do(exc.kind, exc.status, exc.code),
            stops=exc.stops,
            latency_s=exc.latency_s,
            record=record,
            nth=asked.nth,
            billed=exc.billed,
        )
        return probe, Tally.of_traffic([backend])
    usage = exchange.reply.usage
    ok = parses(request, exchange.reply.answer)
    record = None
    if as_grid:
        record = answer_record(Sender.of(backend), request, asked.attempt, exchange, ok)
    probe = Probe(
        configuration.name,
        backend_name,
        asked.condition,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        latency_s=exchange.latency_s,
        record=record,
        rough_input=rough_input_tokens(request),
        weight=asked.weight,
        parsed=ok,
        nth=asked.nth,
        billed=exchange.billed,
    )
    return probe, Tally.of_traffic([backend])


async def _through_throttles(
    backend: Client, request: Request, attempt: int, call: str | None
) -> Exchange:
    """``backend.send``, sent again after a throttle for up to :data:`PROBE_RETRY_TIME_S`: a
    429 says the limit is lower than configured (the limiter has paused and learnt from it),
    not that the endpoint is wrong, so it must not fail a pre-flight, whose calls come at
    the configured rate; every other failure, and a throttle past the time, is the call's."""
    deadline = time.monotonic() + PROBE_RETRY_TIME_S
    for _ in range(THROTTLED_SENDS - 1):
        try:
            return await backend.send(request, attempt, call=call)
        except CallError as exc:
            if exc.kind != "rate-limited" or time.monotonic() >= deadline:
                raise
    return await backend.send(request, attempt, call=call)


@dataclass(frozen=True)
class _Measuring:
    """What the estimate counts and measures from: the grid, the requests the run sends of
    each configuration (``None``: all its grid's, none stored yet), the store's progress, and
    the tokens a check noted (used where its configuration's protocol is unchanged)."""

    totals: Mapping[str, int]  # requests in the grid, by configuration
    sending: Mapping[str, Mapping[RequestKey, int] | None]
    stored: Sequence[Progress]
    protocols: Mapping[str, str]
    attempts: Mapping[str, int]  # the most a request makes, by configuration
    noted: Mapping[str, NotedTokens]
    # The rough count's mean input (runner.estimate.Measured.standing_for), by configuration:
    # of a sample of the requests the run sends, and of those the store has complete.
    rough_left: Mapping[str, float | None]
    rough_stored: Mapping[str, float | None]

    def left(self, configuration: str) -> tuple[int, int]:
        """The configuration's requests in the grid, and those the run sends."""
        total = self.totals.get(configuration, 0)
        sending = self.sending.get(configuration)
        if sending is not None:
            return total, len(sending)
        complete = sum(p.complete for p in self.stored if p.configuration == configuration)
        return total, total - complete  # no requests left given: those stored are complete

    def stored_tokens(self, configuration: str) -> Measured | None:
        """Per request the store has tried: every attempt's tokens, re-asks included."""
        for p in self.stored:
            if p.configuration == configuration:
                measured = stored_measure(p)
                rough = self.rough_stored.get(configuration) or 0.0
                return dataclasses.replace(measured, rough_input=rough)
        return None

    def checked(self, configuration: str, probes: Sequence[Probe]) -> Measured | None:
        """The tokens of this check's calls of the configuration and of the check noted
        (a run's pre-flight after a check: two samples of the same requests), pooled."""
        mine = _probed(configuration, probes, self.attempts.get(configuration, 1))
        note = self.noted.get(configuration)
        if note is None or note.protocol != self.protocols.get(configuration) or not note.calls:
            return mine
        noted = Measured(note.calls, note.input_tokens, note.output_tokens, note.rough_input)
        if mine is None:
            return noted
        pooled = mine + noted
        rough = 0.0  # unknown for one (a note of an older groundbench): the input unscaled
        if mine.rough_input > 0 and noted.rough_input > 0:
            weighed = mine.rough_input * mine.answers + noted.rough_input * noted.answers
            rough = weighed / pooled.answers
        return dataclasses.replace(pooled, rough_input=rough)


def _sending(
    grid: Grid, questions: Questions, left: Left, limit: int | None
) -> dict[str, Mapping[RequestKey, int] | None]:
    """The requests a run sends of each configuration, with their next attempts: those the
    store has left (a configuration it has not registered: all), and under ``limit`` only the
    first ``limit`` questions of every cell."""
    names = [r.name for r in grid.registrations]
    if limit is None:
        return {name: left.get(name) for name in names}
    allowed = first_questions(grid.rows, questions, limit)
    sending: dict[str, Mapping[RequestKey, int] | None] = {}
    for name in names:
        held = left.get(name)
        if held is None:  # none stored: every request the limit allows, from attempt 0
            sending[name] = {k: 0 for k in allowed if k.configuration == name}
            continue
        sending[name] = {k: attempt for k, attempt in held.items() if k in allowed}
    return sending


def _cost_inputs(
    plan: RunPlan,
    configurations: Sequence[Configuration],
    requests: dict[str, list[Asked]],
    probes: Sequence[Probe],
    measuring: _Measuring,
) -> list[CostInputs]:
    """What each configuration's estimate is made from (:func:`runner.estimate.estimated`):
    its requests left, the tokens measured, the rough count, its calls' latency."""
    latencies = _median_latencies(probes)
    inputs = []
    for c in configurations:
        total, left = measuring.left(c.name)
        inputs.append(
            CostInputs(
                configuration=c.name,
                backend=plan.backend_of(c.name),
                requests=total,
                left=left,
                stored=measuring.stored_tokens(c.name),
                probed=measuring.checked(c.name, probes),
                rough=_rough(requests[c.name]),
                rough_left=measuring.rough_left.get(c.name),
                latency_s=latencies.get(c.name),
            )
        )
    return inputs


def _probed(configuration: str, probes: Sequence[Probe], attempts: int) -> Measured | None:
    """The configuration's calls' tokens per request, each call weighed by the requests left
    it stands for (one decoding may send ten conditions' requests, another one's): as many
    calls, at the weighted means, times the attempts a request makes (:func:`attempts_per`):
    a request whose answer does not parse is asked again, at the same input."""
    mine = [p for p in probes if p.configuration == configuration and p.ok]
    if not mine:
        return None
    n, total = len(mine), sum(p.weight for p in mine)

    def mean(value: Callable[[Probe], float]) -> float:
        return sum(p.weight * value(p) for p in mine) / total

    per = attempts_per(mean(lambda p: float(not p.parsed)), attempts)
    return Measured(
        n,
        round(n * per * mean(lambda p: p.input_tokens or 0)),
        round(n * per * mean(lambda p: p.output_tokens or 0)),
        mean(lambda p: p.rough_input),
    )


def attempts_per(unparsed: float, attempts: int) -> float:
    """The mean attempts a request makes when a share ``unparsed`` of answers do not parse
    and a request makes at most ``attempts``: the first, and each next while the last failed.

    >>> attempts_per(0.0, 3), attempts_per(0.5, 3), attempts_per(1.0, 2)
    (1.0, 1.75, 2.0)
    """
    return sum(unparsed**k for k in range(max(attempts, 1)))


def _median_latencies(probes: Sequence[Probe]) -> dict[str, float]:
    """Each configuration's median call latency: what a call of it takes, one slow call
    aside."""
    by_configuration: dict[str, list[float]] = {}
    for p in probes:
        if p.latency_s is not None:
            by_configuration.setdefault(p.configuration, []).append(p.latency_s)
    return {name: statistics.median(found) for name, found in by_configuration.items()}


# Requests built for the rough count's mean input of a configuration's requests: a few ms
# each (the image variants are cached), and the mean of 64 images is within a few percent.
ROUGH_SAMPLE = 64


def _rows_of(grid: Grid) -> dict[str, list[int]]:
    """The grid's rows (their indices), by configuration, in its order."""
    rows: dict[str, list[int]] = {}
    for i, r in enumerate(grid.rows):
        rows.setdefault(r.configuration, []).append(i)
    return rows


def _spread(items: Sequence[_T], n: int) -> list[_T]:
    """At most ``n`` of ``items``, evenly spread over them: the middle one of each of ``n``
    equal runs, so each stands for its run (in order of budget, say, its share of them).

    >>> _spread(list(range(10)), 3)
    [1, 5, 8]
    """
    n = min(len(items), n)
    return [items[(2 * i + 1) * len(items) // (2 * n)] for i in range(n)]


def _stored_sample(
    grid: Grid, rows: Sequence[int], left: Mapping[RequestKey, int], complete: int
) -> list[RequestKey]:
    """About :data:`ROUGH_SAMPLE` of a configuration's ``complete`` requests: those not
    ``left`` among as many of its rows, evenly spread, as hold that many at their share."""
    looked = _spread(rows, ROUGH_SAMPLE * len(rows) // max(complete, 1) + 1)
    return [k for k in (grid.rows[i].request for i in looked) if k not in left]


def _rough_mean(
    builder: Builder, configuration: Configuration, keys: Sequence[RequestKey]
) -> float | None:
    """The rough count's mean input over ``keys`` (``None``: none)."""
    if not keys:
        return None
    return sum(rough_input_tokens(builder.build(k, configuration)) for k in keys) / len(keys)


def _rough(asked: Sequence[Asked]) -> Tokens:
    if not asked:
        return Tokens(0.0, 0.0, "no request to count")
    n = sum(a.weight for a in asked)  # each request for its share of those left
    inputs = sum(a.weight * rough_input_tokens(a.request) for a in asked)
    outputs = sum(
        a.weight * min(a.request.decoding.max_output_tokens, DEFAULT_OUTPUT_ESTIMATE) for a in asked
    )
    return Tokens(
        inputs / n,
        outputs / n,
        f"rough: prompt/4 + 28-px patches in, {DEFAULT_OUTPUT_ESTIMATE:,} out, "
        "--output-tokens states it",
    )


def _cache(experiment: Experiment) -> Path:
    return experiment.store.with_suffix(".variants")


@contextlib.contextmanager
def _backend_log_quiet() -> Iterator[None]:
    """The backends' own log lines held back: the check says each failure once, in its line
    with what to do."""
    logger = logging.getLogger("groundbench.backends")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.asynccontextmanager
async def _simulator(
    experiment: Experiment, questions: Questions, *, wanted: bool
) -> AsyncIterator[str | None]:
    """The built-in simulator's address while the check runs, when a backend is simulated."""
    if not (wanted and experiment.simulated):
        yield None  # no simulated backend is called
        return
    simulator = Simulator(
        questions, experiment.images, VariantCache(_cache(experiment)), experiment.simulator
    )
    async with serving(simulator) as url:
        yield url


def cap_lines(costs: Sequence[CostEstimate], max_spend: float | None) -> list[str]:
    """What a spending cap will do to the calls estimated: stop the run before its end, or
    not count a backend that has no prices."""
    if max_spend is None:
        return []
    lines = []
    dollars = sum(c.dollars for c in costs)
    if dollars > max_spend:
        lines.append(
            f"the estimate (${dollars:,.2f}) is above --max-spend ${max_spend:,.2f}: the run "
            "stops at the cap, with requests left"
        )
    for backend in sorted({c.backend for c in costs if not c.priced}):
        lines.append(
            f"backend {backend} has no prices: --max-spend counts its calls as $0 (set "
            f"[backends.{backend}] prices to cap it)"
        )
    return lines


def preflight_lines(report: PreflightReport, max_spend: float | None = None) -> list[str]:
    """The check as a user reads it: the calls' outcomes, then each configuration's calls
    left with their tokens and cost, then each backend's wall time."""
    lines = [*report.notes, *call_lines(report.probes)]
    under = (
        f" (--limit {report.limit}: the first {report.limit} questions of every cell)"
        if report.limit is not None
        else ""
    )
    lines.append(f"calls left{under}, and what they cost at the configured prices:")
    for c in report.costs:
        dollars = money(c.dollars) if c.priced else f"$0 ({c.backend} has no prices)"
        batch = " at the batch price" if c.batched and c.priced else ""
        lines.append(
            f"  {c.configuration}: {c.left:,} of {c.requests:,} requests × "
            f"({c.tokens.input:,.0f} in + {c.tokens.output:,.0f} out tokens; {c.tokens.basis}) "
            f"= {dollars}{batch}"
        )
    left = sum(c.left for c in report.costs)
    spend = capped_spend(report.costs, max_spend)
    capped = f", capped by --max-spend ${max_spend:,.2f}" if spend < report.dollars else ""
    lines.append(f"  estimated spend: {money(spend)} for {left:,} requests{capped}")
    lines.extend(f"  {line}" for line in cap_lines(report.costs, max_spend))
    lines.append("wall time at the configured limits (backends run side by side):")
    for w in report.walls:
        lines.append(
            f"  {w.backend}: {w.calls:,} calls at {w.calls_per_minute:,.1f} per minute "
            f"(set by {w.bound}) ≈ {duration(w.seconds)}"
        )
    return lines


def call_lines(probes: Sequence[Probe]) -> list[str]:
    """The calls' outcomes: per configuration, a line for the calls that answered (how many,
    the decodings they proved, the range of their latencies and tokens), and one for each
    distinct failure, with the conditions and the number of calls it failed: FAILED where a
    decoding's first call failed (the check fails), missed where only later ones did."""
    lines = []
    by_configuration: dict[tuple[str, str], list[Probe]] = {}
    for p in probes:
        by_configuration.setdefault((p.configuration, p.backend), []).append(p)
    for (configuration, backend), mine in by_configuration.items():
        answered = [p for p in mine if p.ok]
        if answered:
            latency = _span([p.latency_s for p in answered if p.latency_s is not None], "{:.1f}")
            tokens_in = _span([p.input_tokens or 0 for p in answered], "{:,}")
            tokens_out = _span([p.output_tokens or 0 for p in answered], "{:,}")
            decodings = sum(p.nth == 0 for p in answered)
            lines.append(
                f"ok      {configuration} ({backend}): {_calls(len(answered))}, "
                f"{decodings} decoding{'s' * (decodings != 1)}, {latency} s each, "
                f"{tokens_in} tokens in, {tokens_out} out"
            )
        failures: dict[tuple[bool, str | None, str | None], list[Probe]] = {}
        for p in mine:
            if not p.ok:
                failures.setdefault((p.nth == 0, p.error, p.advice), []).append(p)
        for (proving, error, advice), failed in failures.items():
            count = f" ({_calls(len(failed))})" if len(failed) > 1 else ""
            where = f"{configuration} ({backend}; {_conditions(failed)}){count}"
            if proving:
                lines.append(f"FAILED  {where}: {error} — {advice}")
            else:  # a call for the estimate alone: its decoding answered
                lines.append(f"missed  {where}: {error} — left out of the estimate")
    return lines


def _calls(n: int) -> str:
    return f"{n:,} call" if n == 1 else f"{n:,} calls"


def _conditions(probes: Sequence[Probe]) -> str:
    """The conditions of ``probes``, each once, in their order."""
    return ", ".join(dict.fromkeys(p.condition for p in probes))


def _span(values: Sequence[float], form: str) -> str:
    """The range of ``values`` in ``form``: "low–high", or the one value ("?": none).

    >>> _span([3, 1, 2], "{:,}")
    '1–3'
    """
    if not values:
        return "?"
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low}–{high}"


def note_real_calls(experiment: Experiment, report: PreflightReport) -> str | None:
    """Note the calls ``report`` made on real backends beside the store, for a run's limiters
    (:mod:`runner.calls_note`; the simulator a check starts is not a run's), and the tokens
    every call measured, for a run's estimate; a line saying why it could not be noted, or
    ``None``."""
    backends = experiment.backends
    real = {
        name: account
        for name, account in report.accounts.items()
        if name in backends and not backends[name].simulated  # a note may name others
    }
    measured = report.measured()
    if not real and not measured:
        return None
    try:
        write_calls(experiment.store, real, measured)
    except OSError as exc:
        return (
            f"the calls were not noted beside the store ({exc.strerror}): a run started "
            "within a minute does not count them, nor estimates from their tokens"
        )
    return None


def stored_progress(experiment: Experiment) -> list[Progress]:
    """What the experiment's store holds per configuration: requests complete, and the
    tokens of the answers (nothing before a first run has registered the grid)."""
    with Repository(experiment.store) as store:
        return store.progress()


def stored_state(experiment: Experiment) -> tuple[list[Progress], Left]:
    """:func:`stored_progress`, and the requests the store has left (:data:`Left`)."""
    with Repository(experiment.store) as store:
        progress = store.progress()
        names = [p.configuration for p in progress]
        pending = store.pending(names) if names else []
    return progress, left_of(names, pending)


def left_of(registered: Sequence[str], pending: Sequence[Pending]) -> Left:
    """The requests left of the ``registered`` configurations, with their next attempts."""
    left: dict[str, dict[RequestKey, int]] = {name: {} for name in registered}
    for p in pending:
        left.setdefault(p.configuration, {})[p.request] = p.next_attempt
    return left
