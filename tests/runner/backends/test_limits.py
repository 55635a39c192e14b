"""The limiter spaces requests, caps calls in flight, and backs off and recovers (AIMD)."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from runner.backends import RateLimiter, parse_reset


def test_requests_are_spaced_at_the_configured_rate() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(requests_per_minute=1200, max_concurrency=50)  # one per 50 ms
        starts: list[float] = []

        async def one() -> None:
            async with limiter.slot():
                starts.append(time.monotonic())

        await asyncio.gather(*(one() for _ in range(8)))
        return starts

    starts = asyncio.run(main())
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.045  # never faster than the limit (timer slack below 5 ms)
    assert starts[-1] - starts[0] == pytest.approx(7 * 0.05, abs=0.1)


def test_calls_in_flight_never_exceed_the_ceiling() -> None:
    async def main() -> int:
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=3)
        peak = 0

        async def one() -> None:
            nonlocal peak
            async with limiter.slot():
                peak = max(peak, limiter.in_flight)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(one() for _ in range(20)))
        return peak

    assert asyncio.run(main()) == 3


def test_a_throttle_pauses_halves_once_per_window_and_recovers_additively() -> None:
    async def main() -> None:
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=16)
        slots = []
        for _ in range(4):
            async with limiter.slot() as slot:
                slots.append(slot)
        # Four calls of one window throttled: one decrease, not four.
        for slot in slots:
            limiter.throttled(slot, retry_after=0.05)
        assert limiter.ceiling == 8 and limiter.stats.decreases == 1
        assert limiter.rate_factor == 0.5
        begun = time.monotonic()
        async with limiter.slot():
            waited = time.monotonic() - begun
        assert waited >= 0.04  # the whole backend waited out the retry-after
        for _ in range(120):  # the ceiling regains one per ceiling's worth of successes
            limiter.succeeded()
        assert limiter.ceiling == 16 and limiter.rate_factor < 0.6
        later = time.monotonic() + 10.0  # the rate regains 5% of the configured rate a second
        limiter.clock = lambda: later
        limiter.succeeded()
        assert limiter.rate_factor == 1.0

    asyncio.run(main())


def test_a_throttle_without_retry_after_backs_off_exponentially() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4)
        async with limiter.slot() as slot:
            pass
        return [limiter.throttled(slot, None) for _ in range(4)]

    assert asyncio.run(main()) == [0.5, 1.0, 2.0, 4.0]


def test_remaining_zero_in_the_headers_pauses_until_the_reset() -> None:
    async def main() -> float:
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4)
        limiter.observe(
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "80ms"}
        )
        begun = time.monotonic()
        async with limiter.slot():
            return time.monotonic() - begun

    assert asyncio.run(main()) >= 0.07


def test_the_token_bucket_holds_back_a_call_larger_than_what_is_left() -> None:
    async def main() -> float:
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4, tokens_per_minute=6000)
        async with limiter.slot(6000) as slot:  # the whole minute's tokens, estimated
            slot.settle(5990)  # the provider reported less: 10 tokens come back
        begun = time.monotonic()
        async with limiter.slot(20):  # 20 needed, 10 left: 10 more at 100 tokens/s
            return time.monotonic() - begun

    assert 0.05 <= asyncio.run(main()) <= 0.5


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("1m30.5s", 90.5), ("250ms", 0.25), ("2", 2.0), ("x", None)],
)
def test_reset_headers_in_every_spelling(header: str, seconds: float | None) -> None:
    assert parse_reset(header) == seconds
