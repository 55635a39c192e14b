"""The simulator's OpenAI batch endpoints (which DashScope copies): files and batches.

Whatever the path prefix, as for ``…/chat/completions``: ``POST …/files`` (multipart, kept on
disk), ``GET …/files/{id}`` (the file object), ``GET …/files/{id}/content``,
``DELETE …/files/{id}``, ``POST …/batches``, ``GET …/batches/{id}``, ``GET …/batches``
(newest first, ``limit``/``after``/``has_more``), ``POST …/batches/{id}/cancel``. Every
request is authenticated (the configured key, 401 ``invalid_api_key`` otherwise) and
rate-limited as an online call is.

A batch's input is validated when the batch is created, not at upload: OpenAI's batch guide
puts validation in the batch's life ("validating: the input file is being validated before the
batch can begin"; "failed: the input file has failed the validation process"), and reports a
repeated ``custom_id`` per line in the batch's ``errors``. A line that is not JSON, lacks a
``custom_id``, repeats one, is not ``POST /v1/chat/completions`` or whose body has no ``model``
or no ``messages`` fails the batch, each such line in ``errors.data`` with its line number and
code, as do too many lines. Timestamps are unix seconds (:meth:`Simulator.unix_time`), each
``…_at`` set when the batch reaches its state, as the batch object documents them.

Time runs on the simulator's clock: validating for the first half of
:attr:`BatchFaults.turnaround_s`, in progress for the second, then ended on the first request
that looks at it. Its lines are answered then, each as the online
endpoint answers the same call (:meth:`Simulator.answer_line`, its ``custom_id`` as the call
id), in slices so the server keeps serving. Faults (:class:`BatchFaults`) are drawn per line
from the seed, the ``custom_id`` and how many times that id was submitted before.

A cancelled batch answers nothing: every line is written ``batch_cancelled``. An expiring
batch answers the first ``expired_share`` of its lines and writes the rest ``batch_expired``.
When both ``fail_first`` and ``expire_first`` name a batch, it fails.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from aiohttp import BodyPartReader, web

from runner.simulator._wires import Doc, OpenAIWire

if TYPE_CHECKING:
    from runner.simulator._server import Simulator

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ENDPOINTS = frozenset({"/v1/chat/completions"})  # what a batch may run
_PREFIX = r"{prefix:(?:.*/)?}"  # any path prefix, as the online endpoint takes any
_SLICE = 200  # lines answered between two yields to the event loop
_CHUNK = 1 << 16
_EXPIRED = "This request could not be executed before the completion window expired."
_CANCELLED = "This request was not executed because the batch was cancelled."
_WINDOW_S = 24 * 3600.0  # the completion window, "24h"
# The states the batch object stamps with a ``<state>_at`` (created_at is always there).
_STAMPED = (
    "in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled",
)  # fmt: skip


@dataclass
class _File:
    id: str
    path: Path
    filename: str
    purpose: str
    bytes: int
    created_at: int

    def doc(self) -> Doc:
        """The documented file object (``expires_at``: these files do not expire)."""
        return {
            "id": self.id, "object": "file", "bytes": self.bytes, "created_at": self.created_at,
            "expires_at": None, "filename": self.filename, "purpose": self.purpose,
            "status": "processed", "status_details": None,
        }  # fmt: skip


@dataclass(frozen=True)
class _Line:
    """A valid input line, by where it is: its body is read again from disk to answer it."""

    custom_id: str
    url: str
    offset: int
    size: int


@dataclass
class _Batch:
    id: str
    serial: int  # 0 for the first batch created
    input_file: str
    input_path: Path
    created_at: float  # on the simulator's clock
    turnaround_s: float
    metadata: dict[str, str]
    lines: list[_Line]
    invalid: list[Doc]  # errors.data: why the file fails validation (empty: it is valid)
    unix: Callable[[float], int]  # the simulator's clock reading as unix seconds
    status: str = "validating"
    # When it reached each state, on the simulator's clock (None: it has not).
    reached: dict[str, float] = field(default_factory=dict)
    output_file: str | None = None
    error_file: str | None = None
    completed: int = 0
    failed: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def ended(self) -> bool:
        return self.status in ("completed", "failed", "expired", "cancelled")

    def reach(self, status: str, at: float) -> None:
        """Move to ``status`` at ``at`` (the simulator's clock), its ``…_at`` set then."""
        self.status = status
        self.reached.setdefault(status, at)

    def doc(self) -> Doc:
        errors = {"object": "list", "data": self.invalid} if self.invalid else None
        stamps = {
            f"{status}_at": self.unix(self.reached[status]) if status in self.reached else None
            for status in _STAMPED
        }
        return {
            "id": self.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "errors": errors, "input_file_id": self.input_file, "completion_window": "24h",
            "status": self.status, "output_file_id": self.output_file,
            "error_file_id": self.error_file, "created_at": self.unix(self.created_at),
            "expires_at": self.unix(self.created_at + _WINDOW_S), **stamps,
            "request_counts": {
                "total": len(self.lines), "completed": self.completed, "failed": self.failed,
            },
            "metadata": self.metadata or None,
        }  # fmt: skip


class OpenAIBatchService:
    """The files and batches of one simulator, and the routes that serve them."""

    def __init__(self, simulator: Simulator) -> None:
        self.sim = simulator
        self.wire = OpenAIWire()
        self._dir: Path | None = None
        self._files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}
        self._serial = 0
        self._uploads = 0  # files uploaded ever: an id is never used twice, as OpenAI's are not

    def add_routes(self, app: web.Application) -> None:
        """Serve the batch endpoints on ``app`` (before its catch-all POST route); the files
        kept on disk go when the app is cleaned up."""
        guarded = self._guarded
        app.router.add_post(f"/{_PREFIX}files", guarded(self._upload))
        app.router.add_get(f"/{_PREFIX}files/{{file_id}}/content", guarded(self._content))
        app.router.add_get(f"/{_PREFIX}files/{{file_id}}", guarded(self._retrieve))
        app.router.add_delete(f"/{_PREFIX}files/{{file_id}}", guarded(self._delete))
        app.router.add_post(f"/{_PREFIX}batches", guarded(self._create))
        app.router.add_get(f"/{_PREFIX}batches", guarded(self._list))
        app.router.add_get(f"/{_PREFIX}batches/{{batch_id:batch_[^/]+}}", guarded(self._get))
        cancel = f"/{_PREFIX}batches/{{batch_id:batch_[^/]+}}/cancel"
        app.router.add_post(cancel, guarded(self._cancel))
        app.on_cleanup.append(self._cleanup)

    async def _cleanup(self, app: web.Application) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
        self._files.clear()
        self._batches.clear()

    # -- what every endpoint does first ---------------------------------------------------

    def _guarded(self, handler: Handler) -> Handler:
        """``handler`` behind the online endpoints' authentication and rate limit."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            sim = self.sim
            if not sim._authorised(request, self.wire):
                status, doc = self.wire.bad_key(sim._bad_key_message(request))
                return sim._send(status, json.dumps(doc).encode(), {})
            verdict = sim._admit()
            if verdict is not None and not verdict.admitted:
                return sim._throttle(self.wire, verdict)
            return await handler(request)

        return guarded

    def _error(self, status: int, code: str, message: str) -> web.Response:
        return self.sim._error(self.wire, status, code, message, {})

    def _json(self, doc: Doc) -> web.Response:
        return self.sim._send(200, json.dumps(doc).encode(), {})

    # -- files ----------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        """Store the multipart ``file`` on disk as it arrives; 400 past the size limit."""
        if not request.content_type.startswith("multipart/"):
            return self._error(400, "invalid_request_error", "expected multipart/form-data")
        reader = await request.multipart()
        purpose, stored = None, None
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "purpose":
                purpose = (await part.text()).strip()
            elif part.name == "file":
                stored = await self._store(part)
                if stored is None:
                    limit = self.sim.spec.batch.max_file_bytes
                    message = f"File is too large: at most {limit} bytes"
                    return self._error(400, "invalid_request_error", message)
        if stored is None or purpose is None:
            return self._error(400, "invalid_request_error", "'file' and 'purpose' are required")
        if purpose != "batch":
            stored.path.unlink(missing_ok=True)
            return self._error(400, "invalid_request_error", f"unsupported purpose {purpose!r}")
        self._files[stored.id] = stored
        return self._json(stored.doc())

    async def _store(self, part: BodyPartReader) -> _File | None:
        """The part written to a new file, chunk by chunk; None (and nothing kept) when it
        runs past the size limit."""
        limit = self.sim.spec.batch.max_file_bytes
        self._uploads += 1
        # Numbered by uploads, not by the files held: a file deleted must not lend its id to
        # the next upload, or a client finding a batch by its input file finds another's.
        file_id = f"file-sim{self._uploads:06d}"
        path = self._directory() / file_id
        size = 0
        with path.open("wb") as out:
            while chunk := await part.read_chunk(_CHUNK):
                size += len(chunk)
                if size > limit:
                    break
                out.write(chunk)
        if size > limit:
            path.unlink(missing_ok=True)
            return None
        filename = part.filename or "input.jsonl"
        return _File(file_id, path, filename, "batch", size, self.sim.unix_time())

    def _directory(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="groundbench-sim-batches-"))
        return self._dir

    async def _retrieve(self, request: web.Request) -> web.StreamResponse:
        stored = self._files.get(request.match_info["file_id"])
        if stored is None:
            return self._error(404, "invalid_request_error", "No such File object")
        return self._json(stored.doc())

    async def _content(self, request: web.Request) -> web.StreamResponse:
        stored = self._files.get(request.match_info["file_id"])
        if stored is None:
            return self._error(404, "invalid_request_error", "No such File object")
        self.sim.stats.statuses[200] += 1
        return web.FileResponse(stored.path, headers={"Content-Type": "application/jsonl"})

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        stored = self._files.pop(request.match_info["file_id"], None)
        if stored is None:
            return self._error(404, "invalid_request_error", "No such File object")
        stored.path.unlink(missing_ok=True)
        return self._json({"id": stored.id, "object": "file", "deleted": True})

    def _new_file(self, stem: str, lines: list[bytes]) -> str | None:
        """A results file of ``lines`` (None when there are none, as OpenAI leaves it)."""
        if not lines:
            return None
        file_id = f"file-{stem}"
        path = self._directory() / file_id
        with path.open("wb") as out:
            for line in lines:
                out.write(line + b"\n")
        size = path.stat().st_size
        self._files[file_id] = _File(
            file_id, path, f"{stem}.jsonl", "batch_output", size, self.sim.unix_time()
        )
        return file_id

    # -- batches --------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.StreamResponse:
        try:
            doc = json.loads(await request.read())
        except ValueError:
            return self._error(400, "invalid_request_error", "body is not JSON")
        if not isinstance(doc, dict):
            return self._error(400, "invalid_request_error", "body is not a JSON object")
        refused = self._refusal(doc)
        if refused is not None:
            return refused
        faults = self.sim.spec.batch
        if faults.quota_after_batches is not None and self._serial >= faults.quota_after_batches:
            self.sim.stats.faults["batch-quota"] += 1
            return self.sim._quota(self.wire)
        stored = self._files[doc["input_file_id"]]
        lines, invalid = await _validated(stored.path, faults.max_requests)
        batch = _Batch(
            id=f"batch_sim{self._serial:06d}",
            serial=self._serial,
            input_file=stored.id,
            input_path=stored.path,
            created_at=self.sim.clock(),
            turnaround_s=faults.turnaround_s,
            metadata=doc.get("metadata") or {},
            lines=[] if invalid else lines,
            invalid=invalid,
            unix=self.sim.unix_time,
        )
        self._serial += 1
        self._batches[batch.id] = batch
        self.sim.stats.batches_created += 1
        for line in batch.lines:
            self.sim.stats.submitted[line.custom_id] += 1
        return self._json(batch.doc())

    def _refusal(self, doc: dict[str, Any]) -> web.Response | None:
        """The 400 or 404 OpenAI answers a batch it will not create; None: it will."""
        if doc.get("endpoint") not in ENDPOINTS:
            return self._error(400, "invalid_request_error", "unsupported endpoint")
        if doc.get("completion_window") != "24h":
            return self._error(400, "invalid_request_error", "completion_window must be 24h")
        metadata = doc.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= 16
            and all(isinstance(v, str) and len(k) <= 64 and len(v) <= 512
                    for k, v in metadata.items())
        ):  # fmt: skip
            return self._error(400, "invalid_request_error", "invalid metadata")
        if doc.get("input_file_id") not in self._files:
            return self._error(404, "invalid_request_error", "No such File object")
        return None

    async def _get(self, request: web.Request) -> web.StreamResponse:
        batch = self._batches.get(request.match_info["batch_id"])
        if batch is None:
            return self._error(404, "invalid_request_error", "No such Batch object")
        await self._advance(batch)
        return self._json(batch.doc())

    async def _list(self, request: web.Request) -> web.StreamResponse:
        try:
            limit = min(100, max(1, int(request.query.get("limit", "20"))))
        except ValueError:
            return self._error(400, "invalid_request_error", "limit must be an integer")
        newest_first = sorted(self._batches.values(), key=lambda b: b.serial, reverse=True)
        after = request.query.get("after")
        if after is not None:
            before = [b for b in newest_first if b.id == after]
            newest_first = [b for b in newest_first if before and b.serial < before[0].serial]
        page = newest_first[:limit]
        for batch in page:
            await self._advance(batch)
        data = [b.doc() for b in page]
        return self._json({
            "object": "list", "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
            "has_more": len(newest_first) > limit,
        })  # fmt: skip

    async def _cancel(self, request: web.Request) -> web.StreamResponse:
        batch = self._batches.get(request.match_info["batch_id"])
        if batch is None:
            return self._error(404, "invalid_request_error", "No such Batch object")
        await self._advance(batch)
        if not batch.ended:
            batch.reach("cancelling", self.sim.clock())  # the next look finds it cancelled
        return self._json(batch.doc())

    # -- a batch's life -------------------------------------------------------------------

    async def _advance(self, batch: _Batch) -> None:
        """Bring ``batch`` to its state now; ending it answers its lines."""
        async with batch.lock:
            if batch.ended:
                return
            now = self.sim.clock()
            if batch.invalid:
                batch.reach("failed", now)
            elif batch.status == "cancelling":
                await self._end(batch, "cancelled", answered=0)
            else:
                elapsed = now - batch.created_at
                if elapsed >= batch.turnaround_s / 2:
                    # Stamped when it began, though first seen running later (or ended).
                    batch.reach("in_progress", batch.created_at + batch.turnaround_s / 2)
                if elapsed >= batch.turnaround_s:
                    await self._finish(batch)

    async def _finish(self, batch: _Batch) -> None:
        faults = self.sim.spec.batch
        if batch.serial < faults.fail_first:
            self.sim.stats.faults["batch-failed"] += 1
            batch.invalid = [_error("server_error", "The batch failed.")]
            batch.reach("failed", self.sim.clock())
        elif batch.serial < faults.expire_first:
            self.sim.stats.faults["batch-expired"] += 1
            await self._end(batch, "expired", math.floor(len(batch.lines) * faults.expired_share))
        else:
            await self._end(batch, "completed", len(batch.lines))

    async def _end(self, batch: _Batch, status: str, answered: int) -> None:
        """Answer the first ``answered`` lines, write the others as never run, and end."""
        output: list[bytes] = []
        errors: list[bytes] = []
        never = "batch_cancelled" if status == "cancelled" else "batch_expired"
        with batch.input_path.open("rb") as inputs:
            for n, line in enumerate(batch.lines):
                if n >= answered:
                    errors.append(_never_ran(batch, n, line, never))
                    continue
                ok, written = self._answered(batch, n, line, _body(inputs, line))
                (output if ok else errors).append(written)
                batch.completed += ok
                batch.failed += not ok
                if n % _SLICE == _SLICE - 1:
                    await asyncio.sleep(0)  # let the server answer others meanwhile
        batch.output_file = self._new_file(f"{batch.id}-output", output)
        batch.error_file = self._new_file(f"{batch.id}-errors", errors)
        now = self.sim.clock()
        if status == "completed":
            batch.reach("finalizing", now)  # results written: finalizing, then completed
        batch.reach(status, now)

    def _answered(self, batch: _Batch, n: int, line: _Line, request: bytes) -> tuple[bool, bytes]:
        """Line ``n`` (its request body ``request``) answered: whether it succeeded, and its
        result line."""
        faults = self.sim.spec.batch
        seed = self.sim.spec.seed
        times = self.sim.stats.submitted[line.custom_id]
        draw = random.Random(f"{seed}:batch:{line.custom_id}:{times}").random()
        request_id = f"req_sim_{batch.serial}_{n}"
        if draw < faults.line_error:
            self.sim.stats.faults["batch-line-error"] += 1
            body = self.wire.error(500, "server_error", "The server had an error.")
            return False, _result(batch, n, line, {"status_code": 500, "request_id": request_id,
                                                   "body": body})  # fmt: skip
        status, doc = self.sim.answer_line(line.url, request, line.custom_id)
        response = {"status_code": status, "request_id": request_id, "body": doc}
        written = _result(batch, n, line, response)
        if draw < faults.line_error + faults.malformed_line:
            self.sim.stats.faults["batch-malformed-line"] += 1
            written = written[: len(written) // 2]
        return status == 200, written


async def _validated(path: Path, max_requests: int) -> tuple[list[_Line], list[Doc]]:
    """The file's lines, and why it fails validation (empty: it passes), read line by line
    with a yield to the event loop every :data:`_SLICE` lines."""
    lines: list[_Line] = []
    invalid: list[Doc] = []
    seen: set[str] = set()
    for n, (offset, raw) in enumerate(_read_lines(path), start=1):
        if n % _SLICE == 0:
            await asyncio.sleep(0)
        if not raw.strip():
            continue
        problem, line = _line(raw, offset)
        if line is not None and line.custom_id in seen:
            problem = _Problem(
                "duplicate_custom_id", f"duplicate custom_id {line.custom_id!r}", "custom_id"
            )
        if problem is not None:
            invalid.append(_error(problem.code, problem.message, line=n, param=problem.param))
            if len(invalid) >= 10:
                break
            continue
        assert line is not None
        seen.add(line.custom_id)
        lines.append(line)
    if len(lines) > max_requests:
        message = f"The batch input file has {len(lines)} requests; at most {max_requests}."
        invalid.append(_error("too_many_requests", message))
    if not lines and not invalid:
        invalid.append(_error("empty_file", "The input file is empty."))
    return lines, invalid


def _read_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Each line of the file at ``path``, and where it starts."""
    offset = 0
    with path.open("rb") as f:
        for raw in f:
            yield offset, raw
            offset += len(raw)


