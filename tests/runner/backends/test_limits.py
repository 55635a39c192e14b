"""The limiter spaces requests, caps calls in flight (AIMD on the ceiling), learns a limit from
a throttle and keeps to what the server states."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime

import pytest

from runner.backends import Account, RateLimiter, parse_reset
from runner.backends._limits import Stopped
from tests.virtual_time import run_virtual, virtual_clock


def test_requests_are_spaced_at_the_configured_rate() -> None:
    async def main() -> list[float]:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=1200, max_concurrency=50, clock=clock)
        starts: list[float] = []

        async def one() -> None:
            async with limiter.slot():
                starts.append(clock())

        await asyncio.gather(*(one() for _ in range(8)))
        return starts

    starts = run_virtual(main)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # One per 50 ms, the window kept 0.5% longer than the server's for the way; the first at once.
    assert gaps == pytest.approx([0.05 * 1.005] * 7)
    assert starts[0] == 0.0


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


def test_a_throttle_pauses_halves_once_per_window_and_learns_the_limit() -> None:
    async def main() -> None:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=600, max_concurrency=16, clock=clock)
        slots = []
        for _ in range(10):  # ten calls in 0.9 s; the server admitted six, then throttled four
            async with limiter.slot() as slot:
                slots.append(slot)
        # Four calls of one window throttled: one decrease, not four.
        for slot in slots[6:]:
            limiter.throttled(slot, retry_after=0.15)
        assert limiter.ceiling == 8 and limiter.stats.decreases == 1
        # Six calls let through before the seventh left, and the server admits again 0.15 s
        # after it: six in that span, the rate learnt (1% held back).
        span = slots[6].sent_at - slots[0].sent_at + 0.15
        assert limiter.limit == pytest.approx(6 / span * 60 * 0.99)
        begun = clock()
        async with limiter.slot():
            waited = clock() - begun
        assert waited == pytest.approx(0.15)  # the whole backend waited out the retry-after
        for _ in range(120):  # the ceiling regains one per ceiling's worth of successes
            limiter.succeeded()
        await asyncio.sleep(300.0)
        assert limiter.ceiling == 16
        assert limiter.limit < 600  # the limit learnt is held, not regained while idle

    run_virtual(main)


def test_a_learnt_limit_climbs_back_each_window_and_a_refused_rise_waits_longer() -> None:
    async def main() -> list[float]:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=640, max_concurrency=4, clock=clock)
        async with limiter.slot():
            pass
        await asyncio.sleep(1.0)
        async with limiter.slot() as second:
            pass
        limiter.throttled(second, retry_after=1.0)  # one call let through in 1.5 s: 40/min
        seen = [limiter.limit]
        for _ in range(2):  # each window without a throttle: a sixteenth of 640 more
            await asyncio.sleep(61.0)
            async with limiter.slot():
                pass
            seen.append(limiter.limit)
        async with limiter.slot() as refused:
            pass
        limiter.throttled(refused, retry_after=1.0)  # the rise was too far: back to 80
        seen.append(limiter.limit)
        await asyncio.sleep(61.0)  # one window is not enough now: it waits two
        async with limiter.slot():
            pass
        seen.append(limiter.limit)
        await asyncio.sleep(61.0)
        async with limiter.slot():  # half the way to the pace refused (120)
            pass
        seen.append(limiter.limit)
        return seen

    assert run_virtual(main) == pytest.approx([40 * 0.99, 79.6, 119.6, 79.6, 79.6, 99.6])


def test_calls_of_an_inherited_account_count_in_the_window() -> None:
    """The pre-flight's limiter hands its calls to the backend's: a server counting both
    sees no more than the limit in any minute."""

    async def main() -> list[float]:
        clock = virtual_clock()
        preflight = RateLimiter(requests_per_minute=3, max_concurrency=4, clock=clock, wall=clock)
        for _ in range(3):  # three calls 20 s apart: the minute's whole allowance
            async with preflight.slot():
                pass
        backend = RateLimiter(requests_per_minute=3, max_concurrency=4, clock=clock, wall=clock)
        backend.inherit(preflight.account())
        begun = clock()
        async with backend.slot():  # the first call leaves the window a minute after it left
            first = clock() - begun
        fresh = RateLimiter(requests_per_minute=3, max_concurrency=4, clock=clock, wall=clock)
        begun = clock()
        async with fresh.slot():  # a limiter that knows nothing sends at once
            return [first, clock() - begun]

    assert run_virtual(main) == pytest.approx([60.3 - 40.2, 0.0])  # calls at 0, 20.1, 40.2


def test_an_account_from_elsewhere_delays_but_never_stops_the_backend() -> None:
    async def main() -> float:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=60, max_concurrency=4, clock=clock, wall=clock)
        # A pause of a day and calls sent in the future: taken as a minute, and as now.
        limiter.inherit(Account(sent=(clock() + 1e6,), paused_until=clock() + 86_400))
        begun = clock()
        async with limiter.slot():
            return clock() - begun

    assert run_virtual(main) == pytest.approx(60.0)


def test_a_throttle_without_retry_after_backs_off_exponentially() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4)
        async with limiter.slot() as slot:
            pass
        return [limiter.throttled(slot, None) for _ in range(4)]

    assert asyncio.run(main()) == [0.5, 1.0, 2.0, 4.0]


def test_remaining_zero_in_the_headers_pauses_until_the_reset() -> None:
    async def main() -> float:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4, clock=clock)
        limiter.observe(
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "80ms"}
        )
        begun = clock()
        async with limiter.slot():
            return clock() - begun

    assert run_virtual(main) == pytest.approx(0.08)


def test_the_token_bucket_holds_back_a_call_larger_than_what_is_left() -> None:
    async def main() -> float:
        clock = virtual_clock()
        limiter = RateLimiter(
            requests_per_minute=1e6, max_concurrency=4, tokens_per_minute=6000, clock=clock
        )
        async with limiter.slot(6000) as slot:  # the whole minute's tokens, estimated
            slot.settle(5990)  # the provider reported less: 10 tokens come back
        begun = clock()
        async with limiter.slot(20):  # 20 needed, 10 left: 10 more at 100 tokens/s
            return clock() - begun

    assert run_virtual(main) == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("1m30.5s", 90.5), ("250ms", 0.25), ("2", 2.0), ("x", None)],
)
def test_reset_headers_in_every_spelling(header: str, seconds: float | None) -> None:
    assert parse_reset(header) == seconds


def test_a_stated_token_limit_is_kept_from_what_the_server_says_remains() -> None:
    async def main() -> float:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4, clock=clock)
        limiter.observe({"x-ratelimit-limit-tokens": "6000", "x-ratelimit-remaining-tokens": "100"})
        async with limiter.slot(100):  # what remains: at once
            pass
        begun = clock()
        async with limiter.slot(50):  # 50 more at 100 tokens a second
            return clock() - begun

    assert run_virtual(main) == pytest.approx(0.5)


def test_nothing_remaining_under_a_stated_limit_waits_for_one_call_not_the_whole_reset() -> None:
    async def main() -> float:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4, clock=clock)
        limiter.observe(
            {
                "x-ratelimit-limit-requests": "60",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1m0s",  # the whole allowance back in a minute
            }
        )
        begun = clock()
        async with limiter.slot():
            return clock() - begun

    assert run_virtual(main) == pytest.approx(1.0)  # one call's share: 60 s over 60


def test_anthropic_ratelimit_headers_are_read_as_the_x_ratelimit_ones() -> None:
    # Anthropic states its limits as anthropic-ratelimit-*, its reset as an RFC 3339 time.
    reset = datetime.fromtimestamp(time.time() + 60, UTC).isoformat().replace("+00:00", "Z")

    async def main() -> float:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=1e6, max_concurrency=4, clock=clock)
        limiter.observe(
            {
                "anthropic-ratelimit-requests-limit": "60",
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": reset,
            }
        )
        assert limiter.limit == 60
        begun = clock()
        async with limiter.slot():
            return clock() - begun

    assert run_virtual(main) == pytest.approx(1.0, abs=0.05)  # one call's share: ~60 s over 60
    assert parse_reset("2026-01-01T00:01:00Z", now_epoch=1767225600.0) == 60.0


@pytest.mark.parametrize("pressed_after", [False, True], ids=["then-paced", "then-pressing"])
def test_a_stall_between_two_bucket_throttles_is_diluted_not_learnt(pressed_after: bool) -> None:
    """A bucket of 4 at 20 calls a second, exact waits, a client pressing at 40 a second that
    stalls 0.6 s (a busy machine): between the two throttles around the stall the bucket
    admitted about 9 a second, and a run on a loaded machine learnt that and kept to it, no
    throttle coming again to mend it. Measured from the storm's first throttle too, the stall
    is diluted; and a client pressing on after it learns from the throttles that follow."""
    from runner.backends._learning import LearntLimit

    rate, burst, configured = 20.0, 4.0, 12_000.0
    learnt = LearntLimit(configured)
    learnt.busy_since = 0.0
    tokens, last = burst, 0.0
    sends = [k * 0.025 for k in range(41)] + [1.6 + k * 0.025 for k in range(40)]
    for t in sends:  # 0-1 s, a stall, then from 1.6 s
        tokens, last = min(burst, tokens + (t - last) * rate), t
        learnt.add_sent(t)
        if tokens >= 1:
            tokens -= 1
            continue
        again = t + (1 - tokens) / rate  # the bucket's next token, to the millisecond
        learnt.learn(t, again, True, configured, configured, t)
        learnt.throttled(t, again, again)
        if t > 1.6 and not pressed_after:
            break  # paced at what it learnt, below the bucket's rate: no throttle again
    # Paced after the stall: 46% of the rate learnt before, 73% now (a 0.6 s stall in 1.8 s).
    floor = 0.95 if pressed_after else 0.7
    assert floor * rate * 60 <= learnt.value <= rate * 60  # never above what the bucket admits


def test_a_suspended_limiter_admits_nothing_until_resumed_and_a_halt_still_ends_the_wait() -> None:
    """A worker's driver silent (the limiter suspended): the calls waiting keep waiting, for an
    hour if need be, and none leaves; resumed, they go at the configured spacing. Halted while
    suspended (the driver gone), a waiting call leaves unsent."""

    async def main() -> None:
        clock = virtual_clock()
        limiter = RateLimiter(requests_per_minute=1200, max_concurrency=8, clock=clock)
        starts: list[float] = []

        async def one() -> None:
            async with limiter.slot():
                starts.append(clock())

        limiter.suspend()
        waiting = [asyncio.create_task(one()) for _ in range(3)]
        await asyncio.sleep(3600)
        assert starts == [] and not any(w.done() for w in waiting)
        limiter.resume()
        await asyncio.gather(*waiting)
        assert starts == pytest.approx([3600 + i * 0.05 * 1.005 for i in range(3)])
        limiter.suspend()
        last = asyncio.create_task(one())
        await asyncio.sleep(60)
        limiter.halt(RuntimeError("the driver is gone"))
        with pytest.raises(Stopped):
            await last
        assert len(starts) == 3 and limiter.stats.released_unsent == 1

    run_virtual(main)
