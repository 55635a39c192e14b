"""Reading a batch's JSONL results: a streamed body's lines as they arrive (never a file of
50,000 answers, or one endless line, held whole), a line's JSON object and id, and the rule that
no line, whatever it holds, raises."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

from runner.backends._json import TooDeep, read_json
from runner.backends._secrets import ApiKey, clip
from runner.batch._api import ResultLine

_CHUNK = 1 << 16


# The most bytes of results read from one stream. A results file holds a line per request (at
# most 100,000) of an answer of ~50 KB, a few GB at the very most: past this a server is sending
# without end, and the run would never end with it (no read stalls, so no timeout fires).
MAX_RESULTS_BYTES = 16 * 1024**3


async def stream_lines(
    stream: aiohttp.StreamReader, cap: int, max_total: int = MAX_RESULTS_BYTES
) -> AsyncIterator[bytes | None]:
    """The lines of ``stream`` (without their ``\\n``), as they arrive; ``None`` for a line
    longer than ``cap`` (skipped, never held whole), and a last ``None`` once ``max_total``
    bytes are read (the rest never is)."""
    held = bytearray()
    skipping = False
    total = 0
    async for chunk in stream.iter_chunked(_CHUNK):
        total += len(chunk)
        if total > max_total:
            yield None
            return
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if skipping or len(held) + end - start > cap:
                yield None
                skipping = False
            else:
                held += chunk[start:end]
                yield bytes(held)
            held.clear()
            start = end + 1
        if not skipping:
            held += chunk[start:]
            if len(held) > cap:
                held.clear()
                skipping = True
    if skipping:
        yield None
    elif held:
        yield bytes(held)


async def result_lines(
    stream: aiohttp.StreamReader,
    label: str,
    cap: int,
    read: Callable[[bytes, str], ResultLine],
) -> AsyncIterator[ResultLine]:
    """The result lines of ``stream``, each read by ``read`` with its place (``label line
    n``); blank lines skipped, a line past ``cap`` bytes (or what is past
    :data:`MAX_RESULTS_BYTES`) a problem, never read."""
    n = 0
    async for raw in stream_lines(stream, cap, MAX_RESULTS_BYTES):
        n += 1
        where = f"{label} line {n}"
        if raw is None:
            why = f"longer than {cap:,} bytes, or past {MAX_RESULTS_BYTES:,} of results: not read"
            yield ResultLine(where, None, problem=why)
        elif raw.strip():
            yield read(raw, where)


def unbroken(read: Callable[[], ResultLine], where: str, key: ApiKey | None) -> ResultLine:
    """``read()``, or the problem of a line no rule foresaw: never the run's end."""
    try:
        return read()
    except Exception as exc:
        why = clip(f"{type(exc).__name__}: {exc}", key)
        return ResultLine(where, None, problem=f"unreadable ({why})")


def keyed(raw: bytes, where: str, key: ApiKey | None) -> tuple[dict[str, Any], str] | ResultLine:
    """The line ``raw``'s JSON object and its ``custom_id`` (clipped: it is stored with a
    problem when it is no id of ours), or the problem line saying why it has none."""
    try:
        doc = read_json(raw)
    except TooDeep as exc:
        return ResultLine(where, None, problem=f"not read ({len(raw)} bytes): {exc}")
    except ValueError:
        return ResultLine(where, None, problem=f"not JSON ({len(raw)} bytes; cut short?)")
    custom_id = doc.get("custom_id") if isinstance(doc, dict) else None
    if not isinstance(custom_id, str) or not custom_id:
        return ResultLine(where, None, problem="no custom_id")
    assert isinstance(doc, dict)
    return doc, clip(custom_id, key)


__all__ = ["MAX_RESULTS_BYTES", "keyed", "result_lines", "stream_lines", "unbroken"]
