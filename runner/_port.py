"""What the feeder drives: one backend's calls, sent online or as the provider's batches.

A :class:`CallPort` takes *leases*: a few calls at a time, never more in all than its
:class:`Shape` says it may hold. Online, that is its concurrency and a small buffer, so a
worker whose driver is gone holds almost nothing it could still send; in batch mode, a lease
is one batch's lines and the port holds its open batches. Both report an :class:`Outcome`
per lease, and give back untouched what they did not send, so one policy (the feeder's)
decides what is sent, resent, capped or stopped in both modes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Literal, Protocol

from runner.backends import AttemptRecord, CallError, Client, QuotaExhausted
from runner.store import Pending

StopKind = Literal["quota", "refused", "capped", "driver"]


@dataclass(frozen=True, kw_only=True)
class Stop:
    """Why a backend stopped before its calls were done, and what the user does about it.

    - ``quota``: the account's quota or balance is spent (:class:`QuotaExhausted`); ``why`` is
      the server's words. Top the account up or raise its limit (or let a daily quota reset),
      then run again; ``--wait-on-quota`` waits within the run instead.
    - ``refused``: its key, the account's permission or the model was refused (401, 403, 404):
      no call of it can succeed, and no wait mends it; ``why`` is the error with its status and
      code. Put the key (``api_key_env``) or the model right, then run again.
    - ``capped``: the run's spending cap (``--max-spend``) pays for no further call; ``why``
      says what the next one could have cost. Run again with a higher cap.
    - ``driver``: its worker's lifeline to the driver ended (the connection closed or was
      reset) while the driver ran on; a worker that cannot tell a lost driver from one that
      ended sends nothing more (:mod:`runner.distributed._lifeline`). ``why`` says how the
      connection ended. Run again. (A driver only silent, paused, is waited for: no stop.)

    What is left of its calls stays pending in the store, for the next run.
    """

    kind: StopKind
    why: str

    @property
    def said(self) -> str:
        """What stopped it, as a run's lines say it."""
        return _SAID[self.kind]

    @classmethod
    def of(cls, error: CallError) -> Stop:
        """The stop a terminal ``error`` (``error.stops``) makes: spent quota, or a refusal."""
        if isinstance(error, QuotaExhausted):
            return cls(kind="quota", why=error.message)
        return cls(kind="refused", why=str(error))  # with its status and code: what is looked up


_SAID: dict[StopKind, str] = {
    "quota": "quota exhausted",
    "refused": "no call of it can succeed",
    "capped": "the spending cap pays for no further call",
    "driver": "its lifeline to the driver broke",
}

Cost = Callable[[int, int], float]  # dollars of (input tokens, output tokens) at one price


@dataclass(frozen=True)
class Tally:
    """A run's counts and costs, or any part of them: the one record every view reads.

    Immutable and additive: a producer (a worker's lease, a batch's reading, the pre-flight)
    emits what happened since it last emitted, and a consumer (the feeder, the cap, the run's
    report, the live view) only adds what it is given (``a + b``). Dollars are a linear
    function of the tokens (:meth:`spent`), at the price of the mode the tokens were bought
    in, which the consumer knows. An attempt is one or more HTTP calls: the first, and one more
    for each failure retried within it (a transient one, or a throttle). Adding a measure is
    adding a field here.
    """

    http_calls: int = 0  # POSTs sent, every try of every attempt
    transient_retried: int = 0  # 5xx, resets, timeouts, broken bodies: tried again
    throttles_retried: int = 0  # 429s: tried again after the pause
    attempts: int = 0  # records stored: answers and errors
    answered: int = 0  # of them, answers
    transient_ended: int = 0  # of them, errors of a transient failure (sent again later)
    finished: int = 0  # requests whose attempts ended (a call not sent once stopped is not one)
    input_tokens: int = 0  # billed, as counted (AttemptRecord): reasoning is output
    output_tokens: int = 0
    usage_unknown: int = 0  # billed calls whose usage was no count: counted at their worst case
    unknown_input_tokens: int = 0  # the tokens of the attempts that hold them
    unknown_output_tokens: int = 0
    # The largest input one attempt was counted at (the spending cap's bound on a call's input
    # learns from it): the one field combined by max, not by sum.
    max_input_tokens: int = 0

    @classmethod
    def of(cls, record: AttemptRecord) -> Tally:
        """One stored attempt."""
        inputs, outputs = record.input_tokens or 0, record.output_tokens or 0
        unknown = record.usage_unknown > 0
        return cls(
            attempts=1,
            answered=int(record.outcome == "answer"),
            transient_ended=int(record.outcome == "transient"),
            input_tokens=inputs,
            output_tokens=outputs,
            usage_unknown=record.usage_unknown,
            unknown_input_tokens=inputs if unknown else 0,
            unknown_output_tokens=outputs if unknown else 0,
            # An input counted at its worst case is the bound itself: learning it is no harm.
            max_input_tokens=inputs,
        )

    @classmethod
    def of_traffic(cls, backends: Iterable[Client]) -> Tally:
        """The HTTP calls ``backends`` sent and the failures they retried, since each was made."""
        calls = transient = throttles = 0
        for b in backends:
            calls += b.calls_sent
            transient += b.retried["transient"]
            throttles += b.retried["rate-limited"]
        return cls(http_calls=calls, transient_retried=transient, throttles_retried=throttles)

    def __add__(self, other: Tally) -> Tally:
        return Tally(**{name: _combine(name, self, other, _plus) for name in _FIELDS})

    def since(self, earlier: Tally) -> Tally:
        """What a producer's running total added since ``earlier`` (an earlier reading of it):
        the delta it emits. ``max_input_tokens`` stays whole: adding a max again changes
        nothing."""
        return Tally(**{name: _combine(name, self, earlier, _minus) for name in _FIELDS})

    @property
    def errored(self) -> int:
        return self.attempts - self.answered

    def spent(self, cost: Cost) -> float:
        """Dollars of its tokens at ``cost``'s price."""
        return cost(self.input_tokens, self.output_tokens)

    def unknown_spent(self, cost: Cost) -> float:
        """Dollars of the attempts whose billed calls had unknown usage (at their worst case)."""
        return cost(self.unknown_input_tokens, self.unknown_output_tokens)


