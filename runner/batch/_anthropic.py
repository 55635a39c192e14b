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
  "expired"}}``; the reference: its path "should not be assumed and may change". The guide: a
  request's ``params`` are validated when it is processed, so a bad one comes back ``errored``
  rather than refusing the batch.

The key goes in ``x-api-key`` with ``anthropic-version`` (:func:`anthropic_headers`), to the
configured origin only, by the one exchange. Each request's ``params`` is byte for byte the
online call's (:class:`~runner.backends.AnthropicMessages`).

Choices where the reference is silent or leaves a gap:

- **The create is streamed from disk.** The runner writes the requests as JSONL, as for the
  other providers; the create's body is that file's lines inside ``{"requests": [`` … ``]}``,
  each line's newline but the last's a comma, sent with its exact ``Content-Length`` (the
  file's and the brackets'), never held whole in memory. :data:`LIMITS` keeps a file 1 MB under
  the documented 256 MB.
- **Results are read from ``results_url`` where the key may go there** (the configured origin,
  a plain URL without the key in it), else from the documented path on the configured base
  (``{base}/v1/messages/batches/{id}/results``): a proxy's base keeps working, and an address
  a server answers never carries the key elsewhere.
- **A batch is found again by its size, its time and its results.** The batch object holds no
  field of the client's (no metadata, no display name) and the list cannot be filtered, so a
  create whose answer was lost (:meth:`AnthropicBatches.find`) is looked for among the batches
  created since it was recorded (less :data:`CLOCK_SKEW`) whose size is the file's and whose id
  the ledger does not already hold. One that has ended is its own if the first result with an
  id in its first :data:`HEAD_BYTES` is one of the file's, another's if it is not; one whose
  results tell nothing counts as running. Of those, one alone is taken as it (its results
  confirm it when read: another's lines would be stored as problems, their requests pending
  again, nothing paid twice); two or more are :class:`Undecided`: nothing is created again,
  and a later look, once they have ended, tells. Not found is "never made" only once the list
  was read back past the record's time (or to its end); otherwise :class:`Undecided` too.
- Nothing is uploaded, so nothing is deleted: a batch's results stay at Anthropic (29 days)
  for anyone who wants to check them.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from conditions import Request
from runner.backends._anthropic import AnthropicMessages, anthropic_headers, classify_anthropic
from runner.backends._client import redact_reply
from runner.backends._errors import CallError, Transient, Unreadable
from runner.backends._exchange import Peer, exchange, exchanging, scrubbed
from runner.backends._origin import OffOrigin, Origin
from runner.backends._secrets import ApiKey, clip, redact
from runner.backends._usage import count
from runner.backends._wire import Body, ErrorBody, as_text, field_dict, load_json
from runner.batch._api import (
    BatchLimits,
    BatchState,
    RemoteBatch,
    ResultLine,
    Sought,
    Source,
    Undecided,
)
from runner.batch._ids import BadId, checked_id
from runner.batch._jsonl import keyed, result_lines, stream_lines, unbroken

