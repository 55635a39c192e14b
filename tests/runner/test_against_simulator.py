"""Backends against the simulator on loopback: attempts, storms, quota, faults, secrets."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    Configuration,
    DataRoot,
    Request,
    RequestBuilder,
    Transport,
    VariantCache,
    plan,
)
from runner.backends import (
    ApiKey,
    AttemptRecord,
    Client,
    QuotaExhausted,
    ask,
)
from runner.simulator import Behaviour, Faults, SimSpec, Simulator, serving

T = TypeVar("T")
KEY = "sk-groundbench-test-0123456789abcdef"
QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")
GEMINI = next(c for c in PAPER_CONFIGURATIONS if c.provider == "gemini")
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # every answer parses


@pytest.fixture
def cache(tmp_path: Path) -> VariantCache:
    return VariantCache(tmp_path / "variants")


def _requests(
    cohort: Cohort, root: DataRoot, cache: VariantCache, configuration: Configuration, count: int
) -> list[Request]:
    builder = RequestBuilder(cohort, root.images, cache)
    keys = list(plan(cohort, [configuration]))
    step = max(1, len(keys) // count)  # spread over conditions, budgets and questions
    return [builder.build(k, configuration) for k in keys[::step][:count]]


def _with(configuration: Configuration, url: str, **transport: object) -> Configuration:
    settings = {"base_url": url, "requests_per_minute": 60000.0, "max_concurrency": 16}
    settings.update(transport)
    return configuration.model_copy(update={"transport": Transport.model_validate(settings)})


# Retries after faults that name no wait: how soon is not what these tests check, so they back
# off on a 20 ms scale rather than the default 0.5 s.
QUICK_BACKOFF_S = 0.02


def _run(
    sim: Simulator,
    configuration: Configuration,
    requests: Callable[[Configuration], list[Request]],
    body: Callable[[Client, list[Request]], Awaitable[T]],
    key: str = KEY,
    **transport: object,
) -> T:
    async def main() -> T:
        async with serving(sim) as url:
            conf = _with(configuration, url, **transport)
            async with Client(conf, ApiKey(key)) as backend:
                return await body(backend, requests(conf))

    return asyncio.run(main())


async def _ask_all(backend: Client, requests: list[Request]) -> list[AttemptRecord]:
    records: list[AttemptRecord] = []
    await asyncio.gather(*(ask(backend, r, records.append) for r in requests))
    return records


async def _ask_until_stopped(backend: Client, requests: list[Request]) -> list[AttemptRecord]:
    """As ``_ask_all``, where a terminal error (a refused key) may stop the backend."""
    records: list[AttemptRecord] = []
    ended = await asyncio.gather(
        *(ask(backend, r, records.append) for r in requests), return_exceptions=True
    )
    for outcome in ended:
        if isinstance(outcome, BaseException) and not getattr(outcome, "stops", False):
            raise outcome
    return records


def _by_request(records: list[AttemptRecord]) -> dict[tuple[object, ...], list[AttemptRecord]]:
    out: dict[tuple[object, ...], list[AttemptRecord]] = defaultdict(list)
    for r in records:
        out[(r.configuration, r.condition, r.qid, r.budget)].append(r)
    return out


@pytest.mark.parametrize("configuration", [QWEN, GEMINI], ids=["openai-wire", "gemini-wire"])
def test_a_batch_completes_with_one_record_per_attempt(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, configuration: Configuration
) -> None:
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(seed=1))
    records = _run(
        sim, configuration,
        lambda c: _requests(small_cohort, small_root, cache, c, 60), _ask_all,
    )  # fmt: skip
    grouped = _by_request(records)
    assert len(grouped) == 60
    for attempts in grouped.values():
        attempts.sort(key=lambda r: r.attempt)
        assert [r.attempt for r in attempts] == list(range(len(attempts)))
        assert all(r.outcome == "answer" for r in attempts)
        # Another attempt only after a parse failure; the last is parseable or the window ends.
        assert not any(r.parseable for r in attempts[:-1])
        assert attempts[-1].parseable or len(attempts) == (4 if configuration.best_effort else 3)
    assert sim.stats.statuses == Counter({200: len(records)})  # one call per attempt
    with_reasoning = [r for r in records if r.reasoning]
    assert with_reasoning and all("100, 100, 200" not in (r.answer or "") for r in with_reasoning)


def test_parse_failures_make_exactly_the_attempts_of_protocol_6(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(
        small_cohort, small_root.images, cache, SimSpec(behaviour=Behaviour(refusal=1.0))
    )
    for configuration, attempts in ((QWEN, 3), (GEMINI, 4)):  # Gemini authorises best effort
        records = _run(
            sim, configuration,
            lambda c: _requests(small_cohort, small_root, cache, c, 10), _ask_all,
        )  # fmt: skip
        for rs in _by_request(records).values():
            assert sorted(r.attempt for r in rs) == list(range(attempts))
            assert not any(r.parseable for r in rs)
            # Stateless: every attempt sent the identical request.
            assert len({(r.protocol, r.image_sha256, r.fingerprint) for r in rs}) == 1


def test_a_resumed_request_goes_on_from_its_next_attempt(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(
        small_cohort, small_root.images, cache, SimSpec(behaviour=Behaviour(refusal=1.0))
    )

    async def resumed(backend: Client, requests: list[Request]) -> list[list[AttemptRecord]]:
        kept: list[AttemptRecord] = []

        async def store(record: AttemptRecord) -> None:  # an async sink is awaited
            await asyncio.sleep(0)
            kept.append(record)

        out = [await ask(backend, requests[0], store, first=first) for first in (1, 2, 3)]
        assert kept == [r for rs in out for r in rs]
        return out

    from_1, from_2, from_3 = _run(
        sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 1), resumed
    )
    assert [r.attempt for r in from_1] == [1, 2]
    assert [r.attempt for r in from_2] == [2]
    assert from_3 == []  # the window is spent: nothing is sent
    assert sum(sim.stats.statuses.values()) == 3


def test_a_parseable_first_answer_is_the_only_attempt(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN))
    records = _run(sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 20), _ask_all)
    assert len(records) == 20 and all(r.parseable and r.attempt == 0 for r in records)


@pytest.mark.parametrize("headers", [True, False], ids=["x-ratelimit-headers", "no-headers"])
def test_under_a_429_storm_everything_completes_and_the_client_settles_within_the_limit(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, headers: bool
) -> None:
    limit = 1200.0  # 20 per second, a bucket of 4
    # Answers take 0.2-0.3 s, so the client, configured far above the server, sends more than
    # the bucket holds before the first answer can teach it the limit: a storm however busy
    # the machine (with answers in 10-20 ms, a slow client could learn the limit first).
    faults = Faults(
        requests_per_minute=limit, burst=4, retry_after="ms", latency_s=(0.2, 0.3),
        ratelimit_headers=headers,
    )  # fmt: skip
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN, faults=faults))
    count = 120
    records = _run(
        sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, count), _ask_all,
        requests_per_minute=12000.0, max_concurrency=32,  # configured 10× above the server
    )  # fmt: skip
    assert len(records) == count and all(r.outcome == "answer" for r in records)
    throttled = sim.stats.throttled_at
    assert throttled  # there was a storm
    assert sum(r.transport_retries for r in records) == len(throttled)  # each retried in place
    start = sim.stats.admitted_at[0]
    later = [t for t in throttled if t - start > 0.5]  # once the client has backed off
    span = sim.stats.admitted_at[-1] - start
    if headers:
        # The server's stated limit is learnt from the first reply: no throttle after it.
        assert later == []
    else:
        # AIMD probes the limit: at most about one throttle a second, not a storm.
        assert len(later) <= span
    assert count / span >= 0.6 * limit / 60  # and still close to the server's rate


def test_quota_exhaustion_is_terminal_at_once_with_no_retry(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(
        small_cohort, small_root.images, cache,
        SimSpec(behaviour=CLEAN, faults=Faults(quota_after=5)),
    )  # fmt: skip
    records: list[AttemptRecord] = []

    async def body(backend: Client, requests: list[Request]) -> list[QuotaExhausted]:
        errors = []
        for request in requests:  # one at a time, as the quota runs out
            try:
                await ask(backend, request, records.append)
            except QuotaExhausted as exc:
                errors.append(exc)
        return errors

    for configuration in (QWEN, GEMINI):
        sim.stats.statuses.clear()
        sim._calls = 0
        records.clear()
        errors = _run(
            sim, configuration, lambda c: _requests(small_cohort, small_root, cache, c, 12), body
        )
        assert len(errors) == 7 and errors[0].sent and not any(e.sent for e in errors[1:])
        assert sim.stats.statuses == Counter({200: 5, 429: 1})  # the 429 was not retried
        assert [r.outcome for r in records] == ["answer"] * 5 + ["quota"]
        assert records[-1].answer is None and records[-1].transport_retries == 0


def test_unbilled_faults_are_retried_inside_the_attempt_and_a_billed_broken_body_ends_it(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    # Which arrival draws which fault follows the requests' fingerprints (so the cohort's
    # hash): rates of 10% over ~60 arrivals leave each kind absent with odds below 1 in 500
    # whatever the cohort, and 20 retries make a request that exhausts them negligible.
    faults = Faults(server_error=0.1, overloaded=0.05, reset=0.1, malformed=0.1, truncated=0.1)
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN, faults=faults))
    records = _run(
        sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 40), _ask_all,
        max_retry_time_s=60.0, max_transport_retries=20, retry_backoff_s=QUICK_BACKOFF_S,
    )  # fmt: skip
    assert len(_by_request(records)) == 40 and len(records) == 40  # one attempt each
    answers = [r for r in records if r.outcome == "answer"]
    broken = [r for r in records if r.outcome != "answer"]
    assert all(r.parseable for r in answers)
    # A 200 whose body could not be read was billed: it ends its attempt, never tried again
    # within it (a retry would be paid again), stored as a transient error with no answer and
    # counted at its worst case, there being no usage to read (issue 56).
    assert len(broken) == sim.stats.faults["malformed"] + sim.stats.faults["truncated"] > 0
    worst = QWEN.decoding.max_output_tokens
    for r in broken:
        assert r.outcome == "transient" and r.http_status == 200 and r.answer is None
        assert r.usage_unknown == 1 and r.output_tokens == worst and (r.input_tokens or 0) > 0
    unbilled = ("server_error", "overloaded", "reset")
    assert sum(r.transport_retries for r in records) == sum(sim.stats.faults[f] for f in unbilled)
    assert set(sim.stats.faults) >= {"server_error", "reset", "malformed", "truncated"}
    assert sim.stats.paid_twice == 0


def test_retries_end_in_an_error_record_not_a_made_up_answer(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(
        small_cohort, small_root.images, cache, SimSpec(faults=Faults(server_error=1.0))
    )
    records = _run(
        sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 3), _ask_all,
        max_transport_retries=2, retry_backoff_s=QUICK_BACKOFF_S,
    )  # fmt: skip
    assert len(records) == 3  # an error ends the sequence: no further attempt
    for r in records:
        assert r.outcome == "transient" and r.answer is None and not r.parseable
        assert r.transport_retries == 2 and r.http_status in (500, 503)
    assert sum(sim.stats.statuses.values()) == 9


def test_a_timeout_is_transient_and_retried(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    slow = Faults(latency_s=(0.5, 0.5))
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(faults=slow))
    records = _run(
        sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 2), _ask_all,
        timeout_s=0.1, max_transport_retries=1,
    )  # fmt: skip
    assert [r.outcome for r in records] == ["transient", "transient"]
    assert all("no response within 0.1 s" in (r.error_message or "") for r in records)
    assert all(r.transport_retries == 1 for r in records)


def test_no_key_appears_in_records_logs_or_errors(
    small_cohort: Cohort,
    small_root: DataRoot,
    cache: VariantCache,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    faults = Faults(server_error=0.3)
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(faults=faults, api_key=KEY))
    seen: list[str] = []
    for key in (KEY, "sk-wrong-key-but-still-secret-42"):
        records = _run(
            sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 10),
            _ask_until_stopped, key=key,
        )  # fmt: skip
        seen += [r.model_dump_json() for r in records]
        seen += [repr(r) for r in records]
    wrong = [s for s in seen if "fatal" in s]
    assert wrong and all("[redacted]" in s for s in wrong if "error_message" in s)
    text = "\n".join(seen) + caplog.text
    assert "retry" in caplog.text  # the retries were logged
    for secret in (KEY, "sk-wrong-key-but-still-secret-42", "sk-wr", "sk-gr"):
        assert secret not in text


def test_faults_and_retries_never_change_what_a_call_answers(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    def answers(faults: Faults) -> tuple[dict[tuple[object, ...], str | None], Simulator]:
        """Every attempt's answer, keyed by request and attempt number (last)."""
        sim = Simulator(small_cohort, small_root.images, cache, SimSpec(seed=3, faults=faults))
        records = _run(
            sim, QWEN, lambda c: _requests(small_cohort, small_root, cache, c, 40), _ask_all,
            max_retry_time_s=60.0, retry_backoff_s=QUICK_BACKOFF_S,
        )  # fmt: skip
        return {
            (*k, r.attempt): r.answer for k, rs in _by_request(records).items() for r in rs
        }, sim

    clean, _ = answers(Faults())
    # The faults no server bills: a billed broken body ends its attempt (the test above).
    faulty, sim = answers(Faults(server_error=0.2, reset=0.1))
    assert faulty == clean  # attempts included: the same calls, the same answers
    assert any(key[-1] != 0 for key in clean)  # re-asked attempts answer anew
    assert sim.stats.paid_twice == 0  # each retried call was one no server billed
