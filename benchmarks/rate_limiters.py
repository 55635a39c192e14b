"""A backend against each of the simulator's three server limiters, at the limit and told 4×.

Issue 21's goals: at the server's own limit, 0 × 429 and ≥ 99% of the limit over ≥ 3 minutes;
told 4× the real limit, ≥ 95% of the real limit, with ≤ 3 × 429 after the first minute (issue 38:
a learnt limit probes back up, so a rise is refused now and then; ``benchmarks.learnt_limits``
runs the pre-flight and the backend's worker as a run does). Client and server
share one event loop in virtual time (tests.virtual_time: minutes of calls in seconds, exact
whatever the machine is doing), over real HTTP on loopback; the server states no limit in
headers, so a limit told wrong must be learnt from the 429s. The token bucket holds 20 s of
calls and answers a throttle in milliseconds; the windows answer in whole seconds. Answers take
50–150 ms. ``benchmarks.rate_utilisation`` runs the sliding window in real time. Run:

    .venv/bin/python -m benchmarks.rate_limiters [--rpm 600]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from benchmarks._sim import QWEN, requests, small_cohort
from conditions import Cohort, Request, Transport, VariantCache
from runner.backends import ApiKey, Client
from runner.simulator import Behaviour, Faults, LimiterKind, SimSpec, Simulator, serving
from tests.virtual_time import run_virtual, virtual_clock

KINDS: tuple[LimiterKind, ...] = ("sliding-window", "token-bucket", "fixed-window")
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)


@dataclass(frozen=True)
class Outcome:
    kind: LimiterKind
    told: float  # times the real limit
    minutes: float
    admitted: int
    throttled: int
    utilisation: float  # admitted a minute over the run, as a share of the real limit


def _faults(kind: LimiterKind, rpm: float) -> Faults:
    bucket = kind == "token-bucket"
    return Faults(
        requests_per_minute=rpm, limiter=kind, ratelimit_headers=False,
        burst=round(rpm / 3) if bucket else None, retry_after="ms" if bucket else "seconds",
        latency_s=(0.05, 0.15),
    )  # fmt: skip


def _run(
    cohort: Cohort, images: Path, cache: VariantCache, batch: list[Request],
    kind: LimiterKind, rpm: float, told: float, minutes: float,
) -> Outcome:  # fmt: skip
    async def main() -> Outcome:
        clock = virtual_clock()
        spec = SimSpec(behaviour=CLEAN, faults=_faults(kind, rpm))
        sim = Simulator(cohort, images, cache, spec, clock=clock)
        async with serving(sim) as url:
            transport = Transport(base_url=url, requests_per_minute=rpm * told, max_concurrency=8)
            conf = QWEN.model_copy(update={"transport": transport})
            async with Client(conf, ApiKey("sk-benchmark"), clock=clock) as backend:
                end = clock() + minutes * 60
                count = 0

                async def caller() -> None:
                    nonlocal count
                    while clock() < end:
                        count += 1
                        await backend.send(batch[count % len(batch)], attempt=count)

                await asyncio.gather(*(caller() for _ in range(8)))
        admitted = sum(1 for t in sim.stats.admitted_at if t < end)
        utilisation = admitted / minutes / rpm
        return Outcome(kind, told, minutes, admitted, len(sim.stats.throttled_at), utilisation)

    return run_virtual(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=float, default=600.0, help="the server's real limit")
    args = parser.parse_args()
    figures: dict[str, float | int] = {}
    with tempfile.TemporaryDirectory() as work:
        cohort, images = small_cohort(Path(work))
        cache = VariantCache(Path(work) / "variants")
        batch = requests(cohort, images, cache, 200)
        print(f"server limit {args.rpm:.0f}/min, answers in 50-150 ms, 8 in flight at most")
        print(f"{'limiter':<16}{'client told':>12}{'minutes':>9}{'admitted':>10}{'429s':>6}"
              f"{'of the limit':>14}")  # fmt: skip
        for kind in KINDS:
            for told, minutes in ((1.0, 3.0), (4.0, 5.0)):
                out = _run(cohort, images, cache, batch, kind, args.rpm, told, minutes)
                print(f"{kind:<16}{told:>11g}×{minutes:>9g}{out.admitted:>10,}"
                      f"{out.throttled:>6}{out.utilisation:>13.2%}")  # fmt: skip
                tag = f"{kind.replace('-', '_')}_{told:g}x"
                figures[f"{tag}_pct"] = 100 * out.utilisation
                figures[f"{tag}_429"] = out.throttled
    record(**figures)


if __name__ == "__main__":
    main()