MB = 1_000_000  # decimal: under the documented limit whichever megabyte is meant
# The documented limits, the bytes 1 MB under (the body is the file and 15 bytes of brackets).
LIMITS = BatchLimits(max_requests=100_000, max_bytes=255 * MB)
CLOCK_SKEW = timedelta(minutes=5)  # this machine's clock against Anthropic's, at most
FIND_PAGES = 10  # pages of the batch list find() reads (newest first)
PAGE_SIZE = 1000  # batches per page: the API's most (a page is ~0.7 MB)
HEAD_BYTES = 64 * 1024 * 1024  # of an ended candidate's results read to find its first id
MAX_URL = 2048  # characters of a results_url kept
_PLAIN_URL = re.compile(r"https?://[A-Za-z0-9._~:/%+-]+")
MAX_OBJECT_BYTES = 4 * 1024 * 1024  # a batch object, or a page of them
MAX_LINE_BYTES = 32 * 1024 * 1024  # a result line: an answer is ~50 KB; past this it is junk
_HEAD, _TAIL = b'{"requests":[', b"]}"
_NEVER_RAN = frozenset({"canceled", "expired"})


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
        head = b'{"custom_id":' + json.dumps(custom_id).encode() + b',"params":'
        return Body((head, *params.parts, b"}\n"))

    async def upload(self, path: Path, display_name: str) -> str:
        raise TypeError("Anthropic takes a batch's requests in its create: nothing is uploaded")

    async def create(self, source: Source, tag: str) -> RemoteBatch:
        """Create the batch of the JSONL file ``source``, its lines streamed in the request.
        ``tag`` is groundbench's alone: Anthropic keeps no field for it."""
        if not isinstance(source, Path):
            raise TypeError(f"Anthropic makes a batch of its requests' file, not of {source!r}")
        length = len(_HEAD) + source.stat().st_size + len(_TAIL)  # each \n but the last a comma
        headers = {"content-type": "application/json", "content-length": str(length)}
        doc = await self._call("POST", self._base, "batch", data=_envelope(source), headers=headers)
        return self._batch(doc)

    # -- batches --------------------------------------------------------------------------

    async def get(self, batch_id: str) -> RemoteBatch:
        return self._batch(await self._call("GET", self._url(batch_id), "batch"))

    async def cancel(self, batch_id: str) -> RemoteBatch:
        return self._batch(await self._call("POST", self._url(batch_id, "/cancel"), "batch"))

    async def find(self, sought: Sought) -> RemoteBatch | None:
        """The batch ``sought``, made since it was recorded, if one was (see the module
        docstring for how it is told from the account's others). None only once the list was
        read back past the time it was recorded, or to its end.

        Raises
        ------
        Undecided
            Two or more batches could be it, or the list could not be read back that far.
        """
        running: list[RemoteBatch] = []
        search = _Search(sought)
        async for remote in self._candidates(search):
            holds = await self._holds(remote, sought.custom_ids) if remote.ended else None
            if holds:
                return remote
            if holds is None:  # running, or its results cannot tell: it may be this one
                running.append(remote)
        if len(running) > 1:
            ids = ", ".join(r.id for r in running[:4])
            raise Undecided(
                f"{len(running)} batches at the provider ({ids}) could be batch {sought.tag}: "
                "each holds as many requests and was made since it was recorded; it is not "
                "created again (it would be paid twice): a later run tells by their results"
            )
        if running:
            return running[0]
        if not search.complete:
            raise Undecided(
                f"batch {sought.tag} is not among the account's last {search.read:,} batches, "
                "and the list was not read back to when it was recorded: it is not created "
                "again (it would be paid twice); a later run looks again"
            )
        return None

    async def _candidates(self, search: _Search) -> AsyncIterator[RemoteBatch]:
        """The account's batches made since ``search``'s batch was recorded (less the clock
        skew) that hold as many requests and that the ledger does not already hold, newest
        first; ``search.complete`` once the list was read back past that time, or to its end.
        An entry with no usable id is another's: passed over."""
        sought = search.sought
        since = sought.since - CLOCK_SKEW
        after: str | None = None
        for _ in range(FIND_PAGES):
            params = {"limit": str(PAGE_SIZE)} | ({"after_id": after} if after else {})
            page = await self._call("GET", self._base, "batch list", params=params)
            data = page.get("data")
            docs = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
            for doc in docs:
                search.read += 1
                made = _time(doc.get("created_at"))
                if made is not None and made < since:
                    search.complete = True  # the list is newest first: the rest are older
                    return
                ident = doc.get("id")
                if not isinstance(ident, str) or ident in sought.known:
                    continue
                if _total(doc) == sought.requests and _usable(ident, self._key):
                    yield self._batch(doc)
            if page.get("has_more") is False:
                search.complete = True
                return
            last = page.get("last_id")
            if not docs or not isinstance(last, str) or not _usable(last, self._key):
                return  # a page that names no next one: not read to the end
            after = last  # sent back in the query

    async def _holds(self, remote: RemoteBatch, custom_ids: frozenset[str]) -> bool | None:
        """Whether the ended batch ``remote``'s first result with an id is one of
        ``custom_ids`` (its results are those sought, or another's); None when its first
        :data:`HEAD_BYTES` tell no id, or cannot be read (it may be the one)."""
        try:
            async with exchanging(self._peer, "GET", self._results_url(remote)) as response:
                stream = stream_lines(response.content, MAX_LINE_BYTES, max_total=HEAD_BYTES)
                async for raw in stream:
                    read = keyed(raw, "", self._key) if raw is not None and raw.strip() else None
                    if isinstance(read, tuple):
                        return read[1] in custom_ids
        except CallError:
            return None
        return None

    async def delete_file(self, file_id: str) -> None:
        """Nothing is uploaded: nothing to delete."""

    # -- results --------------------------------------------------------------------------

    async def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
        """The batch's result lines, streamed from its ``results_url`` (see the module
        docstring), each read as it arrives."""
        async with exchanging(self._peer, "GET", self._results_url(batch)) as response:
            async for line in result_lines(
                response.content, batch.id, MAX_LINE_BYTES, self._result
            ):
                yield line

    def _results_url(self, batch: RemoteBatch) -> str:
        """Where ``batch``'s results are: its ``results_url`` if it lies at the configured
        origin, else the documented path on the configured base."""
        return batch.output_file or self._url(batch.id, "/results")

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
        except Unreadable as exc:  # billed, as online: an error with its usage
            exc.status = 200
            return ResultLine(where, custom_id, status=200, error=scrubbed(exc, self._key))
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
            output_file=self._admitted(doc.get("results_url")),
            total=_total(doc),
            succeeded=count(counts.get("succeeded")),
            failed=count(counts.get("errored")),
        )

    def _admitted(self, url: object) -> str | None:
        """``results_url`` if the key may go there (the configured origin, no credentials, no
        piece of the key, a plain URL); else None, and the documented path is read instead."""
        if not isinstance(url, str) or len(url) > MAX_URL or not _PLAIN_URL.fullmatch(url):
            return None
        if redact(url, self._key) != url:
            return None
        try:
            self._peer.origin.admit(url, self._key)
        except OffOrigin:
            return None
        return url


