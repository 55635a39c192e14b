"""What the feeder drives: one backend's calls, sent online or as the provider's batches.

A :class:`CallPort` takes *leases*: a few calls at a time, never more in all than its
:class:`Shape` says it may hold. Online, that is its concurrency and a small buffer, so a
worker whose driver is gone holds almost nothing it could still send; in batch mode, a lease
is one batch's lines and the port holds its open batches. Both report an :class:`Outcome`
per lease, and give back untouched what they did not send, so one policy (the feeder's)
decides what is sent, resent, capped or stopped in both modes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from runner.backends import CallError, Client, QuotaExhausted
from runner.store import Pending

StopKind = Literal["quota", "refused", "capped"]


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

    What is left of its calls stays pending in the store, for the next run.
    """

    kind: StopKind
    why: str

    @classmethod
    def of(cls, error: CallError) -> Stop:
        """The stop a terminal ``error`` (``error.stops``) makes: spent quota, or a refusal."""
        if isinstance(error, QuotaExhausted):
            return cls(kind="quota", why=error.message)
        return cls(kind="refused", why=str(error))  # with its status and code: what is looked up


@dataclass(frozen=True)
class Traffic:
    """What a worker's backends put on the wire since the worker started: running totals.

    An attempt is one or more HTTP calls: the first, and one more for each failure retried
    within it (a transient one, or a throttle).
    """

    http_calls: int = 0  # POSTs sent, every try of every attempt
    transient_retried: int = 0  # 5xx, resets, timeouts, broken bodies: tried again
    throttles_retried: int = 0  # 429s: tried again after the pause

    @classmethod
    def of(cls, backends: Iterable[Client]) -> Traffic:
        """The totals of ``backends`` (one limiter's configurations)."""
        calls = transient = throttles = 0
        for b in backends:
            calls += b.calls_sent
            transient += b.retried["transient"]
            throttles += b.retried["rate-limited"]
        return cls(calls, transient, throttles)

    def __add__(self, other: Traffic) -> Traffic:
        return Traffic(
            self.http_calls + other.http_calls,
            self.transient_retried + other.transient_retried,
            self.throttles_retried + other.throttles_retried,
        )

    def latest(self, other: Traffic) -> Traffic:
        """The later of two readings of one worker's totals (each only grows), whichever
        order they arrive in."""
        return Traffic(
            max(self.http_calls, other.http_calls),
            max(self.transient_retried, other.transient_retried),
            max(self.throttles_retried, other.throttles_retried),
        )


@dataclass(frozen=True)
class Outcome:
    """What became of one lease of calls (or of the batches an earlier run left open)."""

    calls: int  # requests whose attempts finished (a call not sent once stopped is not one)
    attempts: int  # records stored (answers and errors)
    answered: int
    errored: int
    transient: int = 0  # of the errored: attempts that a transient failure ended
    stop: Stop | None = None  # what stopped the backend (spent quota, a refusal), if anything did
    input_tokens: int = 0  # of its answers: what the provider bills
    output_tokens: int = 0  # reasoning included, as both wires report it
    # The largest input one answer reported: the spending cap's bound on a call's input
    # learns from it, so an input estimate that was low is corrected by the first answers.
    max_input_tokens: int = 0
    # Calls handed but never sent (the backend stopped first; a batch had no room for them):
    # still pending, and handed again by the feeder where it may.
    given_back: tuple[Pending, ...] = ()
    # Lines a batch took and never ran (it expired, failed, was cancelled), and the keys of a
    # batch abandoned before it was made: sent or held, not stored, so pending again — the
    # feeder asks the store once more for them (``Shape.resends`` bounds how often).
    unrun: int = 0
    # The worker's running totals as the lease ended, not the lease's own: leases run at once
    # and share the backends, so a call is never told to one lease.
    traffic: Traffic = Traffic()
    learnt_per_minute: float | None = None  # the limit its 429s taught the backend, if any

    @classmethod
    def nothing(cls, given_back: Sequence[Pending] = ()) -> Outcome:
        return cls(0, 0, 0, 0, given_back=tuple(given_back))


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

    async def lease(self, calls: list[Pending]) -> Outcome:
        """Send ``calls``: every attempt each may make (online), or one batch of them; what is
        not sent comes back in ``given_back``. :class:`~runner.distributed.WorkerLost` if the
        worker dies meanwhile."""
        ...

    async def collect_open(self) -> Outcome:
        """Collect what an earlier run left in flight (open batches), sending nothing."""
        ...

    async def resume_after_quota(self) -> None:
        """Accept calls again after a quota error."""
        ...


__all__ = ["CallPort", "Outcome", "Shape", "Stop", "StopKind", "Traffic", "online_shape"]
