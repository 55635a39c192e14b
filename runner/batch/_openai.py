"""OpenAI's Batch API (files + batches), which DashScope's compatible mode copies.

Documented wire (platform.openai.com, API reference "Batch" and "Files"):

- ``POST {base}/files`` (multipart: ``purpose=batch`` and the JSONL ``file``) → a file object;
- ``POST {base}/batches`` (``input_file_id``, ``endpoint``, ``completion_window`` "24h",
  ``metadata``) → a batch object; ``GET {base}/batches/{id}``; ``POST …/{id}/cancel``;
  ``GET {base}/batches?limit&after`` (newest first, ``has_more``);
- ``GET {base}/files/{id}/content`` (the output or error JSONL); ``DELETE {base}/files/{id}``.

An input line is ``{custom_id, method, url, body}``; a result line is ``{id, custom_id,
response: {status_code, request_id, body}, error}``, and a request that never ran has
``error.code`` ``batch_expired`` or ``batch_cancelled``. The body of each line is the online
wire's (:class:`~runner.backends.OpenAIChat`), so a batch asks exactly what an online call asks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, get_args
from urllib.parse import quote

import aiohttp

from conditions import Request
from runner.backends._client import redact_reply
from runner.backends._errors import CallError, Transient, Unreadable
from runner.backends._exchange import Peer, exchange, exchanging, scrubbed
from runner.backends._openai import OpenAIChat, bearer, classify_openai
from runner.backends._origin import Origin
from runner.backends._providers import Provider
from runner.backends._secrets import MAX_MESSAGE, ApiKey, clip
from runner.backends._wire import Body, ErrorBody, as_text, field_dict, load_json, splice_json
from runner.batch._api import (
    BatchLimits,
    BatchState,
    RemoteBatch,
    ResultLine,
    Sought,
    Source,
    uploaded,
)
from runner.batch._ids import checked_id, optional_id
from runner.batch._jsonl import keyed, result_lines, unbroken

ENDPOINT = "/v1/chat/completions"  # the lines' url and the batch's endpoint (OpenAI, DashScope)
COMPLETION_WINDOW = "24h"  # OpenAI accepts only this; DashScope accepts 24h up to 336h
TAG_KEY = "groundbench"  # the metadata key that names the batch to groundbench
MB = 1_000_000  # decimal: under the documented limit whichever megabyte the provider means
# Per provider, from its documentation. OpenAI (API reference, "Create batch"): 50,000
# requests and 200 MB per input file. DashScope (Model Studio, "OpenAI compatible - Batch (file
# input)"): 50,000 requests and 500 MB per file (6 MB per line), completion windows 24h-336h,
# statuses spelt as OpenAI's; its Singapore endpoint lists only text models for batch, Beijing's
# the Qwen-VL family too.
LIMITS: Mapping[str, BatchLimits] = {
    "openai": BatchLimits(max_requests=50_000, max_bytes=200 * MB),
    "qwen": BatchLimits(max_requests=50_000, max_bytes=500 * MB),
}
# OpenAI spells its states as groundbench normalises them; DashScope spells them alike.
_STATES: Mapping[str, BatchState] = {s: s for s in get_args(BatchState)}
NEVER_RAN = frozenset({"batch_expired", "batch_cancelled"})
MAX_OBJECT_BYTES = 4 * 1024 * 1024  # a batch object or a page of 100 of them
MAX_LINE_BYTES = 32 * 1024 * 1024  # a result line: an answer is ~50 KB; past this it is junk
FIND_PAGES = 10  # pages of the batch list searched by find (100 batches each)


class OpenAIBatches:
    """The batch endpoints of one OpenAI-compatible provider, for one model and key.

    ``base_url`` is the provider's OpenAI-compatible base (``https://api.openai.com/v1``,
    DashScope's ``…/compatible-mode/v1``, or the simulator's address): endpoints are appended
    to it as the online wire appends ``/chat/completions``. ``origin`` is the configured
    base_url's (a batch recorded in a store may name another base): the key goes to no other.
    """

    inline = False  # a batch is made of an uploaded file

    def __init__(
        self,
        session: aiohttp.ClientSession,
        provider: Provider,
        model: str,
        base_url: str,
        key: ApiKey,
        *,
        origin: Origin,
        read_timeout_s: float = 300.0,
    ) -> None:
        self.provider = provider
        self.limits = LIMITS.get(provider.name, LIMITS["openai"])
        self._chat = OpenAIChat(provider, model)
        self._base = base_url.rstrip("/")
        self._key = key
        # What differs from GeminiBatches' Peer is all that is written here: the key's header,
        # the classifier, the timeout and the read cap.
        self._peer = Peer(
            session=session,
            origin=origin,
            key=key,
            credentials=bearer,
            classify=classify_openai,
            # No total: a 200 MB upload or download may take long, but no read may stall.
            timeout=aiohttp.ClientTimeout(total=None, connect=60.0, sock_read=read_timeout_s),
            max_bytes=MAX_OBJECT_BYTES,
        )

    def __repr__(self) -> str:
        return f"OpenAIBatches({self.provider.name}, {self._chat.model}, {self._base})"

    # -- the input file -------------------------------------------------------------------

    def line(self, custom_id: str, request: Request) -> Body:
        """``request`` as one JSONL line; its body is byte for byte the online call's."""
        doc = {
            "custom_id": custom_id,
            "method": "POST",
            "url": ENDPOINT,
            "body": self._chat.payload(request),
        }
        image = request.image.data_url if request.image is not None else None
        spliced = splice_json(doc, image)
        return Body((*spliced.parts, b"\n"))

    async def upload(self, path: Path, display_name: str) -> str:
        """Upload the file at ``path``, streamed from disk by aiohttp (never read whole)."""
        name = display_name if display_name.endswith(".jsonl") else f"{display_name}.jsonl"
        with path.open("rb") as file:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", file, filename=name, content_type="application/jsonl")
            doc = await self._call("POST", "/files", "file object", data=form)
        return self._id(doc, "file id")

    # -- batches --------------------------------------------------------------------------

    async def create(self, source: Source, tag: str) -> RemoteBatch:
        """Create the batch; ``tag`` goes in its metadata, which both providers echo back."""
        body = {
            "input_file_id": uploaded(source, self.provider.name),
            "endpoint": ENDPOINT,
            "completion_window": COMPLETION_WINDOW,
            "metadata": {TAG_KEY: tag},
        }
        return self._batch(await self._call("POST", "/batches", "batch", json=body))

    async def get(self, batch_id: str) -> RemoteBatch:
        path = f"/batches/{self._seg(batch_id, 'batch id')}"
        return self._batch(await self._call("GET", path, "batch"))

    async def cancel(self, batch_id: str) -> RemoteBatch:
        path = f"/batches/{self._seg(batch_id, 'batch id')}/cancel"
        return self._batch(await self._call("POST", path, "batch"))

    async def find(self, sought: Sought) -> RemoteBatch | None:
        """The newest batch tagged as ``sought`` or made of its file, among the account's last
        :data:`FIND_PAGES` hundred batches (the list is newest first)."""
        tag, file_id = sought.tag, sought.input_file
        after: str | None = None
        for _ in range(FIND_PAGES):
            params = {"limit": "100"} | ({"after": after} if after else {})
            page = await self._call("GET", "/batches", "batch list", params=params)
            data = page.get("data")
            batches = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
            for doc in batches:
                if _tag_of(doc) == tag or (file_id and doc.get("input_file_id") == file_id):
                    return self._batch(doc)
            last = page.get("last_id") or (batches[-1].get("id") if batches else None)
            if not page.get("has_more") or not isinstance(last, str) or not batches:
                return None
            after = checked_id(last, "batch list cursor", self._key)  # sent back in a URL
        return None

    async def delete_file(self, file_id: str) -> None:
        """Delete the file; one already gone (404) is deleted."""
        try:
            path = f"/files/{self._seg(file_id, 'file id')}"
            await self._call("DELETE", path, "file deletion")
        except CallError as exc:
            if exc.status != 404:
                raise

    # -- results --------------------------------------------------------------------------

    async def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
        """The output file's lines, then the error file's, each read as it arrives."""
        for file_id in (batch.output_file, batch.error_file):
            if file_id:
                async for line in self._file_lines(file_id):
                    yield line

    async def _file_lines(self, file_id: str) -> AsyncIterator[ResultLine]:
        url = f"{self._base}/files/{self._seg(file_id, 'file id')}/content"
        async with exchanging(self._peer, "GET", url) as response:
            async for line in result_lines(response.content, file_id, MAX_LINE_BYTES, self._result):
                yield line

    def _result(self, raw: bytes, where: str) -> ResultLine:
        """One result line read: an answer, an error, a request that never ran, or why the
        line cannot be read. Never raises: whatever a line holds ends no run."""
        return unbroken(partial(self._read_result, raw, where), where, self._key)

    def _read_result(self, raw: bytes, where: str) -> ResultLine:
        read = keyed(raw, where, self._key)
        if isinstance(read, ResultLine):
            return read
        doc, custom_id = read
        error = doc.get("error")
        if isinstance(error, dict) and error:
            return self._error_line(where, custom_id, error)
        response = doc.get("response")
        if not isinstance(response, dict):
            return ResultLine(where, custom_id, problem="neither a response nor an error")
        status = response.get("status_code")
        if not isinstance(status, int) or isinstance(status, bool):
            return ResultLine(where, custom_id, problem="the response has no status_code")
        body = response.get("body")
        if status != 200:
            failed = self._scrubbed(classify_openai(status, {}, ErrorBody.parsed(body)))
            return ResultLine(where, custom_id, status=status, error=failed)
        try:
            reply = redact_reply(self._chat.read(body), self._key)
        except Unreadable as exc:  # billed, as online: an error with its usage
            exc.status = status
            return ResultLine(where, custom_id, status=status, error=self._scrubbed(exc))
        return ResultLine(where, custom_id, reply=reply, status=status)

    def _error_line(self, where: str, custom_id: str, error: dict[str, Any]) -> ResultLine:
        """A line whose ``error`` is set: never ran (expired, cancelled), or failed."""
        code = error.get("code")
        if isinstance(code, str) and code in NEVER_RAN:
            return ResultLine(where, custom_id, ran=False)
        failed = self._scrubbed(classify_openai(0, {}, ErrorBody.parsed({"error": error})))
        failed.status = None  # the line has no HTTP status of its own
        return ResultLine(where, custom_id, error=failed)

    # -- the exchange ---------------------------------------------------------------------

    async def _call(self, method: str, path: str, what: str, **send: Any) -> dict[str, Any]:
        """One exchange (:func:`~runner.backends._exchange.exchange`): its JSON object, or
        the :class:`CallError` of its failure."""
        answer = await exchange(self._peer, method, self._base + path, **send)
        try:
            return load_json(answer.body, what)
        except CallError as exc:
            raise self._scrubbed(exc) from None

    def _scrubbed(self, error: CallError) -> CallError:
        return scrubbed(error, self._key)

    def _batch(self, doc: dict[str, Any]) -> RemoteBatch:
        """A batch object as a :class:`RemoteBatch`; an unknown status reads as running
        (polled again), with the provider's word kept (clipped). An id that breaks the rule
        of :mod:`runner.batch._ids` refuses the whole object (:class:`~runner.batch._ids.BadId`).
        """
        status = doc.get("status")
        provider_state = status if isinstance(status, str) else "unknown"
        counts = field_dict(doc, "request_counts")
        tag = _tag_of(doc)
        return RemoteBatch(
            id=self._id(doc, "batch id"),
            state=_STATES.get(provider_state, "in_progress"),
            provider_state=clip(provider_state, self._key),
            tag=None if tag is None else clip(tag, self._key),
            input_file=self._file_id(doc, "input_file_id"),
            output_file=self._file_id(doc, "output_file_id"),
            error_file=self._file_id(doc, "error_file_id"),
            total=_int(counts.get("total")),
            succeeded=_int(counts.get("completed")),
            failed=_int(counts.get("failed")),
            message=self._message(doc.get("errors")),
        )

    def _message(self, errors: object) -> str | None:
        """``errors.data[*]`` as one line: why a batch failed validation, redacted."""
        data = errors.get("data") if isinstance(errors, dict) else None
        if not isinstance(data, list):
            return None
        said = []
        for e in data:
            if isinstance(e, dict) and isinstance(e.get("message"), str):
                line = e.get("line")
                where = f"line {line}: " if isinstance(line, int) else ""
                said.append(where + e["message"])
        text = "; ".join(said)
        return clip(text, self._key, MAX_MESSAGE) if text else None

    def _id(self, doc: dict[str, Any], what: str) -> str:
        value = doc.get("id")
        if value is None or value == "":
            raise Transient(f"malformed answer: no {what}")
        return checked_id(value, what, self._key)

    def _file_id(self, doc: dict[str, Any], field: str) -> str | None:
        return optional_id(doc.get(field), field, self._key)

    def _seg(self, name: str, what: str) -> str:
        """An id as one URL path segment, checked again (it may come from an old store), and
        quoted: a hostile id cannot reach another path."""
        return quote(checked_id(name, what, self._key), safe="")


def _tag_of(doc: dict[str, Any]) -> str | None:
    return as_text(field_dict(doc, "metadata").get(TAG_KEY))


def _int(value: object) -> int | None:
    """A count, or ``None``: past the store's INTEGER a number is no count of a batch's lines."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


__all__ = ["LIMITS", "OpenAIBatches"]
