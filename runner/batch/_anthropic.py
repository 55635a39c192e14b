"""Anthropic's Message Batches API: a batch's requests go inline, in the create request itself.

Documented wire (docs.claude.com, API reference "Message Batches", the batch-processing guide,
and the official ``anthropic`` SDK's ``resources/messages/batches.py``):

- ``POST {base}/v1/messages/batches`` with ``{"requests": [{"custom_id", "params"}, …]}`` (at
  most 100,000 requests or 256 MB, whichever comes first; ``custom_id`` unique in the batch,
  ``^[a-zA-Z0-9_-]{1,64}$``), ``params`` a Messages request; a ``MessageBatch`` comes back;
- ``GET …/batches/{id}``; ``POST …/batches/{id}/cancel``; ``GET …/batches?limit&after_id``
  (``data`` newest first, ``has_more``, ``last_id``);
- ``processing_status`` ``in_progress``, ``canceling`` or ``ended``; ``request_counts`` tallies
  ``processing``, ``succeeded``, ``errored``, ``canceled`` and ``expired`` (their sum is the
  batch's size); a batch ends within 24 hours, a request not run by then ``expired``;
- once ended, ``results_url`` serves JSONL, one line per request in any order:
  ``{"custom_id", "result": {"type": "succeeded", "message"} | {"type": "errored", "error":
  {"type": "error", "error": {"type", "message"}}} | {"type": "canceled"} | {"type":
  "expired"}}``. The guide: a request's ``params`` are validated when it is processed, so a bad
  one comes back ``errored`` rather than refusing the batch.

The key goes in ``x-api-key`` with ``anthropic-version`` (:func:`anthropic_headers`), to the
configured origin only, by the one exchange. Each request's ``params`` is byte for byte the
online call's (:class:`~runner.backends.AnthropicMessages`).

Choices where the reference is silent or leaves a gap:

- **The create is streamed from disk.** The runner writes the requests as JSONL, as for the
  other providers; the create's body is that file's lines inside ``{"requests": [`` … ``]}``,
  comma-separated, sent with its exact ``Content-Length``, never held whole in memory.
  :data:`LIMITS` keeps a file 1 MB under the documented 256 MB for the envelope and commas.
- **Results are read from the documented path on the configured base**
  (``{base}/v1/messages/batches/{id}/results``, which is what ``results_url`` names on
  Anthropic's own API), not from wherever ``results_url`` points: a proxy's base keeps working,
  and an address a server answers can never carry the key elsewhere.
- **A batch is found again by its size, its time and its results.** The batch object holds no
  field of the client's (no metadata, no display name) and the list cannot be filtered, so a
  create whose answer was lost (:meth:`AnthropicBatches.find`) is looked for among the batches
  created since it was recorded (less :data:`CLOCK_SKEW`) whose size is the file's and whose id
  the ledger does not already hold. One that has ended is its own if its first result's
  ``custom_id`` is one of the file's, else it is another's. Of those not yet ended, one alone
  is taken as it (its results confirm it when read: another's lines would be stored as
  problems, their requests pending again, nothing paid twice); two or more are
  :class:`Undecided`: nothing is created again, and a later look, once they have ended, tells.
- Nothing is uploaded, so nothing is deleted: a batch's results stay at Anthropic (29 days)
  for anyone who wants to check them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from conditions import Request
from runner.backends._anthropic import AnthropicMessages, anthropic_headers, classify_anthropic
from runner.backends._client import redact_reply
from runner.backends._errors import CallError, Transient
from runner.backends._exchange import Peer, exchange, exchanging, scrubbed
from runner.backends._origin import Origin
from runner.backends._secrets import MAX_MESSAGE, ApiKey, clip
from runner.backends._wire import Body, ErrorBody, as_int, as_text, field_dict, load_json
from runner.batch._api import BatchLimits, BatchState, RemoteBatch, ResultLine, Sought, Source
from runner.batch._ids import checked_id
from runner.batch._jsonl import keyed, stream_lines, unbroken

MB = 1_000_000  # decimal: under the documented limit whichever megabyte is meant
# The documented limits, less 1 MB for the envelope and a comma per request.
LIMITS = BatchLimits(max_requests=100_000, max_bytes=255 * MB)
CLOCK_SKEW = timedelta(minutes=5)  # this machine's clock against Anthropic's, at most
FIND_PAGES = 10  # pages of the batch list find() reads (newest first)
PAGE_SIZE = 100  # batches per page (the API takes 1 to 1,000)
FIRST_LINES = 16  # result lines find() reads of an ended candidate before it gives up on it
MAX_OBJECT_BYTES = 4 * 1024 * 1024  # a batch object, or a page of them
MAX_LINE_BYTES = 32 * 1024 * 1024  # a result line: an answer is ~50 KB; past this it is junk
_CHUNK = 1 << 16
_HEAD, _TAIL = b'{"requests":[', b"]}"
_NEVER_RAN = frozenset({"canceled", "expired"})


class Undecided(Transient):
    """Several batches at the provider could be the one sought and none has ended: none is
    taken, none is created; a later look tells them apart by their results."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="undecided")