def _body(inputs: BinaryIO, line: _Line) -> bytes:
    """The request body of ``line``, read again from its open input file."""
    inputs.seek(line.offset)
    doc = json.loads(inputs.read(line.size))
    return json.dumps(doc["body"], separators=(",", ":")).encode()


@dataclass(frozen=True)
class _Problem:
    """Why an input line is invalid: an ``errors.data`` entry's code, message and param."""

    code: str
    message: str
    param: str | None = None


def _error(code: str, message: str, *, line: int | None = None, param: str | None = None) -> Doc:
    """An entry of the batch's ``errors.data`` (the documented BatchError)."""
    return {"code": code, "message": message, "param": param, "line": line}


def _line(raw: bytes, offset: int) -> tuple[_Problem | None, _Line | None]:
    """One input line read: why it is invalid, or the line. The line is the documented
    request input object (``custom_id``, ``method`` POST, ``url``, ``body``), its body a chat
    completion request, which needs ``model`` and a non-empty ``messages``."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return _Problem("invalid_json_line", "line is not valid JSON"), None
    if not isinstance(doc, dict):
        return _Problem("invalid_json_line", "line is not a JSON object"), None
    custom_id, method, url, body = (doc.get(k) for k in ("custom_id", "method", "url", "body"))
    if not isinstance(custom_id, str) or not custom_id:
        return _Problem("missing_required_parameter", "missing custom_id", "custom_id"), None
    if method != "POST":
        return _Problem("invalid_method", "method must be POST", "method"), None
    if url not in ENDPOINTS:
        return _Problem("invalid_url", f"url must be one of {sorted(ENDPOINTS)}", "url"), None
    if not isinstance(body, dict):
        return _Problem("missing_required_parameter", "missing body", "body"), None
    if not isinstance(body.get("model"), str) or not body["model"]:
        return _Problem("missing_required_parameter", "body has no model", "body.model"), None
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        message = "body has no messages"
        return _Problem("missing_required_parameter", message, "body.messages"), None
    return None, _Line(custom_id, url, offset, len(raw))


def _result(batch: _Batch, n: int, line: _Line, response: Doc) -> bytes:
    doc = {
        "id": f"batch_req_{batch.serial}_{n}", "custom_id": line.custom_id,
        "response": response, "error": None,
    }  # fmt: skip
    return json.dumps(doc).encode()


def _never_ran(batch: _Batch, n: int, line: _Line, code: str) -> bytes:
    message = _CANCELLED if code == "batch_cancelled" else _EXPIRED
    doc = {
        "id": f"batch_req_{batch.serial}_{n}", "custom_id": line.custom_id,
        "response": None, "error": {"code": code, "message": message},
    }  # fmt: skip
    return json.dumps(doc).encode()
