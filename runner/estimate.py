"""What the calls left will cost, and how long they will take at the configured limits.

Plain Python, no Ray, no network. Tokens per call come from the best source there is, and the
estimate says which: the answers already stored for the configuration (measured), else the
check's own call (measured once), else a rough count (the prompt's characters / 4 and one
token per 28-pixel patch of the image, and the output mean stated with ``--output-tokens`` or
the limiter's prior). Dollars come from the backend's configured ``prices``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.experiment import BackendSpec

# The estimated input per call (the prompt's characters / 4, a token per 28-pixel patch; or
# the mean measured) is a mean, and providers count images differently: OpenAI's 512-pixel
# tiles make ~2× the patch count of a COCO image. Four times it bounds one call's input.
INPUT_MARGIN = 4.0


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
    left: int  # not complete yet
    tokens: Tokens
    per_call: float  # dollars
    priced: bool = True  # False: its backend has no prices, so its calls count as $0

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
    """Tokens over ``answers`` answered calls."""

    answers: int
    input_tokens: int
    output_tokens: int

    def tokens(self, basis: str) -> Tokens:
        n = max(self.answers, 1)
        return Tokens(self.input_tokens / n, self.output_tokens / n, basis)


def tokens_per_call(
    stored: Measured | None, probed: Measured | None, rough: Tokens, stated_output: int | None
) -> Tokens:
    """The mean tokens of a configuration's call, from the best source there is; a stated
    output mean replaces any other.

    >>> rough = Tokens(500, 1024, "rough")
    >>> tokens_per_call(None, None, rough, None).basis
    'rough'
    >>> tokens_per_call(Measured(10, 9000, 2000), None, rough, 300)
    Tokens(input=900.0, output=300, basis='measured over 10 stored answers; output stated')
    """
    if stored is not None and stored.answers > 0:
        found = stored.tokens(f"measured over {stored.answers:,} stored answers")
    elif probed is not None and probed.answers > 0:
        found = probed.tokens("measured by the check's call")
    else:
        found = rough
    if stated_output is None:
        return found
    return Tokens(found.input, stated_output, f"{found.basis}; output stated")


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
