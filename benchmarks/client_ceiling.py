"""How many requests a second one backend completes on one core, when the server costs nothing.

Issue 4's goal: against the simulator with ~0 latency, no limit and ~150 KB images, one backend
on one core completes at least 1,500 requests a second, the image encoded once per question
and variant, never per request. The simulator runs in its own process on the other core
(``groundbench simulate``); its CPU use is printed too, since it, not the client, may be the
bound. Beside it, the cost of building one request body our way (base64 made once per image,
spliced into the JSON as bytes) and the plain way (base64 and ``json.dumps`` per request).
Run:

    .venv/bin/python -m benchmarks.client_ceiling [--requests 20000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._figures import record
from benchmarks._sim import QWEN, requests, small_cohort
from conditions import Request, Transport, VariantCache, write_cohort
from runner.backends import PROVIDERS, ApiKey, AttemptRecord, Client, OpenAIChat, ask

CLIENT_CPU, SERVER_CPU = 0, 1
SPEC = {"behaviour": {"refusal": 0.0, "wrong_count": 0.0, "decimals": 0.0}}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(experiment: Path, images: Path, work: Path) -> tuple[subprocess.Popen[str], str]:
    spec = work / "spec.json"
    spec.write_text(json.dumps(SPEC))
    cli = [sys.executable, "-c", "from runner.cli import main; main()"]
    command = [*cli, "simulate", str(experiment), "--images", str(images), "--port", "0",
               "--spec", str(spec)]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {SERVER_CPU}),
    )
    assert process.stdout is not None
    url = process.stdout.readline().split()[-1]
    return process, url


async def _drive(batch: list[Request], url: str, concurrency: int) -> tuple[float, int]:
    transport = Transport(base_url=url, requests_per_minute=1e9, max_concurrency=concurrency)
    conf = QWEN.model_copy(update={"transport": transport})
    records: list[AttemptRecord] = []
    async with Client(conf, ApiKey("sk-benchmark")) as backend:
        await asyncio.gather(*(ask(backend, r, records.append) for r in batch[:200]))  # warm-up
        records.clear()
        begun = time.perf_counter()
        await asyncio.gather(*(ask(backend, r, records.append) for r in batch))
        return time.perf_counter() - begun, len(records)


def _encode_costs(batch: list[Request]) -> tuple[float, float]:
    """Microseconds per request body: ours (base64 once, spliced) and plain (per request)."""
    wire = OpenAIChat(PROVIDERS["qwen"], QWEN.model)
    sample = batch[:2000]
    begun = time.perf_counter()
    for r in sample:
        wire.encode(r)
    ours = (time.perf_counter() - begun) / len(sample) * 1e6
    begun = time.perf_counter()
    for r in sample:
        assert r.image is not None
        payload = wire.payload(r)
        url = f"data:{r.image.media_type};base64,{base64.b64encode(r.image.data).decode()}"
        payload["messages"][0]["content"][0]["image_url"]["url"] = url
        json.dumps(payload).encode()
    plain = (time.perf_counter() - begun) / len(sample) * 1e6
    return ours, plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--image-kb", type=int, default=150)
    parser.add_argument(
        "--no-freeze", action="store_true", help="leave the long-lived objects in every GC pass"
    )
    args = parser.parse_args()
    os.sched_setaffinity(0, {CLIENT_CPU})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cohort, images = small_cohort(work / "data", target_kb=args.image_kb)
        experiment = work / "exp.duckdb"
        write_cohort(experiment, cohort)
        cache = VariantCache(work / "exp.variants")
        batch = [r for r in requests(cohort, images, cache, args.requests * 2) if r.image][
            : args.requests
        ]
        sizes = sorted({len(r.image.data) for r in batch if r.image is not None})
        blobs = len({id(r.image) for r in batch})
        print(f"{len(batch)} requests over {blobs} image blobs (encoded once each); "
              f"images {sizes[0] / 1024:.0f}-{sizes[-1] / 1024:.0f} KB, "
              f"median {sizes[len(sizes) // 2] / 1024:.0f} KB")  # fmt: skip
        ours, plain = _encode_costs(batch)
        print(f"request body: {ours:.0f} µs spliced (ours) vs {plain:.0f} µs per-request "
              f"base64 + json.dumps ({plain / ours:.1f}x)")  # fmt: skip
        # The batch, cohort and cache live for the whole run: leave them out of every GC pass,
        # as a long-lived backend actor does with its cohort.
        if not args.no_freeze:
            gc.freeze()
        process, url = _start_server(experiment, images, work)
        try:
            server_before = _cpu_seconds(process.pid)
            client_before = time.process_time()
            wall, done = asyncio.run(_drive(batch, url, args.concurrency))
            client_cpu = time.process_time() - client_before
            server_cpu = _cpu_seconds(process.pid) - server_before
        finally:
            process.terminate()
            process.wait(timeout=30)
    frozen = "" if args.no_freeze else ", long-lived objects frozen out of GC"
    print(f"one backend, one core, {args.concurrency} in flight{frozen}: {done} requests in "
          f"{wall:.2f} s = {done / wall:.0f} requests/s (goal ≥ 1,500)")  # fmt: skip
    print(f"  client core busy {100 * client_cpu / wall:.0f}%, "
          f"simulator core busy {100 * server_cpu / wall:.0f}% (includes its warm-up)")  # fmt: skip
    record(requests_per_s=done / wall)


if __name__ == "__main__":
    main()