class AnthropicBatches:
    """The Message Batches endpoints for one model and key (a :class:`BatchApi`).

    ``base_url`` is the online base (``https://api.anthropic.com``, or the simulator's):
    ``/v1/messages/batches`` is appended to it as ``/v1/messages`` is online. ``origin`` is the
    configured base_url's (a batch recorded in a store may name another base): the key goes to
    no other.
    """

    limits = LIMITS
    inline = True  # the create carries the requests: nothing is uploaded

    def __init__(
        self,
        session: aiohttp.ClientSession,
        model: str,
        base_url: str,
        key: ApiKey,
        *,
        origin: Origin,
        read_timeout_s: float = 300.0,
    ) -> None:
        self.model = model
        self._messages = AnthropicMessages(model)
        self._base = base_url.rstrip("/") + "/v1/messages/batches"
        self._key = key
        self._peer = Peer(
            session=session,
            origin=origin,
            key=key,
            credentials=anthropic_headers,
            classify=classify_anthropic,
            # No total: a create of 255 MB or a download may take long, but no read may stall.
            timeout=aiohttp.ClientTimeout(total=None, connect=60.0, sock_read=read_timeout_s),
            max_bytes=MAX_OBJECT_BYTES,
        )

    def __repr__(self) -> str:
        return f"AnthropicBatches({self.model}, {self._base})"

    # -- the requests ---------------------------------------------------------------------

    def line(self, custom_id: str, request: Request) -> Body:
        """``request`` as one line, ``{"custom_id", "params"}``; its params are byte for byte
        the online call's body."""
        params = self._messages.encode(request)
        head = b'{"custom_id":' + _json_text(custom_id) + b',"params":'
        return Body((head, *params.parts, b"}\n"))

    async def upload(self, path: Path, display_name: str) -> str:
        raise TypeError("Anthropic takes a batch's requests in its create: nothing is uploaded")

    async def create(self, source: Source, tag: str) -> RemoteBatch:
        """Create the batch of the JSONL file ``source``, its lines streamed in the request.
        ``tag`` is groundbench's alone: Anthropic keeps no field for it."""
        if not isinstance(source, Path):
            raise TypeError(f"Anthropic makes a batch of its requests' file, not of {source!r}")
        headers = {"content-type": "application/json", "content-length": str(_length(source))}
        doc = await self._call("POST", self._base, "batch", data=_envelope(source), headers=headers)
        return self._batch(doc)

    # -- batches --------------------------------------------------------------------------

    async def get(self, batch_id: str) -> RemoteBatch:
        return self._batch(await self._call("GET", self._url(batch_id), "batch"))

    async def cancel(self, batch_id: str) -> RemoteBatch:
        return self._batch(await self._call("POST", self._url(batch_id, "/cancel"), "batch"))

    async def find(self, sought: Sought) -> RemoteBatch | None:
        """The batch ``sought``, made since it was recorded, if one was (see the module
        docstring for how it is told from the account's others).

        Raises
        ------
        Undecided
            Two or more batches not yet ended could be it.
        """
        running: list[RemoteBatch] = []
        async for remote in self._candidates(sought):
            if not remote.ended:
                running.append(remote)
            elif await self._holds(remote, sought.custom_ids):
                return remote
        if len(running) > 1:
            ids = ", ".join(r.id for r in running[:4])
            raise Undecided(
                f"{len(running)} batches at the provider ({ids}) could be batch {sought.tag}: "
                "each holds as many requests, made since it was recorded, and none has ended; "
                "it is not created again (it would be paid twice): a later run tells by their "
                "results"
            )
        return running[0] if running else None

    async def _candidates(self, sought: Sought) -> AsyncIterator[RemoteBatch]:
        """The account's batches made since ``sought`` was recorded (less the clock skew)
        that hold as many requests and that the ledger does not already hold, newest first."""
        since = sought.since - CLOCK_SKEW
        after: str | None = None
        for _ in range(FIND_PAGES):
            params = {"limit": str(PAGE_SIZE)} | ({"after_id": after} if after else {})
            page = await self._call("GET", self._base, "batch list", params=params)
            data = page.get("data")
            docs = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
            older = False
            for doc in docs:
                made = _time(doc.get("created_at"))
                if made is not None and made < since:
                    older = True  # the list is newest first: the rest are older still
                    break
                if doc.get("id") in sought.known or _total(doc) != sought.requests:
                    continue
                yield self._batch(doc)
            last = page.get("last_id")
            if older or not page.get("has_more") or not isinstance(last, str) or not docs:
                return
            after = checked_id(last, "batch list cursor", self._key)  # sent back in a URL

    async def _holds(self, remote: RemoteBatch, custom_ids: frozenset[str]) -> bool:
        """Whether the ended batch ``remote``'s first readable result is one of
        ``custom_ids``: its results are those of the requests sought, or another's."""
        seen = 0
        async for line in self.results(remote):
            if line.custom_id is not None:
                return line.custom_id in custom_ids
            seen += 1
            if seen >= FIRST_LINES:
                break
        return False

    async def delete_file(self, file_id: str) -> None:
        """Nothing is uploaded: nothing to delete."""

    # -- results --------------------------------------------------------------------------

    async def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
        """The batch's result lines, streamed from the documented path on the configured base
        (see the module docstring), each read as it arrives."""
        async with exchanging(self._peer, "GET", self._url(batch.id, "/results")) as response:
            n = 0
            async for raw in stream_lines(response.content, MAX_LINE_BYTES):
                n += 1
                where = f"{batch.id} line {n}"
                if raw is None:
                    yield ResultLine(where, None, problem=_TOO_LONG)
                elif raw.strip():
                    yield self._result(raw, where)

    def _result(self, raw: bytes, where: str) -> ResultLine:
        """One result line read; never raises: whatever a line holds ends no run."""
        return unbroken(partial(self._read_result, raw, where), where, self._key)

    def _read_result(self, raw: bytes, where: str) -> ResultLine:
        read = keyed(raw, where, self._key)
        if isinstance(read, ResultLine):
            return read
        doc, custom_id = read
        result = field_dict(doc, "result")
        kind = result.get("type")
        if kind in _NEVER_RAN:
            return ResultLine(where, custom_id, ran=False)
        if kind == "errored":
            error = classify_anthropic(0, {}, ErrorBody.parsed(result.get("error")))
            error.status = None  # the line has no HTTP status of its own
            return ResultLine(where, custom_id, error=scrubbed(error, self._key))
        if kind != "succeeded":
            shown = clip(str(kind), self._key, 64)
            return ResultLine(where, custom_id, problem=f"a result of unknown type {shown}")
        try:
            reply = redact_reply(self._messages.read(result.get("message")), self._key)
        except CallError as exc:
            reason = clip(exc.message, self._key, MAX_MESSAGE)
            return ResultLine(where, custom_id, problem=f"the message: {reason}")
        return ResultLine(where, custom_id, reply=reply, status=200)

    # -- the exchange ---------------------------------------------------------------------

    async def _call(self, method: str, url: str, what: str, **send: Any) -> dict[str, Any]:
        """One exchange: its JSON object, or the :class:`CallError` of its failure."""
        answer = await exchange(self._peer, method, url, **send)
        try:
            return load_json(answer.body, what)
        except CallError as exc:
            raise scrubbed(exc, self._key) from None

    def _url(self, batch_id: str, tail: str = "") -> str:
        """A batch's URL: its id checked again (it may come from an old store) and quoted, so
        a hostile id cannot reach another path."""
        return f"{self._base}/{quote(checked_id(batch_id, 'batch id', self._key), safe='')}{tail}"

    def _batch(self, doc: dict[str, Any]) -> RemoteBatch:
        """A MessageBatch as a :class:`RemoteBatch`; an unknown status reads as running."""
        status = doc.get("processing_status")
        provider_state = status if isinstance(status, str) else "unknown"
        counts = field_dict(doc, "request_counts")
        value = doc.get("id")
        if value is None or value == "":
            raise Transient("malformed answer: no batch id")
        return RemoteBatch(
            id=checked_id(value, "batch id", self._key),
            state=_state(provider_state, counts, cancelled=doc.get("cancel_initiated_at")),
            provider_state=clip(provider_state, self._key),
            total=_total(doc),
            succeeded=_count(counts.get("succeeded")),
            failed=_count(counts.get("errored")),
        )


