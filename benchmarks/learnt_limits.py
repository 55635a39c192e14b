"""A run's pre-flight and its backend against each server limiter, told the exact limit and 4×.

Issue 38's goals: told 4× the real limit (300 a minute against 75), every run ≥ 90% of the real
limit over five minutes with ≤ 3 × 429 after the first minute; told the exact limit, 0 × 429
and ≥ 98%. Five runs of each, the pre-flight on.

Each run is a fresh simulator limiting calls as one of the three servers providers run (sliding
window, fixed window on the minute, token bucket holding a second's calls), ``Retry-After`` in
whole seconds, no rate headers (a limit told wrong must be learnt from the 429s), answers in
0.5–1.5 s. The run begins at a random point of the server's minute. As a run does:

1. the pre-flight makes its calls through a limiter of the backend's account, as
   :mod:`runner.preflight` makes them: :data:`~runner.preflight.PROBES_PER_DECODING` requests of
   each of the grid's decodings (4 with the paper's Qwen conditions: 24 calls), each decoding's
   first call together, then the rest together, each sent again after a throttle;
2. Ray and the actors start: 6–9 s, drawn per run;
3. the backend's worker (:class:`~runner.distributed._worker.BackendWorker`, as its actor runs
   it) goes on from the pre-flight's account and is leased the grid's other requests; it is
   stopped five minutes after its first call.

Client and server share one event loop in virtual time (:mod:`tests.virtual_time`): minutes of
calls in seconds, over real HTTP on loopback, exact whatever the machine is doing. Counted at the
server: the calls admitted in the worker's five minutes as a share of the limit (and from the
pre-flight's first call, the start-up gap included), and the 429s after the first minute. Run:

    .venv/bin/python -m benchmarks.learnt_limits [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from benchmarks._sim import QWEN, small_cohort
from conditions import (
    Cohort,
    Configuration,
    Decoding,
    RequestBuilder,
    RequestKey,
    Transport,
    VariantCache,
    plan,
)
from runner.backends import ApiKey, Client, RateLimiter
from runner.distributed._worker import BackendSetup, BackendWorker
from runner.preflight import (
    PROBE_RETRIES,
    PROBE_RETRY_TIME_S,
    PROBES_PER_DECODING,
    _through_throttles,
)
from runner.simulator import Behaviour, Faults, LimiterKind, SimSpec, Simulator, serving
from runner.store import Pending, ResponseRow
from tests.virtual_time import run_virtual, virtual_clock

KINDS: tuple[LimiterKind, ...] = ("sliding-window", "fixed-window", "token-bucket")
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # one attempt a request
TOLD = 300.0  # the limit the client is told, a minute
MINUTES = 5.0
KEY = ApiKey("sk-benchmark-0123456789abcdef")


@dataclass(frozen=True)
class Run:
    kind: LimiterKind
    real: float  # the server's limit, a minute
    admitted: int  # in the worker's five minutes
    share: float  # of the real limit over them
    share_from_preflight: float  # over five minutes from the pre-flight's call
    throttled: int  # 429s in all
    late_throttles: int  # 429s more than a minute after the pre-flight's call
    learnt: float | None  # the limit the worker's limiter keeps to at the end


def _one(
    cohort: Cohort, images: Path, variants: Path, kind: LimiterKind, real: float, seed: int
) -> Run:
    draw = random.Random(seed)

    async def main() -> Run:
        clock = virtual_clock()
        faults = Faults(
            requests_per_minute=real, limiter=kind, retry_after="seconds",
            ratelimit_headers=False, latency_s=(0.5, 1.5),
        )  # fmt: skip
        spec = SimSpec(seed=seed, behaviour=CLEAN, faults=faults)
        sim = Simulator(cohort, images, VariantCache(variants), spec, clock=clock)
        await asyncio.sleep(draw.uniform(0.0, 60.0))  # where in the server's minute it begins
        async with serving(sim) as url:
            transport = Transport(base_url=url, requests_per_minute=TOLD, max_concurrency=16)
            conf = QWEN.model_copy(update={"transport": transport})
            keys = sorted(plan(cohort, [conf]), key=lambda k: (k.qid, k.condition, k.budget))
            begun = clock()
            limiter = RateLimiter.for_transport(transport, clock=clock, wall=clock)
            builder = RequestBuilder(cohort, images, VariantCache(variants))
            probed = _probe_keys(keys, conf, builder)
            quick = conf.model_copy(
                update={
                    "transport": transport.model_copy(
                        update={
                            "max_transport_retries": PROBE_RETRIES,
                            "max_retry_time_s": PROBE_RETRY_TIME_S,
                        }
                    )
                }
            )
            async with Client(quick, KEY, limiter=limiter, clock=clock) as preflight:
                for phase in (probed[:1], probed[1:]):  # the first of each decoding, the rest
                    sending = [builder.build(k, conf) for nth in phase for k in nth]
                    await asyncio.gather(
                        *(_through_throttles(preflight, r, 0, None) for r in sending),
                        return_exceptions=True,  # a failed call is counted at the server
                    )
            await asyncio.sleep(draw.uniform(6.0, 9.0))  # Ray and the actors start
            worker = BackendWorker(
                BackendSetup(conf.transport, (conf,), images, variants), cohort, _nowhere,
                lambda _: KEY, clock=clock, wall=clock,
            )  # fmt: skip
            worker.inherit(limiter.account())
            sent = {k for nth in probed for k in nth}
            calls = [Pending.of(k, next_attempt=0) for k in keys if k not in sent]
            leased = clock()  # the pre-flight's calls are all back: what follows is the worker's
            leasing = asyncio.ensure_future(worker.lease(calls))
            while not sim.stats.admitted_at or sim.stats.admitted_at[-1] <= leased:
                await asyncio.sleep(0.1)  # until the worker's first call is admitted
            start = min(t for t in sim.stats.admitted_at if t > leased)
            await asyncio.sleep(max(0.0, start + MINUTES * 60 - clock()))
            worker.driver_gone("the benchmark's five minutes are over")
            learnt = (await leasing).learnt_per_minute
            await worker.close()
        admitted = sum(1 for t in sim.stats.admitted_at if start <= t < start + MINUTES * 60)
        from_preflight = sum(1 for t in sim.stats.admitted_at if t < begun + MINUTES * 60)
        throttled = sim.stats.throttled_at
        return Run(
            kind, real, admitted, admitted / (real * MINUTES), from_preflight / (real * MINUTES),
            len(throttled), sum(1 for t in throttled if t >= begun + 60.0), learnt,
        )  # fmt: skip

    return run_virtual(main)


def _probe_keys(
    keys: list[RequestKey], conf: Configuration, builder: RequestBuilder
) -> list[list[RequestKey]]:
    """The pre-flight's requests, as :func:`runner.preflight.probe_requests` picks them: of each
    decoding, the middle one of each of PROBES_PER_DECODING equal runs of its requests in
    order of budget, condition and question; by place (the first of every decoding first)."""
    by_condition: dict[str, list[RequestKey]] = {}
    for k in keys:
        by_condition.setdefault(k.condition, []).append(k)
    pools: dict[Decoding, list[RequestKey]] = {}
    for found in by_condition.values():
        pools.setdefault(builder.build(found[0], conf).decoding, []).extend(found)
    places: list[list[RequestKey]] = [[] for _ in range(PROBES_PER_DECODING)]
    for pool in pools.values():
        ordered = sorted(pool, key=lambda k: (k.budget, k.condition, k.qid))
        n = min(len(ordered), PROBES_PER_DECODING)
        for i in range(n):
            places[i].append(ordered[(2 * i + 1) * len(ordered) // (2 * n)])
    return places


async def _nowhere(rows: list[ResponseRow]) -> None:
    """The store: the counts are the server's."""


