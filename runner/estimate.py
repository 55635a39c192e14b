"""What the calls left will cost, and how long they will take: the one estimator behind
``check``, a run's pre-flight, the live view and the run's summary.

Plain Python, no Ray, no network. Tokens per request come from what was measured, pooled: the
requests already stored for the configuration and the check's calls (this check's, and those a
``check`` noted beside the store, :mod:`runner.calls_note`); the store's requests outnumber the
check's few calls as they accrue. With nothing measured, a rough count (the prompt's characters
/ 4 and one token per 28-pixel patch of the image, and the output mean stated with
``--output-tokens`` or the limiter's prior). Dollars come from the backend's configured
``prices``, at the batch price where the backend is batched; the requests counted are those
the run will send (under ``--limit``, the limit's), and ``--max-spend`` caps the sum. The ETA
is the requests left over the rate achieved so far.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.backends import INPUT_MARGIN
from runner.store import Progress

if TYPE_CHECKING:  # annotations only: the store actor imports Limited, and no simulator
    from runner.experiment import BackendSpec, Experiment, Prices


def input_bound(estimated_input: float) -> int:
    """The input tokens one call is assumed never to pass, from the estimated mean.

    >>> input_bound(500.0)
    2000
    """
    return math.ceil(INPUT_MARGIN * estimated_input)


@dataclass(frozen=True)
class Tokens:
    """Mean tokens per call, and where the figure comes from."""

    input: float
    output: float  # reasoning included: it is billed as output
    basis: str


@dataclass(frozen=True)
class CostEstimate:
    """One configuration's calls left and what they will cost."""

    configuration: str
    backend: str
    requests: int  # in its grid
    left: int  # not complete yet, among those the run sends (under --limit, the limit's)
    tokens: Tokens
    per_call: float  # dollars
    priced: bool = True  # False: its backend has no prices, so its calls count as $0
    batched: bool = False  # its backend is in batch mode: per_call is at the batch price

    @property
    def dollars(self) -> float:
        return self.left * self.per_call


@dataclass(frozen=True)
class WallEstimate:
    """How long one backend's calls left take at its limits (its configurations share them)."""

    backend: str
    calls: int
    calls_per_minute: float
    bound: str  # which limit sets the pace

    @property
    def seconds(self) -> float:
        return 60.0 * self.calls / self.calls_per_minute if self.calls else 0.0


@dataclass(frozen=True)
class Measured:
    """Tokens over ``answers`` requests (a stored request's every attempt, or one check call);
    ``rough_input``: the rough count's mean input of those requests (0: not known)."""

    answers: int
    input_tokens: int
    output_tokens: int
    rough_input: float = 0.0

    def tokens(self, basis: str) -> Tokens:
        n = max(self.answers, 1)
        return Tokens(self.input_tokens / n, self.output_tokens / n, basis)

    def __add__(self, other: Measured) -> Measured:
        return Measured(
            self.answers + other.answers,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )

    def standing_for(self, rough_left: float | None) -> Measured:
        """The input scaled to the requests left: by the rough count's ratio between their
        mean and that of the requests measured. A request's input is mostly its image, and a
        check's one call, or a ``--limit`` run's first questions, are a few images of many:
        the rough count weighs images as a provider does, up to a factor the measure sets.

        >>> Measured(2, 1000, 300, rough_input=250.0).standing_for(500.0)
        Measured(answers=2, input_tokens=2000, output_tokens=300, rough_input=500.0)
        >>> Measured(2, 1000, 300).standing_for(500.0).input_tokens  # nothing to scale by
        1000
        """
        if not rough_left or self.rough_input <= 0:
            return self
        scaled = round(self.input_tokens * rough_left / self.rough_input)
        return Measured(self.answers, scaled, self.output_tokens, rough_left)


