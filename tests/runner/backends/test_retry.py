"""The one retry policy, online and batch alike: what it tries again, how long it waits, when
it stops. Plain code, no server: the sleep is a list the test reads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from conditions import Transport
from runner.backends import CallError, Fatal, QuotaExhausted, RateLimited, Refused, Transient
from runner.backends._retry import MAX_BACKOFF_S, RetryPolicy


def _run(policy: RetryPolicy, failures: list[CallError]) -> tuple[list[float], int, object]:
    """Call a function that raises ``failures`` in turn, then answers: the waits slept, the
    calls made, and what came back (or the error raised)."""
    waits: list[float] = []
    calls = 0

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def work() -> str:
        nonlocal calls
        calls += 1
        if failures:
            raise failures.pop(0)
        return "answer"

    async def main(call: Callable[[], Awaitable[str]]) -> object:
        try:
            return await policy.call(call, sleep=sleep)
        except CallError as exc:
            return exc

    result = asyncio.run(main(lambda: work()))  # a lambda: what the batch runner passes
    return waits, calls, result


def test_a_throttle_waits_the_servers_retry_after_then_answers() -> None:
    policy = RetryPolicy(tries=5, within_s=900.0, backoff_s=0.5)
    throttles: list[CallError] = [RateLimited("slow", status=429, retry_after=7.5)] * 2
    waits, calls, result = _run(policy, throttles)
    assert waits == [7.5, 7.5] and calls == 3 and result == "answer"


@pytest.mark.parametrize(
    "error",
    [
        QuotaExhausted("spent", status=429),
        Refused("bad key", status=401),
        Fatal("bad request", status=400),
    ],
    ids=["quota", "refused key", "fatal"],
)
def test_quota_a_refused_key_and_a_refusal_are_never_tried_again(error: CallError) -> None:
    waits, calls, result = _run(RetryPolicy(tries=5, within_s=900.0, backoff_s=0.5), [error])
    assert waits == [] and calls == 1 and result is error


def test_it_stops_after_its_tries_raising_the_last_error_within_the_backoff_cap() -> None:
    policy = RetryPolicy(tries=4, within_s=900.0, backoff_s=100.0)
    failures: list[CallError] = [Transient(f"503 #{n}", status=503) for n in range(10)]
    waits, calls, result = _run(policy, failures)
    assert calls == 4 and isinstance(result, Transient) and result.message == "503 #3"
    assert len(waits) == 3 and all(0.0 <= w <= MAX_BACKOFF_S for w in waits)


def test_the_transport_settings_make_the_policy_with_one_cap() -> None:
    transport = Transport(max_transport_retries=3, max_retry_time_s=60.0, retry_backoff_s=2.0)
    policy = RetryPolicy.of(transport)
    assert policy == RetryPolicy(tries=4, within_s=60.0, backoff_s=2.0, max_backoff_s=30.0)
