"""Five hostile usage replies against ``groundbench run --max-spend 20 --no-check``: the bill.

Issue 56's check, from outside as the issue measured it: an ``openai-compatible`` backend at
$1,000/M in and out, ``max_output_tokens = 1000``, served by a server of this process on
loopback that bills every call 1,000 + 1,000 tokens ($2) whatever it reports, and replies
with one of the five usages below. ``groundbench run`` runs in a process of its own, with a
local Ray of its own, on synthetic data (18 requests). Per reply it prints the calls the
server answered, what they really cost, what the run counted, the rows stored, how the run
ended and whether a traceback was printed. The goal: real bill ≤ $20, a row per answered call,
exit 0 or 3, no traceback. ``--checkout`` runs another checkout's ``groundbench`` (its
``runner`` first on the path), for the baseline. Run (about a minute each):

    git worktree add /tmp/gb-base 45e0efd
    .venv/bin/python -m benchmarks.hostile_usage --checkout /tmp/gb-base
    .venv/bin/python -m benchmarks.hostile_usage [--replies negative,no-usage]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import duckdb
from aiohttp import web

from benchmarks.startup import in_thread
from conditions import SynthSpec, generate_synthetic

CAP = 20.0
PRICE = 1000.0  # dollars per million tokens, in and out
REAL_CALL = (1000 + 1000) * PRICE / 1e6  # what every call really costs


def completion(usage: str | None, choices: str = '[{"message": {"content": "no"}}]') -> bytes:
    """A chat completion whose ``usage`` is the JSON text given (None: no usage at all)."""
    tail = f', "usage": {usage}' if usage is not None else ""
    return f'{{"id": "c", "model": "m", "choices": {choices}{tail}}}'.encode()


REPLIES = {
    "negative": completion('{"prompt_tokens": -1000000000, "completion_tokens": 1000}'),
    "past-int64": completion(f'{{"prompt_tokens": {10**30}, "completion_tokens": 1000}}'),
    "past-float": completion(f'{{"prompt_tokens": {10**400}, "completion_tokens": 1000}}'),
    "no-choices": completion('{"prompt_tokens": 1000, "completion_tokens": 1000}', "[]"),
    "no-usage": completion(None),
}


class Server:
    """Every chat completion answered with ``reply``; its calls counted."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.calls = 0

    async def chat(self, request: web.Request) -> web.Response:
        await request.read()
        self.calls += 1
        return web.Response(body=self.reply, content_type="application/json")


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[str]:
    """``server`` on loopback (port 0) while the block runs; yields its base URL."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def _experiment(folder: Path, data: Path, url: str) -> Path:
    path = folder / "exp.toml"
    path.write_text(
        f'store = "{folder / "exp.duckdb"}"\nimages = "{data / "images" / "train2014"}"\n'
        f'budgets = [8, 16]\n[cohort]\nroot = "{data}"\nper_source = 2\nmatched = 2\n'
        f'[backends.own]\nprovider = "openai-compatible"\nmodel = "m"\nbase_url = "{url}"\n'
        "requests_per_minute = 6000\nmax_concurrency = 4\nmax_transport_retries = 2\n"
        f"prices = {{ input_per_mtok = {PRICE}, output_per_mtok = {PRICE} }}\n"
        '[[configurations]]\nname = "own"\nbackend = "own"\nconditions = ["base"]\n'
        "decoding = { max_output_tokens = 1000 }\n"
    )
    return path


def measure(name: str, folder: Path, data: Path, checkout: Path) -> str:
    server = Server(REPLIES[name])
    with in_thread(lambda: serving(server)) as url:
        experiment = _experiment(folder, data, url)
        command = [sys.executable, "-c", "from runner.cli import main; main()", "run"]
        done = subprocess.run(
            [*command, str(experiment), "--max-spend", str(CAP), "--no-check"],
            capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "PYTHONPATH": str(checkout)}, cwd=checkout,
        )  # fmt: skip
    if not (folder / "exp.duckdb").exists():  # the run ended before its store: say how
        raise RuntimeError(f"{name}: no store made; the run said:\n{done.stdout}{done.stderr}")
    with duckdb.connect(str(folder / "exp.duckdb"), read_only=True) as con:
        names = con.execute("SELECT name FROM pragma_table_info('responses')").fetchall()
        columns = {c for (c,) in names}
        unknown = "sum(usage_unknown)" if "usage_unknown" in columns else "NULL"  # a baseline's
        rows, unknown, counted = con.execute(
            f"SELECT count(*), {unknown}, coalesce(sum(coalesce(input_tokens, 0) + "
            f"coalesce(output_tokens, 0)), 0) * {PRICE} / 1e6 FROM responses"
        ).fetchone() or (0, None, 0.0)
    traceback = "Traceback" in done.stdout + done.stderr
    return (
        f"{name:<11} {server.calls:>5} ${server.calls * REAL_CALL:>6.2f} ${counted:>7.2f} "
        f"{rows:>5} {'-' if unknown is None else unknown:>8} {done.returncode:>5} "
        f"{'yes' if traceback else 'no':>9}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", default=",".join(REPLIES))
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        generate_synthetic(data, SynthSpec(images=10))
        print(f"groundbench from {args.checkout}; cap ${CAP:.2f}; a call costs ${REAL_CALL:.2f}")
        print("reply       calls   bill  counted  rows  unknown  exit traceback")
        for name in args.replies.split(","):
            folder = Path(tmp) / name
            folder.mkdir()
            print(measure(name, folder, data, args.checkout), flush=True)


if __name__ == "__main__":
    main()