def tokens_per_call(
    stored: Measured | None,
    probed: Measured | None,
    rough: Tokens,
    stated_output: int | None,
    rough_left: float | None = None,
) -> Tokens:
    """The mean tokens of a configuration's request, measured where anything is (the store's
    requests and the check's calls pooled: the store's win as they accrue; each one's input
    scaled to the requests left, ``rough_left`` their rough mean input: see
    :meth:`Measured.standing_for`), else rough; a stated output mean replaces any other.

    >>> rough = Tokens(500, 1024, "rough")
    >>> tokens_per_call(None, None, rough, None).basis
    'rough'
    >>> tokens_per_call(Measured(10, 9000, 2000), None, rough, 300)
    Tokens(input=900.0, output=300, basis='measured over 10 stored requests; output stated')
    >>> tokens_per_call(Measured(3, 3000, 300), Measured(1, 1000, 500), rough, None)
    Tokens(input=1000.0, output=200.0, basis='measured over 3 stored requests and 1 check call')
    """
    sources = []
    pooled = Measured(0, 0, 0)
    scaled = False
    if stored is not None and stored.answers > 0:
        sources.append(f"{stored.answers:,} stored request{'s' * (stored.answers != 1)}")
        pooled += stored.standing_for(rough_left)
        scaled |= stored.standing_for(rough_left) != stored
    if probed is not None and probed.answers > 0:
        sources.append(f"{probed.answers:,} check call{'s' * (probed.answers != 1)}")
        pooled += probed.standing_for(rough_left)
        scaled |= probed.standing_for(rough_left) != probed
    basis = f"measured over {' and '.join(sources)}"
    if scaled:
        basis += ", input scaled to the images left"
    found = pooled.tokens(basis) if sources else rough
    if stated_output is None:
        return found
    return Tokens(found.input, stated_output, f"{found.basis}; output stated")


def per_call_cost(prices: Prices, tokens: Tokens, batched: bool) -> float:
    """The dollars of one request of ``tokens``, at the batch price where ``batched``.

    >>> from runner.experiment import Prices
    >>> p = Prices(input_per_mtok=1.0, output_per_mtok=10.0)
    >>> t = Tokens(1000, 100, "measured")
    >>> per_call_cost(p, t, False), per_call_cost(p, t, True)
    (0.002, 0.001)
    """
    price = prices.batch_cost if batched else prices.cost
    return price(round(tokens.input), round(tokens.output))


def capped_spend(costs: Sequence[CostEstimate], max_spend: float | None) -> float:
    """The estimated spend of ``costs``, at most ``max_spend`` (the run stops at its cap).

    >>> c = CostEstimate("q", "b", 10, 10, Tokens(0, 0, "m"), 0.5)
    >>> capped_spend([c], None), capped_spend([c], 2.0)
    (5.0, 2.0)
    """
    dollars = sum(c.dollars for c in costs)
    return dollars if max_spend is None else min(dollars, max_spend)


@dataclass(frozen=True)
class Limited:
    """What a run under ``--limit`` sends: the limit's requests, how many of them were left
    when the run began, and how many of the grid's were complete then. Only the limit's
    requests are sent, so every request completed since is one of them."""

    total: int
    left_at_start: int
    complete_at_start: int  # the whole grid's

    def complete(self, grid_complete: int) -> int:
        """The limit's requests complete, when ``grid_complete`` of the grid's are.

        >>> Limited(200, 150, 1000).complete(1040)
        90
        """
        done = self.total - self.left_at_start + max(grid_complete - self.complete_at_start, 0)
        return min(max(done, 0), self.total)


def stored_measure(progress: Progress) -> Measured:
    """The tokens of a configuration's stored answers per request they settled: every
    attempt's, re-asks included (what a request left will cost), over the requests complete.

    Not over the requests errored too: an errored request's attempts are mostly errors that
    used no tokens (a quota storm leaves hundreds), and counting them would lower the mean,
    the estimate and the spending cap's bound with it. An errored request's answered attempts
    stay in the tokens, on the high side, the side a cap needs. Where none is complete yet, the
    mean is per answered attempt."""
    settled = progress.complete if progress.complete > 0 else progress.answered
    return Measured(settled, progress.input_tokens, progress.output_tokens)


@dataclass(frozen=True)
class LeftCost:
    """What the requests a store has left will cost at the tokens its answers measured."""

    requests: int
    dollars: float
    unmeasured: tuple[str, ...]  # configurations with requests left and nothing stored yet


def left_cost(experiment: Experiment, progress: Sequence[Progress]) -> LeftCost:
    """The dollars of every request left, each configuration's at its stored requests' mean
    tokens, at its backend's prices (the batch price where batched)."""
    backend_of = {c.name: c.backend for c in experiment.configurations}
    dollars, requests, unmeasured = 0.0, 0, []
    for p in progress:
        if p.pending <= 0 or p.configuration not in backend_of:
            continue
        requests += p.pending
        measured = stored_measure(p)
        if measured.answers == 0:
            unmeasured.append(p.configuration)
            continue
        spec = experiment.backends[backend_of[p.configuration]]
        tokens = measured.tokens("stored")
        dollars += p.pending * per_call_cost(spec.prices, tokens, spec.mode == "batch")
    return LeftCost(requests, dollars, tuple(unmeasured))