HEADER = (
    f"{'server':<16}{'limit':>6}{'run':>4}{'admitted':>10}{'of limit':>10}"
    f"{'(from pre-flight)':>19}{'429s':>6}{'after 1st min':>15}{'learnt':>8}"
)


def _row(number: int, r: Run) -> str:
    learnt = f"{r.learnt:.1f}" if r.learnt is not None else "-"
    return (
        f"{r.kind:<16}{r.real:>6.0f}{number:>4}{r.admitted:>10,}{r.share:>10.1%}"
        f"{r.share_from_preflight:>19.1%}{r.throttled:>6}{r.late_throttles:>15}{learnt:>8}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, float | int] = {}
    with tempfile.TemporaryDirectory() as work:
        cohort, images = small_cohort(Path(work))
        variants = Path(work) / "variants"
        print(
            f"told {TOLD:.0f}/min; Retry-After in whole seconds; answers in 0.5-1.5 s; the "
            f"pre-flight's calls, 6-9 s of start-up, then {MINUTES:g} minutes of the worker"
        )
        print(HEADER)
        for real in (TOLD, TOLD / 4):
            for kind in KINDS:
                runs = [_one(cohort, images, variants, kind, real, s) for s in range(args.runs)]
                for i, r in enumerate(runs):
                    print(_row(i + 1, r))
                tag = f"{kind.replace('-', '_')}_{TOLD / real:g}x"
                figures[f"{tag}_min_pct"] = 100 * min(r.share for r in runs)
                figures[f"{tag}_max_late_429"] = max(r.late_throttles for r in runs)
    record(**figures)


if __name__ == "__main__":
    main()