_TOO_LONG = f"longer than {MAX_LINE_BYTES:,} bytes: not read"


def _state(status: str, counts: Mapping[str, Any], *, cancelled: object) -> BatchState:
    """``processing_status`` as groundbench's state: an ended batch is expired if a request
    expired, cancelled if a cancel was asked, else completed."""
    if status == "canceling":
        return "cancelling"
    if status != "ended":
        return "in_progress"
    if (_count(counts.get("expired")) or 0) > 0:
        return "expired"
    return "cancelled" if cancelled else "completed"


def _total(doc: Mapping[str, Any]) -> int | None:
    """The batch's size: the sum of its request counts (None if one is missing)."""
    counts = field_dict(doc, "request_counts")
    parts = [
        _count(counts.get(k)) for k in ("processing", "succeeded", "errored", "canceled", "expired")
    ]
    if any(p is None for p in parts):
        return None
    return sum(p for p in parts if p is not None)


def _count(value: object) -> int | None:
    """A count, or ``None``: past the store's INTEGER a number is no count of a batch's lines."""
    count = as_int(value)
    return count if count is not None and 0 <= count < 2**31 else None


def _time(value: object) -> datetime | None:
    """An RFC 3339 time, or ``None`` if it is none (then no bound is drawn from it)."""
    text = as_text(value)
    try:
        made = datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
    return made if made is not None and made.tzinfo is not None else None


def _json_text(text: str) -> bytes:
    return json.dumps(text).encode()


def _length(path: Path) -> int:
    """The length of :func:`_envelope` of the file at ``path``: the file's, a comma between
    each two of its lines, and the brackets."""
    size = lines = 0
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            size += len(chunk)
            lines += chunk.count(b"\n")
    return len(_HEAD) + size + max(lines - 1, 0) + len(_TAIL)


async def _envelope(path: Path) -> AsyncIterator[bytes]:
    """The create's body from the JSONL file at ``path``: ``{"requests":[`` then its lines, a
    comma between each two, then ``]}``, a line at a time (:func:`_length` long)."""
    yield _HEAD
    comma = b""
    with path.open("rb") as file:
        for line in file:  # the lines hold no raw newline: JSON escapes one in a string
            yield comma + line
            comma = b","
    yield _TAIL
