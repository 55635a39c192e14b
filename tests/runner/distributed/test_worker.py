"""BackendWorker against the simulator on loopback, with a real store and no Ray."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    Configuration,
    DataRoot,
    Transport,
    VariantCache,
    plan,
)
from runner.backends import ApiKey
from runner.distributed import BackendSetup, BackendWorker, Outcome, Stop
from runner.simulator import Behaviour, Faults, SimSpec, Simulator, serving
from runner.store import GridRow, Registration, ResponseRow, Store
from tests.runner.distributed.pausable import GUARD_S, pausable_driver

QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # every answer parses


def _configuration(url: str, **settings: float) -> Configuration:
    transport = Transport.model_validate(
        {"base_url": url, "requests_per_minute": 60000.0, "max_concurrency": 8, **settings}
    )
    return QWEN.model_copy(update={"conditions": ("base",), "transport": transport})


def _setup(configuration: Configuration, images: Path, cache: Path) -> BackendSetup:
    """``configuration`` alone on its backend: its transport is the backend's."""
    return BackendSetup(configuration.transport, (configuration,), images, cache)


def _store(path: Path, cohort: Cohort) -> Store:
    store = Store(path)
    keys = plan(cohort, [_configuration("http://unused")], budgets=(8, 16), box=False)
    store.register(
        [Registration(QWEN.name, "p" * 64, "qwen", QWEN.model, 3, "{}")],
        [
            GridRow(
                configuration=k.configuration,
                condition=k.condition,
                budget=k.budget,
                qid=k.qid,
                attempts=3,
            )
            for k in keys
        ],
    )
    return store


def _run_worker(
    store: Store,
    cohort: Cohort,
    root: DataRoot,
    tmp: Path,
    spec: SimSpec,
    key: str = "sk-test",
    **transport: float,
) -> tuple[Outcome, Simulator]:
    simulator = Simulator(cohort, root.images, VariantCache(tmp / "variants"), spec)

    async def write(rows: Sequence[ResponseRow]) -> int:
        return store.write_responses(rows)

    async def main() -> Outcome:
        async with serving(simulator) as url:
            worker = BackendWorker(
                _setup(_configuration(url, **transport), root.images, tmp / "variants"), cohort,
                write, lambda _: ApiKey(key),
            )  # fmt: skip
            try:
                return await worker.lease(store.repository.pending())
            finally:
                await worker.close()

    return asyncio.run(main()), simulator


