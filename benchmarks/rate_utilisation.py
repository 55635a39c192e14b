"""How close a backend runs to a provider's rate limit, and whether it ever goes over.

Issue 4's goal: against the simulator limited to 600 requests/min with 1–3 s latency, run for at
least two minutes, the achieved rate is at least 98% of the limit, and no 429 comes back when
the configured limit equals the server's. The server counts the strictest way (issue 21): a
sliding 60 s window, in real time, so jitter between a call leaving and arriving counts. Server
and client share the event loop (10 calls a second is no load). Run:

    .venv/bin/python -m benchmarks.rate_utilisation [--seconds 130] [--rpm 600]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from benchmarks._figures import record
from benchmarks._sim import QWEN, requests, small_cohort
from conditions import Transport, VariantCache
from runner.backends import ApiKey, AttemptRecord, Client, ask
from runner.simulator import Behaviour, Faults, SimSpec, Simulator, serving


async def _run(seconds: float, rpm: float, concurrency: int, work: Path) -> None:
    cohort, images = small_cohort(work)
    cache = VariantCache(work / "variants")
    count = round(rpm / 60 * seconds)
    batch = requests(cohort, images, cache, count)
    faults = Faults(
        requests_per_minute=rpm, limiter="sliding-window", latency_s=(1.0, 3.0),
        retry_after="seconds",
    )  # fmt: skip
    behaviour = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # one attempt each
    sim = Simulator(cohort, images, cache, SimSpec(behaviour=behaviour, faults=faults))
    records: list[AttemptRecord] = []
    async with serving(sim) as url:
        transport = Transport(base_url=url, requests_per_minute=rpm, max_concurrency=concurrency)
        conf = QWEN.model_copy(update={"transport": transport})
        async with Client(conf, ApiKey("sk-benchmark")) as backend:
            begun = time.monotonic()
            await asyncio.gather(*(ask(backend, r, records.append) for r in batch))
            wall = time.monotonic() - begun
    admitted = sim.stats.admitted_at
    span = admitted[-1] - admitted[0]
    sending = (len(admitted) - 1) / span * 60  # calls started per minute, first to last
    overall = len(admitted) / wall * 60  # including the last call's 1–3 s to come back
    print(f"limit {rpm:.0f}/min, latency 1-3 s, {concurrency} in flight at most, {wall:.0f} s")
    print(f"  calls admitted by the server: {len(admitted)}; 429s: {sim.stats.statuses[429]}")
    print(f"  achieved rate, first to last call: {sending:.1f}/min = {100 * sending / rpm:.2f}%")
    print(f"  completed over the whole run:      {overall:.1f}/min = {100 * overall / rpm:.2f}%")
    print(f"  limiter: {backend.limiter.stats}")
    record(utilisation_pct=100 * sending / rpm, throttled=sim.stats.statuses[429])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=130.0)
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        asyncio.run(_run(args.seconds, args.rpm, args.concurrency, Path(work)))


if __name__ == "__main__":
    main()
