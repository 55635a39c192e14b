"""The one retry policy of every call a provider receives: an online request, and a batch's
upload, create, poll and read alike. Its caps are here and nowhere else.

Only a throttle (:class:`RateLimited`) and a transient failure are tried again; spent quota,
a refused key or model and every other refusal never are (a 4xx retried is a call paid for
that is known to fail). A retry waits the server's retry-after when it gave one (for an online
throttle, the pause the limiter then imposed on the whole backend, which honours it), else
full-jitter exponential backoff: retry k waits a time drawn up to
``retry_backoff_s · 2^(k-1)``, at most :data:`MAX_BACKOFF_S`. Tries are bounded by number
(``max_transport_retries + 1``) and by time (``max_retry_time_s``), the transport's settings.

The policy is plain data; :meth:`RetryPolicy.retrying` makes the tenacity loop that applies
it, with the sleep a test may replace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from conditions import Transport
from runner.backends._errors import CallError

_T = TypeVar("_T")
Sleep = Callable[[float], Awaitable[None]]
BeforeSleep = Callable[[RetryCallState], None]

# The longest jittered wait between two tries of one call, online or batch. 30 s: past it a
# server that named no retry-after is better asked again than waited for (a throttle's own
# wait, however long, is honoured as given); the transport's documented backoff says "at most
# 30 s". The batch runner used 60 s before the two paths shared one policy: a batch endpoint
# is no more patient than the online one, and its polls back off on their own (poll_s).
MAX_BACKOFF_S = 30.0
# The longest pause the limiter puts on a whole account after throttles in a row that named no
# retry-after (runner.backends._limits): twice the per-call cap, since it holds every call of
# the account back at once, until the provider's per-minute window has surely turned over.
MAX_THROTTLE_PAUSE_S = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long one call is tried (the module docstring says what and why)."""

    tries: int  # the first try and every retry
    within_s: float  # no retry starts later than this after the first try
    backoff_s: float  # the scale of the jittered backoff
    max_backoff_s: float = MAX_BACKOFF_S

    @classmethod
    def of(cls, transport: Transport) -> RetryPolicy:
        """The policy a backend's transport settings give."""
        return cls(
            tries=transport.max_transport_retries + 1,
            within_s=transport.max_retry_time_s,
            backoff_s=transport.retry_backoff_s,
        )

    def retrying(
        self, *, sleep: Sleep | None = None, before_sleep: BeforeSleep | None = None
    ) -> AsyncRetrying:
        """A tenacity loop for one call (a loop holds its call's state: one per call)."""
        return AsyncRetrying(
            sleep=asyncio.sleep if sleep is None else sleep,
            stop=stop_after_attempt(self.tries) | stop_before_delay(self.within_s),
            wait=waiting(self.backoff_s, self.max_backoff_s),
            retry=retry_if_exception(retryable),
            reraise=True,
            before_sleep=before_sleep,
        )

    async def call(self, work: Callable[[], Awaitable[_T]], *, sleep: Sleep | None = None) -> _T:
        """``work()``, tried again as the policy says; its last error raised. (Not
        ``retrying(...)(work)``: tenacity awaits only what it sees is a coroutine function,
        and a lambda or a partial that returns a coroutine is none.)"""
        async for attempt in self.retrying(sleep=sleep):
            with attempt:
                return await work()
        raise AssertionError("tenacity neither returned nor raised")  # pragma: no cover


def retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure another try may not meet (a throttle, a transient one)."""
    return isinstance(exc, CallError) and exc.retryable


def waiting(
    backoff_s: float, max_backoff_s: float = MAX_BACKOFF_S
) -> Callable[[RetryCallState], float]:
    """How long to wait before a retry: the server's retry-after when it gave one, else
    full-jitter exponential backoff on the scale of ``backoff_s``."""
    jitter = wait_random_exponential(multiplier=backoff_s, max=max_backoff_s)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, CallError) and exc.retry_after is not None:
            return exc.retry_after
        return float(jitter(state))

    return wait


__all__ = ["MAX_BACKOFF_S", "MAX_THROTTLE_PAUSE_S", "RetryPolicy", "retryable", "waiting"]