def test_a_chunk_is_sent_and_every_attempt_stored(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    requests = len(store.repository.pending())
    outcome, sim = _run_worker(store, small_cohort, small_root, tmp_path, SimSpec(behaviour=CLEAN))
    assert outcome.stop is None
    assert outcome.tally.finished == requests and outcome.tally.answered == requests
    assert store.repository.pending() == []
    _, (row,) = store.repository.query(
        "SELECT count(*), count(DISTINCT fingerprint) FROM responses"
    )
    assert row == (requests, requests)
    assert sum(sim.stats.statuses.values()) == requests


def test_quota_stops_the_worker_and_a_second_run_sends_exactly_the_rest(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    requests = len(store.repository.pending())
    spent = SimSpec(behaviour=CLEAN, faults=Faults(quota_after=25))
    outcome, sim = _run_worker(store, small_cohort, small_root, tmp_path, spent)
    assert outcome.stop is not None and outcome.stop.kind == "quota"
    assert "quota" in outcome.stop.why.lower()
    _, rows = store.repository.query(
        "SELECT outcome, count(*) FROM responses GROUP BY ALL ORDER BY 1"
    )
    stored = dict(rows)
    assert stored["answer"] == 25 == sim.stats.answered  # every paid answer is stored
    # Every call the simulator saw is stored: the answers, and the quota errors of the calls
    # that were in flight when the quota ran out (at most the concurrency).
    assert sum(stored.values()) == sum(sim.stats.statuses.values()) == outcome.tally.http_calls
    assert stored["quota"] <= 8
    left = store.repository.pending()
    assert len(left) == requests - 25
    # What the quota kept from being sent comes back to the feeder, untouched.
    assert len(outcome.given_back) == requests - outcome.tally.finished
    assert set(outcome.given_back) <= set(left)

    outcome, sim = _run_worker(store, small_cohort, small_root, tmp_path, SimSpec(behaviour=CLEAN))
    assert outcome.stop is None and outcome.tally.finished == len(left)
    assert sum(sim.stats.statuses.values()) == len(left)  # no completed call paid twice
    assert store.repository.pending() == []
    _, ((answers, keys),) = store.repository.query(
        "SELECT count(*), count(DISTINCT (configuration, condition, budget, qid)) FROM responses "
        "WHERE outcome = 'answer'"
    )
    assert answers == keys == requests


def test_http_calls_attempts_and_requests_are_counted_apart_and_retries_counted(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    """Every call the server saw is one the worker counts; each 5xx or reset is either retried
    within its attempt or ends it, and is counted as one or the other."""
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    requests = len(store.repository.pending())
    faulty = SimSpec(behaviour=CLEAN, faults=Faults(server_error=0.25, reset=0.25))
    outcome, sim = _run_worker(
        store, small_cohort, small_root, tmp_path, faulty,
        max_transport_retries=1, retry_backoff_s=0.001,
    )  # fmt: skip
    statuses = sim.stats.statuses
    failed = statuses[0] + statuses[500] + statuses[503]  # a reset is status 0
    traffic = outcome.tally
    assert traffic.http_calls == sum(statuses.values())
    assert traffic.http_calls == outcome.tally.attempts + traffic.transient_retried  # one more each
    assert traffic.transient_retried > 0 and outcome.tally.transient_ended > 0  # both happened
    assert traffic.transient_retried + outcome.tally.transient_ended == failed
    assert traffic.throttles_retried == 0
    assert outcome.tally.answered == statuses[200] and outcome.tally.finished == requests


def test_a_wrong_key_stops_the_worker_after_the_calls_in_flight(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    requests = len(store.repository.pending())
    spec = SimSpec(behaviour=CLEAN, api_key="sk-right")
    outcome, sim = _run_worker(store, small_cohort, small_root, tmp_path, spec, key="sk-wrong")
    assert outcome.stop is not None and outcome.stop.kind == "refused"
    assert "HTTP 401 invalid_api_key" in outcome.stop.why and outcome.tally.answered == 0
    # Only the calls in flight when the first 401 came back were sent (at most the
    # concurrency, 8); each is stored as the error it met, and is still to do.
    sent = sim.stats.statuses[401]
    assert 1 <= sent <= 8 < requests and sum(sim.stats.statuses.values()) == sent
    assert (
        outcome.tally.finished == outcome.tally.attempts == outcome.tally.errored == sent
    )  # each said as sent
    _, ((fatal,),) = store.repository.query(
        "SELECT count(*) FROM responses WHERE http_status = 401"
    )
    assert fatal == sent
    assert len(store.repository.pending()) == requests

    outcome, sim = _run_worker(store, small_cohort, small_root, tmp_path, spec, key="sk-right")
    assert outcome.stop is None and outcome.tally.answered == requests
    assert store.repository.pending() == []


def test_once_its_driver_is_gone_the_worker_sends_nothing_it_has_not_sent_already(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    """The lifeline broke after the 5th record: the calls waiting for a rate slot leave it
    unsent, no call is taken after, and only calls already on the wire reach the server."""
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    calls = store.repository.pending()
    simulator = Simulator(
        small_cohort, small_root.images, VariantCache(tmp_path / "v"), SimSpec(behaviour=CLEAN)
    )
    seen: list[int] = []  # calls the server had answered, and calls on the wire, at the break
    workers: list[BackendWorker] = []

    async def write(rows: Sequence[ResponseRow]) -> int:
        written = store.write_responses(rows)
        _, ((stored,),) = store.repository.query("SELECT count(*) FROM responses")
        if stored >= 5 and not seen:
            seen.append(sum(simulator.stats.statuses.values()))
            seen.append(workers[0].stats().in_flight)
            workers[0].driver_gone("the driver's connection closed")
        return written

    async def main() -> Outcome:
        async with serving(simulator) as url:
            # 10 calls a second: most of the lease waits for a rate slot when the line breaks.
            configuration = _configuration(url, requests_per_minute=600.0)
            key = lambda _: ApiKey("sk-test")  # noqa: E731
            setup = _setup(configuration, small_root.images, tmp_path / "v")
            workers.append(BackendWorker(setup, small_cohort, write, key))
            try:
                outcome = await workers[0].lease(calls)
                # A quota wait ending meanwhile mends nothing: the driver is still gone.
                await workers[0].resume_after_quota()
                again.append(await workers[0].lease(store.repository.pending()))
                return outcome
            finally:
                await workers[0].close()

    again: list[Outcome] = []
    outcome = asyncio.run(main())
    answered_then, on_the_wire = seen
    reached = sum(simulator.stats.statuses.values())
    assert again[0].stop == outcome.stop and again[0].tally.http_calls == 0
    assert len(again[0].given_back) == len(calls) - reached
    assert reached - answered_then <= on_the_wire <= 8  # none sent after the break
    assert outcome.tally.finished == reached  # each call sent was finished and stored
    assert len(outcome.given_back) == len(calls) - reached  # the rest come back unsent
    # and the feeder is told why, so the run says it rather than ending as if done
    assert outcome.stop == Stop(kind="driver", why="the driver's connection closed")
    assert len(store.repository.pending()) == len(calls) - reached


def test_while_its_driver_is_silent_the_worker_sends_nothing_and_then_finishes_its_lease(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    """The driver paused after the 5th record: once the silence is noticed the calls waiting
    for a rate slot stay waiting and none is taken, so only calls already on the wire reach
    the server; beats again, and the lease ends with every call sent once and stored."""
    store = _store(tmp_path / "exp.duckdb", small_cohort)
    calls = store.repository.pending()
    simulator = Simulator(
        small_cohort, small_root.images, VariantCache(tmp_path / "v"), SimSpec(behaviour=CLEAN)
    )

    paused: list[bool] = []

    def reached() -> int:
        return sum(simulator.stats.statuses.values())

    async def main() -> tuple[Outcome, int, int, int]:
        async with serving(simulator) as url, pausable_driver() as driver:

            async def write(rows: Sequence[ResponseRow]) -> int:
                written = store.write_responses(rows)
                _, ((stored,),) = store.repository.query("SELECT count(*) FROM responses")
                if stored >= 5 and not paused:
                    paused.append(True)
                    driver.pause()
                return written

            # 40 calls a second: most of the lease waits for a rate slot while it is silent.
            configuration = _configuration(url, requests_per_minute=2400.0)
            setup = _setup(configuration, small_root.images, tmp_path / "v")
            worker = BackendWorker(
                setup, small_cohort, write, lambda _: ApiKey("sk-test"), driver.address,
                silence_s=0.3,
            )  # fmt: skip
            try:
                lease = asyncio.create_task(worker.lease(calls))
                for _ in range(int(GUARD_S / 0.01)):  # until the worker notices the silence
                    if worker._lifeline.silent or lease.done():
                        break
                    await asyncio.sleep(0.01)
                assert worker._lifeline.silent, "the worker never noticed the silence"
                at_silence, on_the_wire = reached(), worker.stats().in_flight
                await asyncio.sleep(0.5)  # 20 calls' time: none of them may leave
                while_silent = reached()
                assert not lease.done()
                driver.resume()
                outcome = await asyncio.wait_for(lease, GUARD_S)
            finally:
                await worker.close()
            return outcome, at_silence, on_the_wire, while_silent

    outcome, at_silence, on_the_wire, while_silent = asyncio.run(main())
    assert while_silent - at_silence <= on_the_wire <= 8  # none sent while silent
    assert while_silent < len(calls)  # the silence came mid-lease
    assert outcome.stop is None and outcome.given_back == ()
    assert outcome.tally.finished == len(calls) == reached()  # every call sent once, and stored
    assert store.repository.pending() == []
