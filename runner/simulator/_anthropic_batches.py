"""The simulator's Anthropic Message Batches API: create, retrieve, list, cancel, delete and
results, in the shapes the API reference and the official SDK's types document.

Whatever the path's prefix, as the online ``…/v1/messages``: ``POST …/v1/messages/batches``,
``GET …/v1/messages/batches`` (newest first; ``limit`` 1–1000, default 20; ``after_id`` or
``before_id``; ``data``, ``has_more``, ``first_id``, ``last_id``), ``GET …/batches/<id>``,
``POST …/batches/<id>/cancel``, ``DELETE …/batches/<id>`` and ``GET …/batches/<id>/results``.
Any other path under ``…/v1/messages/batches`` is answered 404 ``not_found_error``: none reaches
the online Messages handler. Every request is authenticated as the online endpoint is
(``x-api-key`` or a bearer token; 401 ``authentication_error``) and rate limited as an online call
is. Errors are Anthropic's, ``{"type": "error", "error": {"type", "message"}}``.

What the reference and the batch guide document, as served:

- A batch holds 1 to 100,000 requests (:attr:`BatchFaults.max_requests`), each a ``custom_id``
  matching ``^[a-zA-Z0-9_-]{1,64}$``, unique within the batch, and ``params``; anything else is
  refused 400 ``invalid_request_error``. The body is read streamed up to 256 MB (the guide's
  limit; :attr:`BatchFaults.max_file_bytes` when smaller), and past it refused 413
  ``request_too_large``, as the errors page says the API answers a Batch API request over 256 MB.
- The params are not checked at creation: "validation of the params object for each message
  request is performed asynchronously, and validation errors are returned when processing of the
  entire batch has ended". A request the online endpoint refuses ends ``errored`` with the
  online error body.
- A MessageBatch carries every field of the reference, the unset ones null: times in RFC 3339
  (UTC, "Z"), ``expires_at`` 24 hours after creation, ``results_url`` null until the batch
  ended, then the absolute URL of its results on the address the request came to;
  ``archived_at`` stays null (the API keeps results 29 days; the simulator for its life).
- Every request counts as ``processing`` until the batch ends ("zero until processing of the
  entire Message Batch has ended" for the other counts); the counts always sum to the requests.
- Cancelling an ``in_progress`` batch makes it ``canceling`` (``cancel_initiated_at`` set); it
  ends on the next look, every request not yet run ``canceled`` (here all of them: requests run
  only when a batch ends). A batch is deleted only once ended (400 before: "you must first
  cancel it"); the answer is ``{"id", "type": "message_batch_deleted"}``.
- The results are JSON Lines, ``content-type: application/x-jsonl`` (what the API sends since it
  was fixed, anthropics/anthropic-sdk-ruby#208), one line per request:
  ``{"custom_id", "result": {"type": "succeeded", "message"} | {"type": "errored", "error":
  {"type": "error", "error": {...}}} | {"type": "canceled"} | {"type": "expired"}}``.

Choices the documentation leaves open:

- Ids are ``msgbatch_sim…``, numbered by creation and never reused, deleted batches' included.
- Asking for the results of a batch not ended is refused 400 ``invalid_request_error`` (its
  ``results_url`` is null: the SDK never asks). Cancelling an ended batch answers it unchanged
  (a ``canceling`` one ends on that look, as on any). A ``limit`` outside 1–1000, or
  ``after_id`` with ``before_id``, is refused 400; a cursor naming no batch ever made gives an
  empty page, one naming a deleted batch still places the page.
- Faults (:class:`BatchFaults`): Anthropic has no failed batch, so each of the first
  ``fail_first`` batches ends with every request ``errored`` (``api_error``), nothing answered
  or paid. The first ``expire_first`` batches (unless failing) end with the first
  ``expired_share`` of their requests answered and the rest ``expired`` (when their turnaround
  has passed, not 24 hours on). A request drawn for ``line_error`` is ``errored`` with an
  ``api_error``; one drawn for ``malformed_line`` has its result line cut short (not JSON);
  draws are per seed, ``custom_id`` and submission. Past ``quota_after_batches`` batches,
  creating one is refused as the API refuses spent credit (400 ``invalid_request_error``, "Your
  credit balance is too low…"), before the body is read.

A request is answered as :meth:`Simulator.answer_line` answers the online call, its
``custom_id`` as the call id (so a batch answers as the online run, and counts as paid), a
slice at a time with the event loop given back between slices. Request params and results are
kept on disk in a temporary directory, removed when the app shuts down.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from aiohttp import web

from runner.simulator._wires import AnthropicWire, Doc

if TYPE_CHECKING:
    from runner.simulator._server import Simulator

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Status = Literal["in_progress", "canceling", "ended"]
Outcome = Literal["succeeded", "errored", "canceled", "expired"]
_OUTCOMES: tuple[Outcome, ...] = ("succeeded", "errored", "canceled", "expired")

_WIRE = AnthropicWire()
_BATCHES = r"/{prefix:(?:.*/)?}v1/messages/batches"  # any prefix, as the online endpoint
_ID = "{batch_id:[^/]+}"
_MAX_BODY = 256 * 1024**2  # "256 MB": the guide's limit on a batch's size
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_SLICE = 32  # requests answered between two yields to the event loop
_CHUNK = 1 << 16
_WINDOW_S = 24 * 3600.0  # a batch expires 24 hours after creation
_LIST_LIMITS = (1, 1000)
_FAILED = "Internal server error"  # a fail_first batch's and a line_error request's message


@dataclass(frozen=True)
class _Request:
    """A batch's request, by where its params lie in the batch's params file."""

    custom_id: str
    offset: int
    size: int


@dataclass
class _Batch:
    id: str
    serial: int  # 0 for the first batch created
    created_at: float  # on the simulator's clock
    requests: list[_Request]
    params: Path  # the requests' params, one after another
    status: Status = "in_progress"
    cancel_initiated_at: float | None = None
    ended_at: float | None = None
    counts: dict[str, int] = field(default_factory=dict)  # each outcome's, once ended
    results: Path | None = None  # once ended
    ending: asyncio.Task[None] | None = field(default=None, repr=False)


class AnthropicBatchService:
    """Anthropic's Message Batches on the simulator's app:
    ``AnthropicBatchService(sim).install(app)`` before any other batch route (OpenAI's
    any-prefix ``…/batches`` would take ``/v1/messages/batches``) and the catch-all POST."""

    def __init__(self, simulator: Simulator) -> None:
        self.sim = simulator
        self._dir: Path | None = None
        self._batches: dict[str, _Batch] = {}
        self._serials: dict[str, int] = {}  # every id ever made, deleted ones too: cursors
        self._created = 0
        self._bodies = 0  # bodies stored ever: a params file's name is never reused

    def install(self, app: web.Application) -> None:
        guarded = self._guarded
        add = app.router
        add.add_post(_BATCHES, guarded(self._create))
        add.add_get(_BATCHES, guarded(self._list))
        add.add_get(f"{_BATCHES}/{_ID}", guarded(self._retrieve))
        add.add_delete(f"{_BATCHES}/{_ID}", guarded(self._delete))
        add.add_post(f"{_BATCHES}/{_ID}/cancel", guarded(self._cancel))
        add.add_get(f"{_BATCHES}/{_ID}/results", guarded(self._results))
        # The rest under …/v1/messages/batches is this API's too: never the online handler's.
        add.add_route("*", f"{_BATCHES}/{{rest:.*}}", guarded(self._unknown))
        app.on_cleanup.append(self._close)

    async def _close(self, app: web.Application) -> None:
        for batch in self._batches.values():
            if batch.ending is not None:
                batch.ending.cancel()
        self._batches.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _directory(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="groundbench-sim-anthropic-"))
        return self._dir

    # -- what every endpoint does first ---------------------------------------------------

    def _guarded(self, handler: Handler) -> Handler:
        """``handler`` behind the online endpoint's authentication and rate limit."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            sim = self.sim
            if not sim._authorised(request, _WIRE):
                status, doc = _WIRE.bad_key(sim._bad_key_message(request))
                return sim._send(status, json.dumps(doc).encode(), {})
            verdict = sim._admit()
            if verdict is not None and not verdict.admitted:
                return sim._throttle(_WIRE, verdict)
            return await handler(request)

        return guarded

    def _error(self, status: int, message: str) -> web.Response:
        return self.sim._error(_WIRE, status, "", message, {})

    def _answer(self, doc: Doc) -> web.Response:
        return self.sim._send(200, json.dumps(doc).encode(), {})

    async def _unknown(self, request: web.Request) -> web.StreamResponse:
        return self._error(404, f"Not found: {request.method} {request.path}")

    # -- create ---------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.StreamResponse:
        faults = self.sim.spec.batch
        if self._credit_spent():
            return self._no_credit()
        limit = min(_MAX_BODY, faults.max_file_bytes)
        body = await _body(request, limit)
        if body is None:
            return self._error(413, f"Request exceeds the maximum size of {limit} bytes.")
        self._bodies += 1
        path = self._directory() / f"params-{self._bodies:06d}.jsonl"
        read = await asyncio.to_thread(_stored_requests, body, faults.max_requests, path)
        del body
        if isinstance(read, str):
            return self._error(400, read)
        if self._credit_spent():  # spent by another create while this one was read
            path.unlink(missing_ok=True)
            return self._no_credit()
        batch = _Batch(
            id=f"msgbatch_sim{self._created:06d}",
            serial=self._created,
            created_at=self.sim.clock(),
            requests=read,
            params=path,
        )
        self._created += 1
        self._batches[batch.id] = batch
        self._serials[batch.id] = batch.serial
        stats = self.sim.stats
        stats.batches_created += 1
        stats.submitted.update(r.custom_id for r in batch.requests)
        return self._answer(self._doc(batch, request))

    def _credit_spent(self) -> bool:
        after = self.sim.spec.batch.quota_after_batches
        return after is not None and self._created >= after

    def _no_credit(self) -> web.Response:
        """The API's answer to spent credit: 400, "Your credit balance is too low…"."""
        self.sim.stats.faults["batch-quota"] += 1
        return self.sim._quota(_WIRE)

    # -- retrieve, list, cancel, delete, results -------------------------------------------

    async def _named(self, request: web.Request) -> _Batch | web.Response:
        """The batch the path names, brought up to date; else the 404 to answer."""
        batch_id = request.match_info["batch_id"]
        batch = self._batches.get(batch_id)
        if batch is None:
            return self._error(404, f"No message batch with id {batch_id!r}.")
        await self._advance(batch)
        return batch

    async def _retrieve(self, request: web.Request) -> web.StreamResponse:
        batch = await self._named(request)
        if isinstance(batch, web.Response):
            return batch
        return self._answer(self._doc(batch, request))

    async def _list(self, request: web.Request) -> web.StreamResponse:
        query = request.query
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            return self._error(400, "limit: Input should be a valid integer")
        low, high = _LIST_LIMITS
        if not low <= limit <= high:
            return self._error(400, f"limit: Input should be between {low} and {high}")
        after, before = query.get("after_id"), query.get("before_id")
        if after is not None and before is not None:
            return self._error(400, "after_id and before_id cannot both be given")
        page, more = self._page(limit, after, before)
        for batch in page:
            await self._advance(batch)
        data = [self._doc(b, request) for b in page]
        return self._answer({
            "data": data, "has_more": more,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        })  # fmt: skip

    def _page(self, limit: int, after: str | None, before: str | None) -> tuple[list[_Batch], bool]:
        """The page of batches, newest first, and whether more lie beyond it in the direction
        asked: older than ``after``, newer than ``before`` (the ones nearest it), or the
        newest."""
        newest = list(reversed(self._batches.values()))  # created in serial order
        if after is not None:
            cursor = self._serials.get(after)
            older = [b for b in newest if cursor is not None and b.serial < cursor]
            return older[:limit], len(older) > limit
        if before is not None:
            cursor = self._serials.get(before)
            newer = [b for b in newest if cursor is not None and b.serial > cursor]
            return newer[-limit:], len(newer) > limit
        return newest[:limit], len(newest) > limit

    async def _cancel(self, request: web.Request) -> web.StreamResponse:
        batch = await self._named(request)
        if isinstance(batch, web.Response):
            return batch
        if batch.status == "in_progress":
            batch.status = "canceling"  # ended, every request canceled, on the next look
            batch.cancel_initiated_at = self.sim.clock()
        return self._answer(self._doc(batch, request))

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        batch = await self._named(request)
        if isinstance(batch, web.Response):
            return batch
        if batch.status != "ended":
            message = (
                f"Message batch {batch.id} is still {batch.status}: it can be deleted only once "
                "processing has ended. Cancel it first."
            )
            return self._error(400, message)
        del self._batches[batch.id]
        batch.params.unlink(missing_ok=True)
        if batch.results is not None:
            batch.results.unlink(missing_ok=True)
        return self._answer({"id": batch.id, "type": "message_batch_deleted"})

    async def _results(self, request: web.Request) -> web.StreamResponse:
        batch = await self._named(request)
        if isinstance(batch, web.Response):
            return batch
        if batch.status != "ended" or batch.results is None:
            message = f"Message batch {batch.id} is still {batch.status}: no results yet."
            return self._error(400, message)
        self.sim.stats.statuses[200] += 1
        headers = {
            "Content-Type": "application/x-jsonl",
            "Content-Disposition": f"attachment; filename*=utf-8''{batch.id}_results.jsonl",
        }
        return web.FileResponse(batch.results, headers=headers)

    # -- the documents --------------------------------------------------------------------

    def _doc(self, batch: _Batch, request: web.Request) -> Doc:
        """The MessageBatch, its results URL on the address ``request`` came to."""
        unix = self.sim.unix_time
        ended = batch.status == "ended"
        results_url = None
        if ended:
            base = f"{request.url.origin()}/{request.match_info.get('prefix', '')}"
            results_url = f"{base}v1/messages/batches/{batch.id}/results"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": _counts(batch),
            "created_at": _rfc3339(unix(batch.created_at)),
            "expires_at": _rfc3339(unix(batch.created_at + _WINDOW_S)),
            "ended_at": _stamp(unix, batch.ended_at),
            "cancel_initiated_at": _stamp(unix, batch.cancel_initiated_at),
            "archived_at": None,
            "results_url": results_url,
        }

    # -- a batch's life -------------------------------------------------------------------

    async def _advance(self, batch: _Batch) -> None:
        """Bring ``batch`` to its state now: ended once its turnaround has passed, or on the
        first look after a cancel (its requests answered then, once, whoever asks first)."""
        if batch.status == "ended":
            return
        elapsed = self.sim.clock() - batch.created_at
        if batch.status == "in_progress" and elapsed < self.sim.spec.batch.turnaround_s:
            return
        if batch.ending is None:
            batch.ending = asyncio.ensure_future(self._end(batch))
        await asyncio.shield(batch.ending)

    async def _end(self, batch: _Batch) -> None:
        """Answer what the batch's fate lets it answer, write every request's result, end."""
        answered, never = self._fate(batch)
        counts: dict[str, int] = dict.fromkeys(_OUTCOMES, 0)
        results = self._directory() / f"{batch.id}-results.jsonl"
        with batch.params.open("rb") as params, results.open("wb") as out:
            for n, request in enumerate(batch.requests):
                if n < answered:
                    outcome, line = self._answered(request, _params(params, request))
                else:
                    outcome, line = never, _never_ran(request.custom_id, never)
                counts[outcome] += 1
                out.write(line + b"\n")
                if n % _SLICE == _SLICE - 1:
                    await asyncio.sleep(0)  # let the server answer others meanwhile
        batch.params.unlink(missing_ok=True)  # answered: no longer needed
        batch.results, batch.counts = results, counts
        batch.ended_at = self.sim.clock()
        batch.status = "ended"

    def _fate(self, batch: _Batch) -> tuple[int, Outcome]:
        """How many of the batch's requests run (the first ones), and what the others end as:
        all canceled when it was cancelled, all errored when it fails, the last ones expired
        when it expires."""
        faults = self.sim.spec.batch
        total = len(batch.requests)
        if batch.status == "canceling":
            return 0, "canceled"
        if batch.serial < faults.fail_first:
            self.sim.stats.faults["batch-failed"] += 1
            return 0, "errored"
        if batch.serial < faults.expire_first:
            self.sim.stats.faults["batch-expired"] += 1
            return math.floor(total * faults.expired_share), "expired"
        return total, "expired"

    def _answered(self, request: _Request, params: bytes) -> tuple[Outcome, bytes]:
        """``request`` answered as the online endpoint answers its params, or the fault drawn
        for it: its outcome and its result line."""
        faults = self.sim.spec.batch
        times = self.sim.stats.submitted[request.custom_id]
        seed = self.sim.spec.seed
        draw = random.Random(f"{seed}:anthropic-batch:{request.custom_id}:{times}").random()
        if draw < faults.line_error:
            self.sim.stats.faults["batch-line-error"] += 1
            return "errored", _line(request.custom_id, _errored(_FAILED))
        status, doc = self.sim.answer_line("/v1/messages", params, request.custom_id)
        outcome: Outcome = "succeeded" if status == 200 else "errored"
        result = {"type": "succeeded", "message": doc} if status == 200 else _errored_doc(doc)
        line = _line(request.custom_id, result)
        if draw < faults.line_error + faults.malformed_line:
            self.sim.stats.faults["batch-malformed-line"] += 1
            line = line[: len(line) // 2]
        return outcome, line


# -- reading a batch ------------------------------------------------------------------------


async def _body(request: web.Request, limit: int) -> bytes | None:
    """The request's body, read a chunk at a time; None once it passes ``limit`` bytes
    (announced or sent: the rest is never read)."""
    if request.content_length is not None and request.content_length > limit:
        return None
    body = bytearray()
    async for chunk in request.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _stored_requests(body: bytes, max_requests: int, path: Path) -> list[_Request] | str:
    """The batch's requests, their params written to ``path`` one after another; or why the
    batch is refused (and nothing written). Run in a thread: the body may be 256 MB."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return "The request body is not valid JSON."
    refused = _refusal(doc, max_requests)
    if refused is not None:
        return refused
    stored: list[_Request] = []
    offset = 0
    with path.open("wb") as out:
        for item in doc["requests"]:
            params = json.dumps(item["params"], separators=(",", ":")).encode()
            out.write(params)
            stored.append(_Request(item["custom_id"], offset, len(params)))
            offset += len(params)
    return stored


def _refusal(doc: Any, max_requests: int) -> str | None:
    """Why the create body ``doc`` is refused (None: it is not), in the words of the API's
    validation errors. The params are only required to be an object: they are validated as
    the batch runs."""
    if not isinstance(doc, dict):
        return "body: Input should be a valid dictionary"
    requests = doc.get("requests")
    if not isinstance(requests, list):
        return (
            "requests: Field required"
            if requests is None
            else "requests: Input should be a valid list"
        )
    if not requests:
        return "requests: List should have at least 1 item after validation, not 0"
    if len(requests) > max_requests:
        return (
            f"requests: List should have at most {max_requests} items after validation, "
            f"not {len(requests)}"
        )
    seen: set[str] = set()
    for n, item in enumerate(requests):
        if not isinstance(item, dict):
            return f"requests.{n}: Input should be a valid dictionary"
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not _CUSTOM_ID.fullmatch(custom_id):
            return f"requests.{n}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if custom_id in seen:
            return (
                f"requests.{n}.custom_id: Duplicate custom_id {custom_id!r}: each request's "
                "custom_id must be unique within the Message Batch."
            )
        seen.add(custom_id)
        if not isinstance(item.get("params"), dict):
            return f"requests.{n}.params: Field required"
    return None


def _params(params: BinaryIO, request: _Request) -> bytes:
    """The params of ``request``, read again from the batch's open params file."""
    params.seek(request.offset)
    return params.read(request.size)


# -- writing --------------------------------------------------------------------------------


def _counts(batch: _Batch) -> dict[str, int]:
    """The request counts: all processing until the batch ends, then its outcomes."""
    if batch.status != "ended":
        processing = len(batch.requests)
        return {"processing": processing, "succeeded": 0, "errored": 0, "canceled": 0,
                "expired": 0}  # fmt: skip
    return {"processing": 0, **batch.counts}


def _never_ran(custom_id: str, outcome: Outcome) -> bytes:
    """The result line of a request that never ran: canceled, expired, or (its batch failing)
    errored with a server error."""
    result = _errored(_FAILED) if outcome == "errored" else {"type": outcome}
    return _line(custom_id, result)


def _errored(message: str) -> Doc:
    """An ``errored`` result of a server error (``api_error``)."""
    return _errored_doc(_WIRE.error(500, "api_error", message))


def _errored_doc(error: Doc) -> Doc:
    """An ``errored`` result carrying the online endpoint's error body."""
    return {"type": "errored", "error": error}


def _line(custom_id: str, result: Doc) -> bytes:
    return json.dumps({"custom_id": custom_id, "result": result}).encode()


def _stamp(unix: Callable[[float], int], at: float | None) -> str | None:
    return None if at is None else _rfc3339(unix(at))


def _rfc3339(unix: int) -> str:
    """Unix seconds as an RFC 3339 timestamp in UTC ("Z").

    >>> _rfc3339(0)
    '1970-01-01T00:00:00Z'
    """
    return datetime.fromtimestamp(unix, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["AnthropicBatchService"]