def _state(status: str, counts: Mapping[str, Any], *, cancelled: object) -> BatchState:
    """``processing_status`` as groundbench's state: an ended batch is expired if a request
    expired, cancelled if a cancel was asked, else completed."""
    if status == "canceling":
        return "cancelling"
    if status != "ended":
        return "in_progress"
    if (count(counts.get("expired")) or 0) > 0:
        return "expired"
    return "cancelled" if cancelled else "completed"


def _total(doc: Mapping[str, Any]) -> int | None:
    """The batch's size: the sum of its request counts (None if one is missing)."""
    counts = field_dict(doc, "request_counts")
    parts = [
        count(counts.get(k)) for k in ("processing", "succeeded", "errored", "canceled", "expired")
    ]
    if any(p is None for p in parts):
        return None
    return sum(p for p in parts if p is not None)


def _time(value: object) -> datetime | None:
    """An RFC 3339 time, or ``None`` if it is none (then no bound is drawn from it)."""
    text = as_text(value)
    try:
        made = datetime.fromisoformat(text) if text else None
    except ValueError:
        return None
    return made if made is not None and made.tzinfo is not None else None


@dataclass
class _Search:
    """One look for a batch: what is sought, and how far back the list was read."""

    sought: Sought
    read: int = 0  # list entries read
    complete: bool = False  # read back past the time sought was recorded, or to the end


def _usable(ident: str, key: ApiKey) -> bool:
    """Whether ``ident`` is an id by the rule of :mod:`runner.batch._ids` (another's entry
    that is not is passed over, never an end of the look)."""
    try:
        checked_id(ident, "batch id", key)
    except BadId:
        return False
    return True


async def _envelope(path: Path) -> AsyncIterator[bytes]:
    """The create's body from the JSONL file at ``path``: ``{"requests":[`` then its lines,
    each line's ``\\n`` but the last's a comma, then ``]}``, a line at a time. It is as long
    as the file and the two brackets. (A line holds no raw newline: JSON escapes one in a
    string.)"""
    yield _HEAD
    with path.open("rb") as file:
        held: bytes | None = None
        for line in file:
            if held is not None:
                yield held[:-1] + b","
            held = line
        if held is not None:
            yield held
    yield _TAIL
