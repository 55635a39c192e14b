"""The simulator's Gemini Batch Mode: the Files API's resumable upload and download, and
``batchGenerateContent`` with its batches (get, list, cancel), in the documented shapes
(see :mod:`runner.batch._gemini` for the sources).

Whatever the path's prefix, as the online endpoints: ``…/upload/v1beta/files`` (start, then
the upload URL it hands out, which carries ``upload_id``), ``…/models/<m>:batchGenerateContent``,
``…/batches/<id>`` (GET), ``…/batches`` (GET, paged), ``…/batches/<id>:cancel`` (POST),
``…/download/v1beta/files/<id>:download`` and ``…/files/<id>`` (DELETE). Each request is
authenticated and rate limited as an online call is (:class:`BatchFaults` adds the rest).

Files live on disk in a temporary directory, removed when the app shuts down; an upload is
streamed to it and never held whole. A batch's life is lazy, on the simulator's clock: pending
for the first half of ``turnaround_s``, running for the second, then ended when next looked
at. Its lines are answered only then, each as :meth:`Simulator.answer_line` answers the online
call with the line's key as its id (so a batch answers as the online run, and counts as paid);
the event loop is given back between lines.

Choices the documentation leaves open:

- The upload URL needs no key (its ``upload_id`` authorises it); every other request does.
- The upload is single-request (``upload, finalize`` at offset 0); chunked uploads are refused.
- An upload over ``max_file_bytes`` is refused (400) when started or when the bytes pass the
  limit. An input file that is not JSON lines of ``{"key", "request"}``, repeats a key, or holds
  more than ``max_requests`` lines is refused (400 INVALID_ARGUMENT) when a batch is created.
- The first ``fail_first`` batches fail (no output, an Operation error), the next
  ``expire_first`` expire having answered the first ``expired_share`` of their lines (the
  others are absent from the responses file).
- A batch cancelled before it ended answered nothing (lines run only at the end): CANCELLED,
  no responses file. Cancelling an ended batch changes nothing.

Times are RFC 3339 in UTC ("Z"), from :meth:`Simulator.unix_time`: a batch's ``createTime``,
``updateTime`` (its last change of state) and ``endTime`` (once ended), as the
GenerateContentBatch resource documents them; a file's ``createTime``, ``updateTime`` and
``expirationTime`` (48 hours on, the Files API's retention), as the File resource does.
``GET …/files/<id>`` answers the File (the SDK's ``files.get``), and ``…/files/<id>:download``
answers as ``…/download/…/files/<id>:download`` does (the SDK's ``files.download`` drops the
``/download`` prefix).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from runner.simulator._wires import Doc, GeminiWire

if TYPE_CHECKING:
    from runner.simulator._server import Simulator

_WIRE = GeminiWire()
_VERSION = r"{ver:v\d+(?:alpha|beta)\d*}"  # v1beta: never OpenAI's /v1
_OPERATION = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch"
_OUTPUT = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput"
_SLICE = 16  # lines answered between two returns to the event loop
_CHUNK = 1 << 16
_INTERNAL = 13  # google.rpc.Code INTERNAL: a line's server error
_INVALID = 3  # google.rpc.Code INVALID_ARGUMENT
_FILE_KEPT_S = 48 * 3600  # the Files API keeps a file 48 hours
_ENDED = ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED",
          "BATCH_STATE_EXPIRED")  # fmt: skip


@dataclass
class _File:
    name: str  # "files/…"
    path: Path
    display_name: str
    size: int = 0
    keys: list[str] | None = None  # the lines' keys, once read; None: not an input file
    invalid: str | None = None  # why it cannot be a batch's input
    created: int = 0  # unix seconds


@dataclass
class _Batch:
    name: str  # "batches/…"
    model: str
    display_name: str
    input: _File
    created_at: float
    fate: str  # "succeed", "fail" or "expire"
    state: str = "BATCH_STATE_PENDING"
    output: str | None = None  # the responses file's name
    succeeded: int = 0
    failed: int = 0
    error: Doc | None = None
    ending: asyncio.Task[None] | None = field(default=None, repr=False)
    updated_at: float | None = None  # its last change of state (None: none since created)
    ended_at: float | None = None  # both on the simulator's clock

    def move(self, state: str, at: float) -> None:
        """Go to ``state`` at ``at`` (the simulator's clock)."""
        self.state = state
        self.updated_at = at
        if state in _ENDED:
            self.ended_at = at


class GeminiBatchService:
    """Gemini's batch endpoints on the simulator's app: ``GeminiBatchService(sim).install(app)``
    before the simulator's catch-all POST route."""

    def __init__(self, simulator: Simulator) -> None:
        self.sim = simulator
        self._dir: Path | None = None
        self._files: dict[str, _File] = {}
        self._uploads: dict[str, tuple[str, int]] = {}  # upload id → display name, size
        self._batches: dict[str, _Batch] = {}
        self._created = 0

    def install(self, app: web.Application) -> None:
        add = app.router
        add.add_post(f"/{{pre:.*}}upload/{_VERSION}/files", self._upload)
        add.add_post("/{pre:.*}models/{model:[^/:]+}:batchGenerateContent", self._create)
        # The version in the path (/v1beta/batches): OpenAI's files and batches share the
        # rest of these paths, and the simulator serves both.
        add.add_post(f"/{{pre:.*}}{_VERSION}/batches/{{id:[^/:]+}}:cancel", self._cancel)
        add.add_get(f"/{{pre:.*}}{_VERSION}/batches/{{id:[^/:]+}}", self._get)
        add.add_get(f"/{{pre:.*}}{_VERSION}/batches", self._list)
        add.add_get(f"/{{pre:.*}}download/{_VERSION}/files/{{id:[^/:]+}}:download", self._download)
        # The SDK's files.download asks without the /download prefix the REST reference shows.
        add.add_get(f"/{{pre:.*}}{_VERSION}/files/{{id:[^/:]+}}:download", self._download)
        add.add_delete(f"/{{pre:.*}}{_VERSION}/files/{{id:[^/:]+}}", self._delete)
        add.add_get(f"/{{pre:.*}}{_VERSION}/files/{{id:[^/:]+}}", self._file)
        app.on_cleanup.append(self._close)

    async def _close(self, app: web.Application) -> None:
        for batch in self._batches.values():
            if batch.ending is not None:
                batch.ending.cancel()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # -- the gate every request passes -------------------------------------------------------

    def _refused(self, request: web.Request, *, keyless: bool = False) -> web.Response | None:
        """The answer to a request with a wrong key (unless ``keyless``) or over the rate
        limit, else None."""
        if not keyless and not self.sim._authorised(request, _WIRE):
            status, doc = _WIRE.bad_key(self.sim._bad_key_message(request))
            return self.sim._send(status, json.dumps(doc).encode(), {})
        verdict = self.sim._admit()
        if verdict is not None and not verdict.admitted:
            return self.sim._throttle(_WIRE, verdict)
        return None

    def _answer(self, doc: Doc, headers: dict[str, str] | None = None) -> web.Response:
        return self.sim._send(200, json.dumps(doc).encode(), headers or {})

    def _error(self, status: int, message: str) -> web.Response:
        return self.sim._send(status, json.dumps(_WIRE.error(status, "", message)).encode(), {})

    # -- files -------------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        """The start of an upload, or its bytes sent to the upload URL it handed out. That URL
        is the credential (its ``upload_id``), as Google's session URLs are: the SDK sends no
        key to it."""
        upload_id = request.query.get("upload_id")
        sender = upload_id is not None and upload_id in self._uploads
        if (refused := self._refused(request, keyless=sender)) is not None:
            return refused
        if upload_id is None:
            return await self._start(request)
        return await self._receive(request, upload_id)

    async def _start(self, request: web.Request) -> web.Response:
        headers = request.headers
        if headers.get("X-Goog-Upload-Protocol") != "resumable":
            return self._error(400, "only the resumable upload protocol is simulated")
        if headers.get("X-Goog-Upload-Command") != "start":
            return self._error(400, "a resumable upload begins with X-Goog-Upload-Command: start")
        try:
            size = int(headers.get("X-Goog-Upload-Header-Content-Length", "-1"))
        except ValueError:
            size = -1
        limit = self.sim.spec.batch.max_file_bytes
        if size > limit:
            return self._error(400, f"the file is {size} bytes; at most {limit} are accepted")
        try:
            meta = json.loads(await request.read() or b"{}")
            name = str(
                meta.get("file", {}).get(
                    "display_name", meta.get("file", {}).get("displayName", "")
                )
            )
        except (ValueError, AttributeError):
            return self._error(400, "the upload's metadata is not JSON")
        upload_id = uuid.uuid4().hex
        self._uploads[upload_id] = (name, size)
        url = (
            f"{request.url.origin()}{request.path}?upload_id={upload_id}&upload_protocol=resumable"
        )
        return self._answer({}, {"X-Goog-Upload-URL": url, "X-Goog-Upload-Status": "active"})

    async def _receive(self, request: web.Request, upload_id: str) -> web.Response:
        started = self._uploads.pop(upload_id, None)
        if started is None:
            return self._error(404, "no such upload")
        command = {c.strip() for c in request.headers.get("X-Goog-Upload-Command", "").split(",")}
        if (
            command != {"upload", "finalize"}
            or request.headers.get("X-Goog-Upload-Offset", "0") != "0"
        ):
            return self._error(
                400, "only single-request uploads (upload, finalize at 0) are simulated"
            )
        name = f"files/{uuid.uuid4().hex[:16]}"
        stored = _File(name, self._path(name), started[0], created=self.sim.unix_time())
        limit = self.sim.spec.batch.max_file_bytes
        with stored.path.open("wb") as out:
            async for chunk in request.content.iter_chunked(_CHUNK):
                stored.size += len(chunk)
                if stored.size > limit:
                    out.close()
                    stored.path.unlink(missing_ok=True)
                    return self._error(400, f"the file passed {limit} bytes")
                out.write(chunk)
        stored.keys, stored.invalid = await asyncio.to_thread(_read_input, stored.path)
        self._files[name] = stored
        doc = {"file": _file_doc(stored, request)}
        return self._answer(doc, {"X-Goog-Upload-Status": "final"})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._refused(request)) is not None:
            return refused
        stored = self._files.get(f"files/{request.match_info['id']}")
        if stored is None:
            return self._error(404, "no such file")
        self.sim.stats.statuses[200] += 1
        return web.FileResponse(stored.path, headers={"Content-Type": "application/jsonl"})

    async def _file(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        stored = self._files.get(f"files/{request.match_info['id']}")
        if stored is None:
            return self._error(404, "no such file")
        return self._answer(_file_doc(stored, request))

    async def _delete(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        stored = self._files.pop(f"files/{request.match_info['id']}", None)
        if stored is None:
            return self._error(404, "no such file")
        stored.path.unlink(missing_ok=True)
        return self._answer({})

    def _path(self, name: str) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="groundbench-sim-gemini-"))
        return self._dir / name.replace("/", "-")

    # -- batches -----------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        faults = self.sim.spec.batch
        if faults.quota_after_batches is not None and self._created >= faults.quota_after_batches:
            self.sim.stats.faults["batch-quota"] += 1
            return self.sim._quota(_WIRE)
        model = request.match_info["model"]
        if self.sim.spec.models is not None and model not in self.sim.spec.models:
            status, doc = _WIRE.unknown_model(model)
            return self.sim._send(status, json.dumps(doc).encode(), {})
        try:
            batch_doc = json.loads(await request.read())["batch"]
            display = _get(batch_doc, "displayName")
            file_name = _get(_get(batch_doc, "inputConfig"), "fileName")
        except (ValueError, KeyError, TypeError):
            return self._error(
                400, "the body needs batch.displayName and batch.inputConfig.fileName"
            )
        stored = self._files.get(str(file_name))
        if stored is None:
            return self._error(400, f"no such file: {file_name}")
        invalid = self._invalid(stored)
        if invalid is not None:
            return self._error(400, invalid)
        batch = self._new_batch(model, str(display), stored)
        return self._answer(_operation(batch, self.sim.unix_time))

    def _invalid(self, stored: _File) -> str | None:
        if stored.invalid is not None:
            return stored.invalid
        assert stored.keys is not None
        limit = self.sim.spec.batch.max_requests
        if len(stored.keys) > limit:
            return f"the file holds {len(stored.keys)} requests; at most {limit} are accepted"
        return None

    def _new_batch(self, model: str, display: str, stored: _File) -> _Batch:
        faults = self.sim.spec.batch
        order = self._created
        self._created += 1
        fate = "fail" if order < faults.fail_first else "succeed"
        if fate == "succeed" and order < faults.fail_first + faults.expire_first:
            fate = "expire"
        name = f"batches/{uuid.uuid4().hex[:16]}"
        batch = _Batch(name, model, display, stored, self.sim.clock(), fate)
        self._batches[name] = batch
        stats = self.sim.stats
        stats.batches_created += 1
        stats.submitted.update(stored.keys or [])
        return batch

    async def _get(self, request: web.Request) -> web.Response:
        batch = await self._named(request)
        if isinstance(batch, web.Response):
            return batch
        return self._answer(_operation(batch, self.sim.unix_time))

    async def _named(self, request: web.Request) -> _Batch | web.Response:
        """The batch the path names, brought up to date; else the error to answer."""
        if (refused := self._refused(request)) is not None:
            return refused
        batch = self._batches.get(f"batches/{request.match_info['id']}")
        if batch is None:
            return self._error(404, "no such batch")
        await self._advance(batch)
        return batch

    async def _list(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        try:
            size = max(1, min(1000, int(request.query.get("pageSize", "50"))))
            start = int(request.query.get("pageToken", "0") or 0)
        except ValueError:
            return self._error(400, "pageSize and pageToken must be numbers")
        newest = list(reversed(self._batches.values()))
        page = newest[start : start + size]
        for batch in page:
            await self._advance(batch)
        doc: Doc = {"operations": [_operation(b, self.sim.unix_time) for b in page]}
        if start + size < len(newest):
            doc["nextPageToken"] = str(start + size)
        return self._answer(doc)

    async def _cancel(self, request: web.Request) -> web.Response:
        batch = await self._named(request)
        if isinstance(batch, web.Response):
            return batch
        if batch.state in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
            batch.move("BATCH_STATE_CANCELLED", self.sim.clock())
        return self._answer({})

    # -- a batch's life ----------------------------------------------------------------------

    async def _advance(self, batch: _Batch) -> None:
        """Bring ``batch`` to its state now: running after half its turnaround, ended after
        it (its lines answered then, once, whoever asks first)."""
        if batch.state not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
            return
        elapsed = self.sim.clock() - batch.created_at
        turnaround = self.sim.spec.batch.turnaround_s
        if elapsed >= turnaround / 2 and batch.state == "BATCH_STATE_PENDING":
            # It began running then, though first seen running later (or ended).
            batch.move("BATCH_STATE_RUNNING", batch.created_at + turnaround / 2)
        if elapsed < turnaround:
            return
        if batch.ending is None:
            batch.ending = asyncio.ensure_future(self._end(batch))
        await asyncio.shield(batch.ending)

    async def _end(self, batch: _Batch) -> None:
        if batch.fate == "fail":
            batch.error = {"code": _INVALID, "message": "The batch failed: simulated failure."}
            batch.move("BATCH_STATE_FAILED", self.sim.clock())
            return
        keys = batch.input.keys or []
        answered = len(keys)
        if batch.fate == "expire":
            answered = math.floor(self.sim.spec.batch.expired_share * len(keys))
        output = f"files/batch-{batch.name.removeprefix('batches/')}"
        path = self._path(output)
        with path.open("wb") as out:
            for n, (key, request) in enumerate(_requests(batch.input.path)):
                if n >= answered:
                    break
                out.write(self._result_line(batch, key, request))
                if n % _SLICE == _SLICE - 1:
                    await asyncio.sleep(0)
        self._files[output] = _File(
            output,
            path,
            f"{batch.display_name} responses",
            path.stat().st_size,
            created=self.sim.unix_time(),
        )
        batch.output = output
        ended = "BATCH_STATE_EXPIRED" if batch.fate == "expire" else "BATCH_STATE_SUCCEEDED"
        batch.move(ended, self.sim.clock())

    def _result_line(self, batch: _Batch, key: str, request: bytes) -> bytes:
        """One line of the responses file: the online call's answer for ``key``, a server
        error, or a line cut short, as the faults draw for this key."""
        faults = self.sim.spec.batch
        luck = random.Random(f"{self.sim.spec.seed}:gemini-batch-line:{key}")
        if luck.random() < faults.line_error:
            self.sim.stats.faults["batch-line-error"] += 1
            batch.failed += 1
            error = {"code": _INTERNAL, "message": "Internal error encountered.", "details": []}
            line = json.dumps({"key": key, "error": error}).encode()
        else:
            path = f"/models/{batch.model}:generateContent"
            status, doc = self.sim.answer_line(path, request, key)
            if status == 200:
                batch.succeeded += 1
                line = json.dumps({"key": key, "response": doc}).encode()
            else:
                batch.failed += 1
                line = json.dumps({"key": key, "error": _status(status, doc)}).encode()
        if luck.random() < faults.malformed_line:
            self.sim.stats.faults["batch-malformed-line"] += 1
            line = line[: len(line) // 2]
        return line + b"\n"


# -- the documents ---------------------------------------------------------------------------


def _operation(batch: _Batch, unix: Callable[[float], int]) -> Doc:
    """The batch as ``GET batches/<id>`` answers it: a long-running Operation whose metadata
    is the GenerateContentBatch (``unix``: the simulator's clock reading as unix seconds)."""
    keys = batch.input.keys or []
    ended = batch.state not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING")
    updated = batch.updated_at if batch.updated_at is not None else batch.created_at
    meta: Doc = {
        "@type": _OPERATION,
        "model": f"models/{batch.model}",
        "displayName": batch.display_name,
        "inputConfig": {"fileName": batch.input.name},
        "createTime": _rfc3339(unix(batch.created_at)),
        "updateTime": _rfc3339(unix(updated)),
        "state": batch.state,
        "batchStats": {
            "requestCount": str(len(keys)),
            "successfulRequestCount": str(batch.succeeded),
            "failedRequestCount": str(batch.failed),
            "pendingRequestCount": str(0 if ended else len(keys)),
        },
    }
    if batch.ended_at is not None:
        meta["endTime"] = _rfc3339(unix(batch.ended_at))
    doc: Doc = {"name": batch.name, "metadata": meta, "done": ended}
    if batch.output is not None:
        meta["output"] = {"responsesFile": batch.output}
        doc["response"] = {"@type": _OUTPUT, "responsesFile": batch.output}
    if batch.error is not None:
        doc["error"] = batch.error
    return doc


def _file_doc(stored: _File, request: web.Request) -> Doc:
    """The documented File resource (its ``uri`` on this server)."""
    created = _rfc3339(stored.created)
    return {
        "name": stored.name,
        "displayName": stored.display_name,
        "mimeType": "application/jsonl",
        "sizeBytes": str(stored.size),
        "createTime": created,
        "updateTime": created,
        "expirationTime": _rfc3339(stored.created + _FILE_KEPT_S),
        "uri": f"{request.url.origin()}/{request.match_info['ver']}/{stored.name}",
        "state": "ACTIVE",
        "source": "UPLOADED",
    }


def _rfc3339(unix: int) -> str:
    """Unix seconds as the RFC 3339 timestamp the API writes (UTC, "Z").

    >>> _rfc3339(0)
    '1970-01-01T00:00:00Z'
    """
    return datetime.fromtimestamp(unix, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(http: int, doc: Doc) -> Doc:
    """An online error body (``{"error": {...}}``) as a result line's google.rpc.Status."""
    error = doc.get("error", {}) if isinstance(doc.get("error"), dict) else {}
    code = {400: _INVALID, 404: 5, 429: 8, 503: 14}.get(http, _INTERNAL)
    return {
        "code": code,
        "message": str(error.get("message", "")),
        "details": error.get("details", []),
    }


def _read_input(path: Path) -> tuple[list[str], str | None]:
    """The keys of an input file's lines, and why it cannot be a batch's input (None: it can).
    Read a line at a time (run in a thread: the file may be large)."""
    keys: list[str] = []
    seen: set[str] = set()
    try:
        for n, (key, _) in enumerate(_requests(path), 1):
            if key in seen:
                return keys, f"line {n}: the key {key!r} is used twice"
            seen.add(key)
            keys.append(key)
    except ValueError as exc:
        return keys, str(exc)
    return keys, None


def _requests(path: Path) -> Iterator[tuple[str, bytes]]:
    """Each line's key and request (as JSON bytes), a line at a time.

    Raises
    ------
    ValueError
        A line is not JSON, or has no string key or no request object.
    """
    with path.open("rb") as lines:
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                raise ValueError(f"line {n} is not JSON") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("key"), str):
                raise ValueError(f"line {n} has no key")
            if not isinstance(doc.get("request"), dict):
                raise ValueError(f"line {n} has no request")
            yield doc["key"], json.dumps(doc["request"]).encode()


def _get(doc: Any, name: str) -> Any:
    """``doc[name]`` in camelCase or snake_case (proto JSON accepts both)."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return doc[name] if name in doc else doc[snake]


__all__ = ["GeminiBatchService"]