def _plus(a: int, b: int) -> int:
    return a + b


def _minus(a: int, b: int) -> int:
    return a - b


def _combine(name: str, a: Tally, b: Tally, op: Callable[[int, int], int]) -> int:
    if name == "max_input_tokens":
        return max(a.max_input_tokens, b.max_input_tokens)
    return op(getattr(a, name), getattr(b, name))


_FIELDS = tuple(f.name for f in fields(Tally))


@dataclass(frozen=True)
class Outcome:
    """What became of one lease of calls (or of the batches an earlier run left open)."""

    # What the port did since its last outcome, whichever lease it was for: leases run at
    # once and share the backends, so a call is never told to one lease. The sum of a port's
    # outcomes is all it did (less what was in flight when it died).
    tally: Tally = Tally()
    stop: Stop | None = None  # what stopped the backend (spent quota, a refusal), if anything did
    # Calls handed but never sent (the backend stopped first; a batch had no room for them):
    # still pending, and handed again by the feeder where it may.
    given_back: tuple[Pending, ...] = ()
    # Lines a batch took and never ran (it expired, failed, was cancelled), and the keys of a
    # batch abandoned before it was made: sent or held, not stored, so pending again — the
    # feeder asks the store once more for them (``Shape.resends`` bounds how often).
    unrun: int = 0
    learnt_per_minute: float | None = None  # the limit its 429s taught the backend, if any

    @classmethod
    def nothing(cls, given_back: Sequence[Pending] = ()) -> Outcome:
        return cls(given_back=tuple(given_back))


@dataclass(frozen=True)
class Shape:
    """How a port takes its calls."""

    holds: int  # the most calls it may hold at once, in every lease together
    lease: int  # the most calls in one lease
    # Times one attempt may be handed again in one run once a lease ended without storing it
    # (a batch that expired or failed, a line it never ran). Online, an attempt whose call
    # ended in an error waits for the next run: 0.
    resends: int = 0
    one_attempt: bool = False  # a lease's call makes one attempt (a batch line), not all left


def online_shape(concurrency: int) -> Shape:
    """An online worker's: its concurrency, and a quarter more queued behind (at least one),
    handed a quarter at a time, so the worker is topped up as its calls finish and never
    holds more than it may send now and a little.

    >>> online_shape(8)
    Shape(holds=10, lease=2, resends=0, one_attempt=False)
    >>> online_shape(1)
    Shape(holds=2, lease=1, resends=0, one_attempt=False)
    """
    buffer = max(1, concurrency // 4)
    return Shape(holds=concurrency + buffer, lease=buffer)


class CallPort(Protocol):
    """One backend's worker, online or in batch mode, wherever it runs."""

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        """Send ``calls``: every attempt each may make (online), or one batch of them; what is
        not sent comes back in ``given_back``. ``input_bound``: the input per call the
        spending cap reserved, at which a call whose usage is unknown is counted (None: no
        cap; a request's own rough bound). :class:`~runner.distributed.WorkerLost` if the
        worker dies meanwhile."""
        ...

    async def collect_open(self) -> Outcome:
        """Collect what an earlier run left in flight (open batches), sending nothing."""
        ...

    async def resume_after_quota(self) -> None:
        """Accept calls again after a quota error."""
        ...


__all__ = ["CallPort", "Cost", "Outcome", "Shape", "Stop", "StopKind", "Tally", "online_shape"]
