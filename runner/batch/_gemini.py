"""Gemini's Batch Mode: ``batchGenerateContent`` over a JSONL file uploaded to the Files API.

Every batch goes by file (never inline): an image makes a line of 100–300 KB, so the 20 MB an
inline request may hold would take only about a hundred lines. The wire, as documented by the
Batch API guide (ai.google.dev/gemini-api/docs/batch-api), its REST reference
(ai.google.dev/api/batch-mode) and the ``google-genai`` SDK (``batches.py``, ``files.py``):

- upload: the resumable protocol. ``POST {host}/upload/v1beta/files`` with
  ``X-Goog-Upload-Protocol: resumable`` and ``-Command: start`` answers an upload URL in
  ``X-Goog-Upload-URL``; one ``upload, finalize`` POST to it sends the bytes and answers
  ``{"file": {"name": "files/…"}}``.
- create: ``POST {base}/models/{model}:batchGenerateContent`` with
  ``{"batch": {"displayName", "inputConfig": {"fileName"}}}``; it answers a long-running
  Operation named ``batches/…`` whose ``metadata`` is the GenerateContentBatch (``state``
  ``BATCH_STATE_*``, ``batchStats``, ``output.responsesFile``) and, once ``done``, whose
  ``response`` holds the output too and whose ``error`` says why it failed.
- get ``GET {base}/batches/{id}``; list ``GET {base}/batches`` (``operations``,
  ``nextPageToken``); cancel ``POST {base}/batches/{id}:cancel`` (an empty answer).
- results: ``GET {host}/download/v1beta/files/{id}:download?alt=media``, one JSON line per
  request: ``{"key", "response": GenerateContentResponse}`` or ``{"key", "error": Status}``.

The key goes only in the ``x-goog-api-key`` header, to the configured host only; no redirect
is followed (both by the one exchange, :mod:`runner.backends._exchange`). Nothing here
retries: the batch runner decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp

from conditions import Request
from runner._errors import ConfigError
from runner.backends._client import redact_reply
from runner.backends._errors import CallError, Transient, Unreadable
from runner.backends._exchange import Answer, Peer, exchange, exchanging, scrubbed
from runner.backends._gemini import (
    GeminiGenerate,
    classify_gemini,
    classify_rpc_status,
    goog_api_key,
)
from runner.backends._json import read_json
from runner.backends._origin import Origin
from runner.backends._secrets import KEY_SHAPED, MAX_MESSAGE, ApiKey, clip, holds_key, redact
from runner.backends._usage import count
from runner.backends._wire import Body, field_dict, splice_json
from runner.batch._api import (
    BatchLimits,
    BatchState,
    RemoteBatch,
    ResultLine,
    Sought,
    Source,
    uploaded,
)
from runner.batch._ids import BadId, checked_id, optional_id
from runner.batch._jsonl import MAX_RESULTS_BYTES, unbroken

# The guide: "The maximum allowed file size for an input file is 2GB" (the rate-limits page
# says the same). No count of requests per batch is documented for the Gemini API: 50,000
# matches the other providers and keeps one file's results a bounded read.
LIMITS = BatchLimits(max_requests=50_000, max_bytes=2 * 1024**3)
MEDIA_TYPE = "application/jsonl"
LIST_PAGES = 10  # find() reads at most this many pages of the account's batches, newest first
PAGE_SIZE = 100
MAX_ANSWER_BYTES = 64 * 1024 * 1024  # a metadata answer (a batch, a page of the list)
MAX_LINE_BYTES = 64 * 1024 * 1024  # one result line; a longer one is a problem, not read whole
_CHUNK = 1 << 16

# BATCH_STATE_* (the REST enum, as the SDK's t_job_state lists it); the guide's examples spell
# them JOB_STATE_*, as the SDK reports them: both are read, by the word after the prefix.
_STATES: dict[str, BatchState] = {
    "PENDING": "validating",
    "QUEUED": "validating",
    "RUNNING": "in_progress",
    "SUCCEEDED": "completed",
    "PARTIALLY_SUCCEEDED": "completed",
    "FAILED": "failed",
    "CANCELLING": "cancelling",
    "CANCELLED": "cancelled",
    "EXPIRED": "expired",
}
_VERSION = re.compile(r"/v\d+[a-z0-9]*$")
_BATCH_ID = re.compile(r"^batches/[A-Za-z0-9_.-]+$")
_FILE_ID = re.compile(r"^files/[A-Za-z0-9_.-]+$")
_KEY_IN_BROKEN_LINE = re.compile(rb'^\s*\{\s*"key"\s*:\s*"([^"\\]{1,512})"')


def media_base(base_url: str, kind: str) -> str:
    """Where the Files API's media go (``kind``: ``upload`` or ``download``): the base URL
    with its trailing version path (``/v1beta``) moved after ``/kind``, or, for a base with
    no version (the simulator's ``http://127.0.0.1:PORT``), the base and ``/kind/v1beta``.

    >>> media_base("https://generativelanguage.googleapis.com/v1beta", "upload")
    'https://generativelanguage.googleapis.com/upload/v1beta'
    >>> media_base("http://127.0.0.1:8000", "download")
    'http://127.0.0.1:8000/download/v1beta'
    """
    base = base_url.rstrip("/")
    match = _VERSION.search(base)
    if match is None:
        return f"{base}/{kind}/v1beta"
    return f"{base[: match.start()]}/{kind}{match.group(0)}"


class GeminiBatches:
    """Gemini's batch endpoints for one model, account and endpoint (a :class:`BatchApi`).

    ``base_url`` is the online base (``https://generativelanguage.googleapis.com/v1beta``, or
    the simulator's); uploads and downloads go to :func:`media_base` of it, on the same host
    (the guide's ``…/upload/v1beta/files`` and ``…/download/v1beta/files/…:download``).
    ``origin`` is the configured base_url's (a batch recorded in a store may name another
    base): the key, and the file, go to no other.

    Raises
    ------
    ConfigError
        The base URL holds a key (it would be written to logs and records).
    """

    limits = LIMITS
    inline = False  # every batch goes by file (see the module docstring)

    def __init__(
        self,
        session: aiohttp.ClientSession,
        model: str,
        base_url: str,
        key: ApiKey,
        *,
        origin: Origin,
        timeout_s: float = 300.0,
    ) -> None:
        if holds_key(base_url, key) or KEY_SHAPED.search(base_url):
            raise ConfigError("the Gemini batch base URL holds an API key; it goes in no URL")
        self._wire = GeminiGenerate(model)
        self.model = model
        self._base = base_url.rstrip("/")
        self._upload = media_base(base_url, "upload") + "/files"
        self._download = media_base(base_url, "download")
        self._key = key
        self._peer = Peer(
            session=session,
            origin=origin,
            key=key,
            credentials=goog_api_key,
            classify=classify_gemini,
            timeout=aiohttp.ClientTimeout(total=timeout_s),
            max_bytes=MAX_ANSWER_BYTES,
        )

    def __repr__(self) -> str:
        return f"GeminiBatches({self.model}, {self._base})"

    # -- the input file --------------------------------------------------------------------

    def line(self, custom_id: str, request: Request) -> Body:
        """``{"key": custom_id, "request": <the online generateContent body>}`` and ``\\n``,
        the image spliced in as the online body has it (never re-encoded)."""
        doc = {"key": custom_id, "request": self._wire.payload(request)}
        image = request.image.base64 if request.image is not None else None
        body = splice_json(doc, image)
        return Body((*body.parts, b"\n"))

    async def upload(self, path: Path, display_name: str) -> str:
        """Upload ``path`` by the resumable protocol: a start request, then one
        ``upload, finalize`` request streaming the file from disk. Its name, ``files/…``."""
        size = path.stat().st_size
        start = {
            "X-Goog-Upload-Protocol": "resumable",
            "X-Goog-Upload-Command": "start",
            "X-Goog-Upload-Header-Content-Length": str(size),
            "X-Goog-Upload-Header-Content-Type": MEDIA_TYPE,
            "Content-Type": "application/json",
        }
        meta = json.dumps({"file": {"display_name": display_name}}).encode()
        started = await exchange(self._peer, "POST", self._upload, data=meta, headers=start)
        url = self._upload_url(started.headers.get("X-Goog-Upload-URL"))
        sending = {
            "X-Goog-Upload-Command": "upload, finalize",
            "X-Goog-Upload-Offset": "0",
            "Content-Type": MEDIA_TYPE,
            "Content-Length": str(size),
        }
        with path.open("rb") as stream:  # aiohttp reads it in chunks as it sends
            # The upload URL is its own credential (the SDK sends no key to it): none goes.
            # It is checked against the configured origin all the same, as every URL is.
            sent = await exchange(
                self._peer, "POST", url, data=stream, headers=sending, keyed=False
            )
        status = sent.headers.get("X-Goog-Upload-Status")
        if status is not None and status.lower() != "final":
            raise Transient(f"the upload of {path.name} ended {clip(status, self._key)!r}")
        name = _field(self._json(sent.body, "upload"), "file", "name")
        if name is None or name == "":
            raise Transient(f"the upload answered no file name: {self._clip(sent.body)}")
        return _file(name, self._key)

    # -- batches ---------------------------------------------------------------------------

    async def create(self, source: Source, tag: str) -> RemoteBatch:
        """Create a batch of the uploaded file ``source`` named ``tag`` (its display name)."""
        file_id = _file(uploaded(source, "gemini"), self._key)
        body = {"batch": {"displayName": tag, "inputConfig": {"fileName": file_id}}}
        url = f"{self._base}/models/{self.model}:batchGenerateContent"
        return self._remote(await self._json_call("POST", url, body))

    async def get(self, batch_id: str) -> RemoteBatch:
        return self._remote(
            await self._json_call("GET", f"{self._base}/{_batch(batch_id, self._key)}")
        )

    async def cancel(self, batch_id: str) -> RemoteBatch:
        """Ask for the cancellation (answered empty), then read the batch's state."""
        await self._json_call("POST", f"{self._base}/{_batch(batch_id, self._key)}:cancel", {})
        return await self.get(batch_id)

    async def find(self, sought: Sought) -> RemoteBatch | None:
        """The newest batch named as ``sought`` (or made of its file) among the account's last
        ``LIST_PAGES`` pages of batches."""
        tag, file_id = sought.tag, sought.input_file
        token: str | None = None
        for _ in range(LIST_PAGES):
            params = {"pageSize": str(PAGE_SIZE)} | ({"pageToken": token} if token else {})
            page = await self._json_call("GET", f"{self._base}/batches", params=params)
            for doc in _list(page.get("operations", page.get("batches"))):
                # Only the batch looked for is read: another's bad id is not this run's concern.
                if isinstance(doc, dict) and _is_named(doc, tag, file_id):
                    return self._remote(doc)
            token = (
                page.get("nextPageToken") if isinstance(page.get("nextPageToken"), str) else None
            )
            if not token:
                return None
        return None

    async def delete_file(self, file_id: str) -> None:
        await exchange(self._peer, "DELETE", f"{self._base}/{_file(file_id, self._key)}")

    # -- results ---------------------------------------------------------------------------

    async def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
        """The batch's result lines: its responses file, streamed and read line by line, or,
        when it has none, the inline responses of the batch as it is now."""
        if batch.output_file is not None:
            url = f"{self._download}/{_file(batch.output_file, self._key)}:download"
            async with exchanging(self._peer, "GET", url, params={"alt": "media"}) as response:
                chunks = response.content.iter_chunked(_CHUNK)  # a broken one: Transient
                async for line in result_lines(chunks, batch.output_file, self._wire, self._key):
                    yield line
            return
        doc = await self._json_call("GET", f"{self._base}/{_batch(batch.id, self._key)}")
        for line in inline_lines(doc, self._wire, self._key):
            yield line

    # -- HTTP ------------------------------------------------------------------------------

    async def _json_call(
        self,
        method: str,
        url: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """One exchange (:func:`~runner.backends._exchange.exchange`) answering a JSON
        object, or nothing (``{}``)."""
        answer: Answer = await exchange(self._peer, method, url, json=body, params=params)
        raw = answer.body
        return self._json(raw, url.rsplit("/", 1)[-1]) if raw.strip() else {}

    def _upload_url(self, given: str | None) -> str:
        """The upload URL the start request answered (the guide's is on the API's own host;
        the exchange sends the file to none at another origin)."""
        if not given:
            raise Transient("the upload start answered no X-Goog-Upload-URL")
        return given

    def _json(self, raw: bytes, what: str) -> dict[str, Any]:
        try:
            doc = read_json(raw)
        except ValueError:  # no JSON, or nested too deep
            raise Transient(f"malformed {what} answer: {self._clip(raw)}") from None
        if not isinstance(doc, dict):
            raise Transient(f"malformed {what} answer: not a JSON object")
        return doc

    def _clip(self, raw: bytes) -> str:
        return redact(raw[:200].decode("utf-8", "replace"), self._key)

    def _remote(self, doc: Mapping[str, Any]) -> RemoteBatch:
        return remote_batch(doc, self._key)


# -- reading a batch -------------------------------------------------------------------------


def remote_batch(doc: Mapping[str, Any], key: ApiKey | None = None) -> RemoteBatch:
    """A batch from its Operation (``metadata`` the GenerateContentBatch, ``response`` and
    ``error`` once done), or from a bare GenerateContentBatch."""
    meta = _meta(doc)
    name = doc.get("name") if isinstance(doc.get("name"), str) else meta.get("name")
    state = _text(meta.get("state")) or ""
    error = doc.get("error") if isinstance(doc.get("error"), dict) else None
    output, response = field_dict(meta, "output"), field_dict(doc, "response")
    stats = field_dict(meta, "batchStats")
    message = _text(error.get("message")) if error is not None else None
    tag = _tag(meta)
    return RemoteBatch(
        id=checked_id(name, "batch name", key),
        state=_state(state, done=doc.get("done") is True, failed=error is not None),
        provider_state=clip(state, key),
        tag=None if tag is None else clip(tag, key),
        input_file=optional_id(_input_file(meta), "input file name", key),
        output_file=optional_id(
            output.get("responsesFile", response.get("responsesFile")), "responses file name", key
        ),
        total=_count(stats.get("requestCount")),
        succeeded=_count(stats.get("successfulRequestCount")),
        failed=_count(stats.get("failedRequestCount")),
        message=None if message is None else clip(message, key, MAX_MESSAGE),
    )


def _meta(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The GenerateContentBatch of an Operation (its ``metadata``), or the bare batch."""
    meta = doc.get("metadata")
    return meta if isinstance(meta, dict) else doc


def _tag(meta: Mapping[str, Any]) -> str | None:
    return _text(meta.get("displayName", meta.get("display_name")))


def _input_file(meta: Mapping[str, Any]) -> object:
    return _field(meta, "inputConfig", "fileName")


def _is_named(doc: Mapping[str, Any], tag: str, file_id: str | None) -> bool:
    """Whether the batch ``doc`` is the one tagged ``tag`` or made of ``file_id``."""
    meta = _meta(doc)
    return _tag(meta) == tag or (file_id is not None and _input_file(meta) == file_id)


def _state(provider: str, *, done: bool, failed: bool) -> BatchState:
    word = provider.removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_")
    if word in _STATES:
        return _STATES[word]
    if done:  # a state this client does not know, on a finished operation
        return "failed" if failed else "completed"
    return "validating"


def _count(value: object) -> int | None:
    """An int64 count: proto3 JSON writes it as a string. Past the store's INTEGER a number
    is no count of a batch's lines: ``None``."""
    if isinstance(value, str) and value.isdigit() and len(value) < 11:
        value = int(value)
    return count(value)


# -- reading results -------------------------------------------------------------------------


async def result_lines(
    chunks: AsyncIterator[bytes], file: str, wire: GeminiGenerate, key: ApiKey | None = None
) -> AsyncIterator[ResultLine]:
    """The result lines in the bytes of ``file``, read a line at a time (a line longer than
    ``MAX_LINE_BYTES`` is a problem, skipped unread, as is what comes past
    :data:`~runner.batch._jsonl.MAX_RESULTS_BYTES`). A key seen before makes a problem."""
    seen: dict[str, int] = {}
    pending = bytearray()
    number = 0
    overlong = False
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > MAX_RESULTS_BYTES:  # a server sending without end: no more is read
            why = f"past {MAX_RESULTS_BYTES:,} bytes of results: not read"
            yield ResultLine(f"{file} line {number + 1}", None, problem=why)
            return
        pending += chunk
        while (end := pending.find(b"\n")) >= 0:
            raw = bytes(pending[:end])
            del pending[: end + 1]
            number += 1
            if overlong:
                overlong = False
                yield ResultLine(f"{file} line {number}", None, problem="a line too long to read")
            elif raw.strip():
                yield _once(read_line(raw, f"{file} line {number}", wire, key), seen, number)
        if len(pending) > MAX_LINE_BYTES:
            pending.clear()
            overlong = True
    if overlong:
        yield ResultLine(f"{file} line {number + 1}", None, problem="a line too long to read")
    elif pending.strip():
        yield _once(
            read_line(bytes(pending), f"{file} line {number + 1}", wire, key), seen, number + 1
        )


def inline_lines(
    doc: Mapping[str, Any], wire: GeminiGenerate, key: ApiKey | None = None
) -> list[ResultLine]:
    """The inline responses of a batch's Operation (``inlinedResponses.inlinedResponses``, in
    ``response`` or ``metadata.output``), each read as a line of a responses file would be:
    its key is ``metadata.key``."""
    found = _field(doc, "response", "inlinedResponses", "inlinedResponses")
    if found is None:
        found = _field(doc, "metadata", "output", "inlinedResponses", "inlinedResponses")
    seen: dict[str, int] = {}
    out = []
    for n, item in enumerate(_list(found), 1):
        line: object = item
        if isinstance(item, dict):
            line = dict(item)
            line.setdefault("key", _field(item, "metadata", "key"))
        where = f"inline line {n}"
        read = unbroken(partial(_read_doc, line, where, wire, key), where, key)
        out.append(_once(read, seen, n))
    return out


def read_line(raw: bytes, where: str, wire: GeminiGenerate, key: ApiKey | None) -> ResultLine:
    """One result line: a reply, an error classified as the online call's would be, or a
    problem saying why it cannot be read (never raised: whatever a line holds ends no run)."""
    return unbroken(partial(_read_line, raw, where, wire, key), where, key)


def _read_line(raw: bytes, where: str, wire: GeminiGenerate, key: ApiKey | None) -> ResultLine:
    try:
        doc = read_json(raw)
    except ValueError as exc:  # no JSON, or nested too deep (TooDeep)
        match = _KEY_IN_BROKEN_LINE.match(raw)  # a line cut short may still name its key
        named = clip(match.group(1).decode("utf-8", "replace"), key) if match else None
        return ResultLine(where, named, problem=f"not JSON ({len(raw)} bytes): {exc}")
    return _read_doc(doc, where, wire, key)


def _read_doc(doc: object, where: str, wire: GeminiGenerate, key: ApiKey | None) -> ResultLine:
    """A result line already parsed (a file's line, or an inline response)."""
    if not isinstance(doc, dict):
        return ResultLine(where, None, problem=f"a JSON {type(doc).__name__}, not an object")
    custom_id = doc.get("key")
    if not isinstance(custom_id, str) or not custom_id:
        return ResultLine(where, None, problem="no key")
    custom_id = clip(custom_id, key)  # stored with a problem when it is no id of ours
    if isinstance(doc.get("error"), dict):
        error = rpc_error(doc["error"], key)
        return ResultLine(where, custom_id, status=error.status, error=error)
    response = doc.get("response")
    if not isinstance(response, dict):
        return ResultLine(where, custom_id, problem="neither a response nor an error")
    try:
        reply = wire.read(response)
    except Unreadable as exc:  # billed, as online: an error with its usage
        exc.status = 200
        return ResultLine(where, custom_id, status=200, error=scrubbed(exc, key))
    return ResultLine(
        where, custom_id, reply=redact_reply(reply, key) if key else reply, status=200
    )


def rpc_error(status: Mapping[str, Any], key: ApiKey | None = None) -> CallError:
    """A result line's ``google.rpc.Status`` classified as the online call's HTTP error of the
    same code (:func:`~runner.backends._gemini.classify_rpc_status`), scrubbed of ``key``."""
    return scrubbed(classify_rpc_status(status), key)


def _once(line: ResultLine, seen: dict[str, int], number: int) -> ResultLine:
    """``line``, or a problem if its key was answered on an earlier line."""
    if line.custom_id is None or line.problem is not None:
        return line
    first = seen.setdefault(line.custom_id, number)
    if first == number:
        return line
    return ResultLine(line.where, line.custom_id, problem=f"key already answered on line {first}")


# -- small readers ---------------------------------------------------------------------------


def _field(doc: object, *path: str) -> Any:
    """``doc[path[0]][path[1]]…`` in camelCase or snake_case, or ``None``."""
    for name in path:
        if not isinstance(doc, dict):
            return None
        snake = re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()
        doc = doc.get(name, doc.get(snake))
    return doc


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _batch(batch_id: object, key: ApiKey | None) -> str:
    """A batch name, checked (:mod:`runner.batch._ids`) and of Gemini's shape, for a URL."""
    checked = checked_id(batch_id, "batch name", key)
    if not _BATCH_ID.match(checked):
        raise BadId(f"not a Gemini batch name (batches/…): {checked!r}")
    return checked


def _file(file_id: object, key: ApiKey | None) -> str:
    """A file name, checked (:mod:`runner.batch._ids`) and of Gemini's shape, for a URL."""
    checked = checked_id(file_id, "file name", key)
    if not _FILE_ID.match(checked):
        raise BadId(f"not a Gemini file name (files/…): {checked!r}")
    return checked


__all__ = [
    "LIMITS",
    "GeminiBatches",
    "inline_lines",
    "media_base",
    "read_line",
    "remote_batch",
    "result_lines",
    "rpc_error",
]