def eta_s(left: int, completed: int, seconds: float) -> float | None:
    """Seconds until ``left`` requests are complete at the rate achieved (``completed`` in
    ``seconds``); ``None`` while no rate is known.

    >>> eta_s(100, 50, 10.0), eta_s(0, 0, 0.0), eta_s(100, 0, 10.0)
    (20.0, 0.0, None)
    """
    if left <= 0:
        return 0.0
    if completed <= 0 or seconds <= 0:
        return None
    return left * seconds / completed


def wall_time(
    backend: str, spec: BackendSpec, calls: int, tokens: float, latency_s: float | None
) -> WallEstimate:
    """The pace of ``calls`` calls of ``tokens`` tokens each: the tightest of the requests per
    minute, the tokens per minute and, with a measured latency, the calls in flight.

    >>> from runner.experiment import BackendSpec
    >>> spec = BackendSpec(provider="openai", model="m", requests_per_minute=600,
    ...                    tokens_per_minute=60_000, max_concurrency=4)
    >>> w = wall_time("b", spec, 1200, 1000, latency_s=2.0)
    >>> (w.calls_per_minute, w.bound, w.seconds)
    (60.0, 'tokens_per_minute', 1200.0)
    """
    paces = [(spec.requests_per_minute, "requests_per_minute")]
    if spec.tokens_per_minute is not None and tokens > 0:
        paces.append((spec.tokens_per_minute / tokens, "tokens_per_minute"))
    if latency_s is not None and latency_s > 0:
        paces.append((spec.max_concurrency * 60.0 / latency_s, "max_concurrency / latency"))
    pace, bound = min(paces)
    return WallEstimate(backend, calls, pace, bound)


def backend_walls(
    backends: Mapping[str, BackendSpec],
    costs: Sequence[CostEstimate],
    latencies: Mapping[str, float],
) -> list[WallEstimate]:
    """Each backend's wall time over its configurations' calls left (they share its limits);
    ``latencies``: a measured latency per configuration, where there is one."""
    walls = []
    for name, spec in backends.items():
        mine = [c for c in costs if c.backend == name]
        if not mine:
            continue
        calls = sum(c.left for c in mine)
        tokens = sum(c.left * (c.tokens.input + c.tokens.output) for c in mine) / max(calls, 1)
        measured = [latencies[c.configuration] for c in mine if c.configuration in latencies]
        latency = max(measured) if measured else None
        walls.append(wall_time(name, spec, calls, tokens, latency))
    return walls


@dataclass(frozen=True)
class CostInputs:
    """What one configuration's estimate is made from, gathered by the pre-flight
    (:mod:`runner.preflight`: the grid, the store and its calls) and estimated here in one call
    (:func:`estimated`)."""

    configuration: str
    backend: str
    requests: int  # in its grid
    left: int  # among those the run sends
    stored: Measured | None  # the store's answers' tokens
    probed: Measured | None  # the check's calls' tokens (and a noted check's)
    rough: Tokens  # the rough count, where nothing is measured
    rough_left: float | None  # the rough mean input of the requests left
    latency_s: float | None = None  # its calls' median latency, where one was made


def estimated(
    inputs: Sequence[CostInputs],
    backends: Mapping[str, BackendSpec],
    stated_output: int | None,
) -> tuple[list[CostEstimate], list[WallEstimate]]:
    """Each configuration's calls left, their tokens (:func:`tokens_per_call`) and cost at its
    backend's prices (the batch price in batch mode); and each backend's wall time over them
    (:func:`backend_walls`, in the order of ``backends``)."""
    costs = []
    for i in inputs:
        spec = backends[i.backend]
        tokens = tokens_per_call(i.stored, i.probed, i.rough, stated_output, i.rough_left)
        batched = spec.mode == "batch"
        cost = per_call_cost(spec.prices, tokens, batched)
        priced = spec.prices.input_per_mtok > 0 or spec.prices.output_per_mtok > 0
        costs.append(
            CostEstimate(
                i.configuration, i.backend, i.requests, max(i.left, 0), tokens, cost, priced,
                batched,
            )
        )  # fmt: skip
    latencies = {i.configuration: i.latency_s for i in inputs if i.latency_s is not None}
    return costs, backend_walls(backends, costs, latencies)


def money(dollars: float) -> str:
    """Dollars as an estimate is read: cents, and four places below a dollar (a smoke run's
    $0.24 is not told from $0.2449).

    >>> money(1234.5), money(0.24491), money(0.0)
    ('$1,234.50', '$0.2449', '$0.00')
    """
    if 0 < abs(dollars) < 1:
        return f"${dollars:,.4f}"
    return f"${dollars:,.2f}"


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it.

    >>> duration(42), duration(3_700), duration(200_000)
    ('42 s', '1 h 02 min', '2 d 07 h')
    """
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours:02d} h"
