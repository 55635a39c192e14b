"""An ``anthropic`` backend against the simulator's Messages API: answers with their thinking,
a refused key that stops the backend, a 429's retry-after, a 529's overload, spent credit, and
the ``anthropic-ratelimit-*`` headers kept to."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conditions import (
    CONDITION_NAMES,
    Cohort,
    Configuration,
    DataRoot,
    Decoding,
    Request,
    Thinking,
    VariantCache,
)
from runner.backends import AttemptRecord, Client, QuotaExhausted, Refused, ask
from runner.experiment import BackendSpec
from runner.simulator import Faults, SimSpec, Simulator
from tests.runner.test_against_simulator import (
    CLEAN,
    KEY,
    QUICK_BACKOFF_S,
    _ask_all,
    _requests,
    _run,
)

# An example Claude configuration: extended thinking with a budget, every condition (the
# temperature condition's 1.0 is the one temperature the API takes with thinking on).
CLAUDE = Configuration(
    name="claude",
    provider="anthropic",
    model="claude-sonnet-4-5",
    decoding=Decoding(thinking=Thinking(mode="on", budget_tokens=16000)),
    conditions=CONDITION_NAMES,
)


@pytest.fixture
def cache(tmp_path: Path) -> VariantCache:
    return VariantCache(tmp_path / "variants")


def test_an_anthropic_backend_answers_with_its_thinking_apart(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(seed=1, api_key=KEY))
    records = _run(
        sim, CLAUDE, lambda c: _requests(small_cohort, small_root, cache, c, 40), _ask_all
    )
    assert len({(r.condition, r.qid, r.budget) for r in records}) == 40
    assert all(r.outcome == "answer" and r.provider == "anthropic" for r in records)
    assert sim.stats.statuses == Counter({200: len(records)})
    thought = [r for r in records if r.reasoning]
    assert thought and all(r.condition != "thinking-off" for r in thought)
    assert all(r.input_tokens and r.output_tokens for r in records)
    assert all((r.response_id or "").startswith("msg_") for r in records)


def test_a_wrong_key_is_refused_and_stops_the_backend(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(api_key=KEY))
    records: list[AttemptRecord] = []

    async def body(backend: Client, requests: list[Request]) -> list[BaseException]:
        stopped: list[BaseException] = []
        for request in requests:
            try:
                await ask(backend, request, records.append)
            except Exception as exc:  # what stopped it is the assertion
                stopped.append(exc)
        return stopped

    stopped = _run(
        sim, CLAUDE, lambda c: _requests(small_cohort, small_root, cache, c, 5), body,
        key="sk-ant-wrong-key-but-secret-0123456789",
    )  # fmt: skip
    assert len(stopped) == 5 and isinstance(stopped[0], Refused) and stopped[0].stops
    assert sim.stats.statuses == Counter({401: 1})  # one call, then no more: the backend stopped
    assert [(r.outcome, r.http_status, r.error_code) for r in records] == [
        ("fatal", 401, "authentication_error")
    ]
    assert "sk-ant-wrong" not in (records[0].error_message or "")


def test_a_429_waits_its_retry_after_and_the_stated_limit_is_kept(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    faults = Faults(
        requests_per_minute=600.0, burst=2, retry_after="seconds", ratelimit_headers=True
    )
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(behaviour=CLEAN, faults=faults))
    limits: list[float] = []

    async def body(backend: Client, requests: list[Request]) -> list[AttemptRecord]:
        records = await _ask_all(backend, requests)
        limits.append(backend.limiter.limit)
        return records

    records = _run(
        sim, CLAUDE, lambda c: _requests(small_cohort, small_root, cache, c, 8), body,
        requests_per_minute=60000.0, max_concurrency=8,
    )  # fmt: skip
    assert len(records) == 8 and all(r.outcome == "answer" for r in records)
    throttled = sim.stats.throttled_at
    assert throttled and sum(r.transport_retries for r in records) == len(throttled)
    for at in throttled:  # a whole second (retry-after: 1) before the next call is admitted
        later = [t for t in sim.stats.admitted_at if t > at]
        assert not later or later[0] - at >= 0.9
    assert limits == [600.0]  # anthropic-ratelimit-requests-limit, read as the limit


def test_overload_529_is_retried_and_spent_credit_stops_at_once(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    overloaded = Simulator(
        small_cohort, small_root.images, cache,
        SimSpec(behaviour=CLEAN, faults=Faults(overloaded=0.3)),
    )  # fmt: skip
    records = _run(
        overloaded, CLAUDE, lambda c: _requests(small_cohort, small_root, cache, c, 20), _ask_all,
        max_transport_retries=20, retry_backoff_s=QUICK_BACKOFF_S,
    )  # fmt: skip
    assert all(r.outcome == "answer" for r in records)
    assert overloaded.stats.statuses[529] == sum(r.transport_retries for r in records) > 0

    spent = Simulator(
        small_cohort, small_root.images, cache,
        SimSpec(behaviour=CLEAN, faults=Faults(quota_after=3)),
    )  # fmt: skip
    answered: list[AttemptRecord] = []

    async def body(backend: Client, requests: list[Request]) -> list[QuotaExhausted]:
        errors = []
        for request in requests:
            try:
                await ask(backend, request, answered.append)
            except QuotaExhausted as exc:
                errors.append(exc)
        return errors

    errors = _run(spent, CLAUDE, lambda c: _requests(small_cohort, small_root, cache, c, 6), body)
    assert len(errors) == 3 and errors[0].sent and not any(e.sent for e in errors[1:])
    assert spent.stats.statuses == Counter({200: 3, 400: 1})  # the credit error, not retried
    assert [r.outcome for r in answered] == ["answer"] * 3 + ["quota"]


def test_a_simulated_anthropic_backend_is_reached_at_the_simulators_root() -> None:
    # The wire adds /v1/messages itself, as it does to https://api.anthropic.com.
    spec = BackendSpec(provider="anthropic", model=CLAUDE.model, base_url="simulator")
    assert spec.transport("http://127.0.0.1:9").base_url == "http://127.0.0.1:9"
