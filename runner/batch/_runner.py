"""One backend's calls as batches: split, record, upload, create, poll, read, until none is left.

:class:`BatchRunner` is what a batch-mode backend's actor runs, and is tested without Ray. Its
one rule: **each step is recorded in the store before the next is taken** (see
:mod:`runner.store._batches`), so a driver killed anywhere finds the batch again and collects
it, and never sends its keys a second time:

1. the pending requests (less those an open batch holds) are built and written to JSONL files
   on disk, under the provider's limits, one model per file and each line id once per file;
2. a file's batch is recorded with its keys (``preparing``), the file uploaded (``uploaded``),
   the batch created with groundbench's tag (``submitted``);
3. open batches are polled, backing off while nothing changes; an ended batch's results are
   read line by line into ``responses`` as an online answer would be (``read``);
4. an unparseable answer's next attempt, and the lines a batch never ran, go in later batches.

A create that fails without a clear refusal may still have made the batch: the runner looks
for its tag before it gives the keys up. Quota on the batch endpoints stops submitting (the
open batches are still collected); a refused key or model stops the backend; 429s and 5xx are
retried with the online path's backoff, honouring the server's retry-after.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from conditions import Builder, Configuration, Request, RequestKey
from runner.backends import (
    AttemptRecord,
    CallError,
    Exchange,
    Fatal,
    QuotaExhausted,
    Reply,
    Sender,
    answer_record,
    attempts_allowed,
    call_id,
    error_record,
    parses,
)
from runner.batch._api import BatchApi, RemoteBatch, ResultLine
from runner.store import (
    BatchKey,
    BatchProblem,
    BatchRecord,
    Pending,
    ResponseRow,
    response_row,
)

_T = TypeVar("_T")
# Result rows stored per write: a row is one answer (a few KB), so this bounds the memory that
# reading a batch of 50,000 takes.
WRITE_ROWS = 256
YIELD_EVERY = 32  # result lines read between turns the actor's other calls get
MAX_BACKOFF_S = 60.0


class BatchSettings(BaseModel):
    """A batch-mode backend's settings (the experiment's ``batch = {…}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    poll_s: PositiveFloat = 30.0  # the first wait between polls of an open batch
    max_poll_s: PositiveFloat = 600.0  # the longest, reached while nothing changes
    max_open: PositiveInt = 50  # batches open at once (a provider limits what is enqueued)
    max_requests: PositiveInt | None = None  # lines per batch (default: the provider's limit)
    max_bytes: PositiveInt | None = None  # bytes per input file (default: the provider's)
    resubmits: int = Field(default=2, ge=0)  # times one attempt may go again in one run
    # (its batch expired, failed or never ran it, or its line met a transient error)


class Ledger(Protocol):
    """The store, as a batch runner asks it (the store actor, or a store in this process)."""

    async def pending(self, configurations: Sequence[str]) -> list[Pending]: ...

    async def open_batches(self, backend: str) -> list[BatchRecord]: ...

    async def batch_keys(self, batch: str) -> list[BatchKey]: ...

    async def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None: ...

    async def update_batch(self, batch: str, changes: dict[str, object]) -> BatchRecord: ...

    async def write_responses(self, rows: list[ResponseRow]) -> object: ...

    async def record_problems(self, problems: list[BatchProblem]) -> object: ...


MakeApi = Callable[[str, str], BatchApi]  # the batch API of (model, base URL), on one session
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Where:
    """Where a batch-mode backend sends: for the ledger's records (never the key itself)."""

    backend: str
    provider: str
    base_url: str
    api_key_env: str | None
    simulated: bool = False  # the run's own simulator, which ends with the run


@dataclass
class BatchOutcome:
    """What a batch runner did this run."""

    created: int = 0  # batches created at the provider
    read: int = 0  # batches whose results were stored
    attempts: int = 0  # records stored: answers and errors
    finished: int = 0  # requests whose attempts ended (an answer parsed, the last answered,
    # or an error ended them), as an online worker counts them
    answered: int = 0
    errored: int = 0
    unrun: int = 0  # lines a batch never ran (expired, cancelled, failed): pending again
    problems: int = 0  # result lines that could not be read
    input_tokens: int = 0
    output_tokens: int = 0
    quota: str | None = None  # the quota error that stopped submitting, if one did
    refused: str | None = None  # the refusal that stopped the backend, if one did
    not_made: str | None = None  # a file or batch the provider refused, which stopped submitting


@dataclass(frozen=True)
class OpenBatch:
    """An open batch as the monitor shows it."""

    id: str
    state: str
    requests: int
    succeeded: int | None
    failed: int | None
    age_s: float


@dataclass
class _Open:
    record: BatchRecord
    api: BatchApi
    opened: float  # the runner's clock when it was submitted, or adopted
    remote: RemoteBatch | None = None


@dataclass
class _File:
    path: Path
    keys: list[BatchKey] = field(default_factory=list)
    size: int = 0


class BatchRunner:
    """The calls of one backend's configurations, as batches (see the module docstring)."""

    def __init__(
        self,
        where: Where,
        configurations: Sequence[Configuration],
        builder: Builder,
        ledger: Ledger,
        make_api: MakeApi,
        spool: Path,
        settings: BatchSettings | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.where = where
        self.configurations = {c.name: c for c in configurations}
        self.settings = settings or BatchSettings()
        self._builder = builder
        self._ledger = ledger
        self._make_api = make_api
        self._apis: dict[tuple[str, str], BatchApi] = {}
        self._spool = spool
        self._sleep = sleep
        self._clock = clock
        transport = configurations[0].transport
        self._backoff_s = transport.retry_backoff_s
        self._tries = transport.max_transport_retries + 1
        self._open: dict[str, _Open] = {}
        self._sent: Counter[tuple[str, str, int, str, int]] = Counter()  # attempts, this run
        self._held_back: set[tuple[str, str, int, str, int]] = set()  # not again this run
        self._stop: CallError | None = None  # what stopped submitting
        self._halted = False  # a terminal error met while polling: nothing more can be done
        self._failed_last = False  # the batch that ended last had failed
        self.outcome = BatchOutcome()

    # -- the run -----------------------------------------------------------------------------

    async def run(self) -> BatchOutcome:
        """Collect the batches a killed run left open, then send every pending request in
        batches and collect them, until none is pending and none is open.

        One file is made at a time, and the open batches are polled between files: a batch
        made early is read as soon as it ends, however long the others take to upload.
        """
        await self._resume()
        wait = self.settings.poll_s
        while not self._halted:
            made = self._stop is None and await self._submit_one()
            if not self._open:
                if made:
                    continue
                break
            ended = await self._poll_once()
            for tag in ended if not self._halted else []:
                await self._collect(tag)
            if made or ended:
                wait = self.settings.poll_s
                continue
            await self._sleep(wait)  # nothing changed: wait longer each time
            wait = min(self.settings.max_poll_s, wait * 1.5)
        return self.outcome

    def open_batches(self) -> list[OpenBatch]:
        """The batches open now, for the monitor."""
        now = self._clock()
        return [
            OpenBatch(
                o.record.id,
                o.remote.state if o.remote is not None else o.record.phase,
                o.record.requests,
                o.remote.succeeded if o.remote is not None else None,
                o.remote.failed if o.remote is not None else None,
                now - o.opened,
            )
            for o in self._open.values()
        ]

    def _api(self, model: str, base_url: str | None = None) -> BatchApi:
        """The batch API for ``model`` at ``base_url`` (default: the backend's now; a batch
        recorded elsewhere is collected where it was sent)."""
        at = (model, base_url or self.where.base_url)
        if at not in self._apis:
            self._apis[at] = self._make_api(*at)
        return self._apis[at]

    # -- resuming ----------------------------------------------------------------------------

    async def _resume(self) -> None:
        for record in await self._ledger.open_batches(self.where.backend):
            if record.phase == "preparing":  # nothing was created: its keys are free
                await self._update(
                    record.id,
                    phase="abandoned",
                    message="the run stopped before its file was uploaded; its requests "
                    "went in later batches",
                )
            elif self.where.simulated and record.base_url != self.where.base_url:
                await self._update(
                    record.id,
                    phase="abandoned",
                    message="made on the simulator of an earlier run, which ended with it; "
                    "its requests went in later batches",
                )
            elif record.phase == "uploaded":
                await self._find_or_create(record)
            else:
                api = self._api(record.model, record.base_url)
                self._open[record.id] = _Open(record, api, self._clock())

    # -- submitting --------------------------------------------------------------------------

    async def _submit_one(self) -> bool:
        """Make one batch of the pending requests, if there is room; whether one was made."""
        if len(self._open) >= self.settings.max_open or (self._failed_last and self._open):
            # A batch that failed (OpenAI fails one past the tokens a model may have enqueued)
            # frees room only when another ends: until then its requests wait.
            return False
        calls = [c for c in await self._ledger.pending(list(self.configurations)) if self._may(c)]
        while calls and self._stop is None:
            model = self.configurations[calls[0].configuration].model
            group = [c for c in calls if self.configurations[c.configuration].model == model]
            api = self._api(model)
            # On a thread: building requests encodes images, and the actor's loop keeps
            # answering the monitor meanwhile.
            written, _ = await asyncio.to_thread(self._write_file, api, group)
            if written is not None:
                await self._send_file(model, api, written)
                return True
            held = {id(c) for c in group}  # each line over the byte limit: held back
            calls = [c for c in calls if id(c) not in held]
        return False

    def _may(self, call: Pending) -> bool:
        """Whether ``call`` may go in a batch now: its configuration is this backend's, and
        this run has not sent its attempt too often, or met an error no resend mends."""
        attempt = _attempt(call)
        if call.configuration not in self.configurations or attempt in self._held_back:
            return False
        return self._sent[attempt] <= self.settings.resubmits

    def _write_file(
        self, api: BatchApi, calls: list[Pending]
    ) -> tuple[_File | None, list[Pending]]:
        """The first JSONL file of ``calls`` under the limits, and the calls left for the next
        (each is sent before the next is written, so the disk holds one file at a time).

        A line alone over the byte limit can go in no batch: its attempt is held back this run.
        """
        limits = api.limits
        max_requests = min(limits.max_requests, self.settings.max_requests or limits.max_requests)
        max_bytes = min(limits.max_bytes, self.settings.max_bytes or limits.max_bytes)
        self._spool.mkdir(parents=True, exist_ok=True)
        written = _File(self._spool / f"{self.where.backend}-{secrets.token_hex(6)}.jsonl")
        left: list[Pending] = []
        ids: set[str] = set()
        with written.path.open("wb") as out:
            for i, call in enumerate(calls):
                if len(written.keys) >= max_requests:
                    left.extend(calls[i:])
                    break
                request = self._build(call)
                custom = call_id(request, call.next_attempt)
                if custom in ids:  # the same request twice (two keys ask alike): the next file
                    left.append(call)
                    continue
                line = api.line(custom, request)
                if len(line) > max_bytes:
                    self._held_back.add(_attempt(call))
                    continue
                if written.size + len(line) > max_bytes:
                    left.extend(calls[i:])
                    break
                out.writelines(line.parts)
                written.size += len(line)
                ids.add(custom)
                written.keys.append(BatchKey("", custom, *call))
        if not written.keys:
            written.path.unlink(missing_ok=True)
            return None, left
        return written, left

    def _build(self, call: Pending) -> Request:
        key = RequestKey(call.configuration, call.condition, call.qid, call.budget)
        return self._builder.build(key, self.configurations[call.configuration])

    async def _send_file(self, model: str, api: BatchApi, written: _File) -> None:
        tag = f"gb-{secrets.token_hex(8)}"
        record = BatchRecord(
            id=tag,
            backend=self.where.backend,
            provider=self.where.provider,
            model=model,
            base_url=self.where.base_url,
            api_key_env=self.where.api_key_env,
            phase="preparing",
            requests=len(written.keys),
            created_at=_now(),
        )
        keys = [k._replace(batch=tag) for k in written.keys]
        await self._ledger.record_batch(record, keys)
        for k in keys:
            self._sent[_held(k)] += 1
        try:
            file_id = await self._retrying(lambda: api.upload(written.path, tag))
        except CallError as exc:
            await self._update(tag, phase="abandoned", message=f"upload failed: {exc}")
            self._given_up(exc)
            return
        finally:
            written.path.unlink(missing_ok=True)
        uploaded = await self._update(tag, phase="uploaded", input_file=file_id)
        await self._find_or_create(uploaded)

    async def _find_or_create(self, record: BatchRecord) -> None:
        """Create the batch of an uploaded file, unless one with its tag exists already: a
        create whose answer was lost (a timeout, a reset, a killed driver) may have made it."""
        api = self._api(record.model, record.base_url)
        assert record.input_file is not None
        for attempt in range(self._tries):
            try:
                found = await self._retrying(lambda: api.find(record.id, record.input_file))
                remote = found or await api.create(record.input_file, record.id)
            except CallError as exc:
                if exc.retryable and attempt + 1 < self._tries:
                    await self._sleep(self._wait_for(exc, attempt))
                    continue
                if exc.retryable:  # it may exist: leave it to the next run to look again
                    self._stopped_by(exc)
                    return
                await self._update(record.id, phase="abandoned", message=f"not created: {exc}")
                await self._quietly(api.delete_file(record.input_file))
                self._given_up(exc)
                return
            self.outcome.created += found is None
            submitted = await self._update(
                record.id,
                phase="submitted",
                remote_id=remote.id,
                **_described(remote),
                submitted_at=_now(),
            )
            self._open[record.id] = _Open(submitted, api, self._clock(), remote)
            return

    # -- polling and reading -----------------------------------------------------------------

    async def _poll_once(self) -> list[str]:
        ended = []
        for tag, batch in list(self._open.items()):
            record = batch.record
            if record.phase == "ended":
                ended.append(tag)
                continue
            assert record.remote_id is not None
            try:
                remote = await self._retrying(partial(batch.api.get, record.remote_id))
            except CallError as exc:
                self._stopped_by(exc)
                if exc.stops:  # no poll can succeed: the next run collects it
                    self._halted = True
                    return []
                continue  # the next round asks again
            changes = _described(remote)
            if remote.ended:
                changes |= {"phase": "ended", "ended_at": _now()}
            if any(getattr(record, k) != v for k, v in changes.items() if k != "ended_at"):
                batch.record = await self._update(tag, **changes)
            batch.remote = remote
            if remote.ended:
                ended.append(tag)
        return ended

    async def _collect(self, tag: str) -> None:
        """Store an ended batch's results, line by line; its other keys are pending again."""
        batch = self._open[tag]
        keys = {k.custom_id: k for k in await self._ledger.batch_keys(tag)}
        reading = _Reading(self, batch, keys, self._clock() - batch.opened)
        try:
            remote = batch.remote
            if remote is None:  # adopted already ended: described by the provider once more
                assert batch.record.remote_id is not None
                remote = await self._retrying(partial(batch.api.get, batch.record.remote_id))
            async for line in batch.api.results(remote):
                await reading.take(line)
        except CallError as exc:  # its results could not be fetched: the next run reads them
            await reading.flush()
            self._stopped_by(exc)
            self._halted = self._halted or exc.stops
            del self._open[tag]
            return
        await reading.flush()
        self._failed_last = remote.state == "failed"
        unrun = len(keys) - reading.stored - len(reading.problem_ids)
        self.outcome.unrun += unrun
        self.outcome.read += 1
        await self._update(
            tag,
            phase="read",
            answered=reading.answered,
            errored=reading.errored,
            unrun=unrun,
            problems=reading.problems,
            read_at=_now(),
            message=remote.message,
        )
        del self._open[tag]
        if batch.record.input_file is not None:
            await self._quietly(batch.api.delete_file(batch.record.input_file))

    # -- plumbing ----------------------------------------------------------------------------

    async def _update(self, batch: str, **changes: object) -> BatchRecord:
        return await self._ledger.update_batch(batch, changes)

    async def _retrying(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call``, tried again after a throttle or a transient failure (the server's
        retry-after, else the online path's backoff), up to the transport's tries."""
        for attempt in range(self._tries):
            try:
                return await call()
            except CallError as exc:
                if not exc.retryable or attempt + 1 == self._tries:
                    raise
                await self._sleep(self._wait_for(exc, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait_for(self, exc: CallError, attempt: int) -> float:
        """The server's retry-after, else full-jitter exponential backoff (as online)."""
        if exc.retry_after is not None:
            return exc.retry_after
        return random.uniform(0, min(MAX_BACKOFF_S, self._backoff_s * 2**attempt))

    def _given_up(self, exc: CallError) -> None:
        """Stop making batches after a file or a batch was refused as it stands (too large, a
        bad request): the next would be refused alike. A throttle or a 5xx that outlasted its
        retries does not stop it: its requests go in a later batch."""
        self._stopped_by(exc)
        if not exc.retryable and self._stop is None:
            self._stop = exc
            self.outcome.not_made = str(exc)

    def _stopped_by(self, exc: CallError) -> None:
        """Stop submitting after ``exc`` if it is terminal (spent quota; a refused key)."""
        if not exc.stops or self._stop is not None:
            return
        self._stop = exc
        if isinstance(exc, QuotaExhausted):
            self.outcome.quota = exc.message
        else:
            self.outcome.refused = str(exc)

    async def _quietly(self, work: Awaitable[object]) -> None:
        """Tidying that may fail without harm (a file the provider deletes itself anyway)."""
        with contextlib.suppress(CallError):
            await work


class _Reading:
    """One ended batch's result lines becoming rows, stored a few hundred at a time."""

    def __init__(
        self, runner: BatchRunner, batch: _Open, keys: dict[str, BatchKey], latency_s: float
    ) -> None:
        self._runner = runner
        self._batch = batch
        self._keys = keys
        self._latency = max(0.0, latency_s)
        self._seen: set[str] = set()
        self._rows: list[ResponseRow] = []
        self._problems: list[BatchProblem] = []
        self.problem_ids: set[str] = set()
        self.stored = self.answered = self.errored = self.problems = 0
        self._lines = 0

    async def take(self, line: ResultLine) -> None:
        tag = self._batch.record.id
        custom = line.custom_id
        if line.problem is not None or custom is None:
            self._problem(line, line.problem or "no id")
        elif custom not in self._keys:
            self._problem(line, f"an id this batch does not hold: {custom}")
        elif custom in self._seen:
            self._problem(line, f"a second result for {custom}; the first was kept")
        elif line.ran:
            self._seen.add(custom)
            row = self._row(self._keys[custom], line, tag)
            if row is not None:
                self._rows.append(row)
        self._lines += 1
        if len(self._rows) >= WRITE_ROWS:
            await self.flush()
        elif self._lines % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # reading is CPU work: let the actor answer the monitor

    def _row(self, key: BatchKey, line: ResultLine, tag: str) -> ResponseRow | None:
        runner = self._runner
        configuration = runner.configurations.get(key.configuration)
        if configuration is None:
            self._problem(line, f"configuration {key.configuration} is not in this run")
            return None
        pending = Pending(key.configuration, key.condition, key.budget, key.qid, key.attempt)
        request = runner._build(pending)
        if call_id(request, key.attempt) != key.custom_id:
            self._problem(line, "its request changed since the batch was sent; not stored")
            return None
        sender = Sender(runner.where.provider, configuration.model)
        started = self._batch.record.submitted_at or self._batch.record.created_at
        context = f"batch {tag}, {line.where}"
        if line.reply is not None and not _same_model(line.reply.model, configuration.model):
            wrong = Fatal(
                f"{context}: answered by model {line.reply.model}, not {configuration.model}",
                status=line.status,
                code="model_mismatch",
            )
            return self._error(sender, request, key, wrong, started)
        if line.reply is not None:
            last = attempts_allowed(request.attempts, configuration.best_effort) - 1
            answer = self._answer(sender, request, key, line.reply, line.status, started)
            # The request is finished once an answer parses or its last attempt answered.
            self._runner.outcome.finished += answer.parseable or key.attempt >= last
            return answer
        error = line.error or Fatal(f"{context}: a line with neither answer nor error")
        error.message = f"{context}: {error.message}"
        return self._error(sender, request, key, error, started)

    def _answer(
        self,
        sender: Sender,
        request: Request,
        key: BatchKey,
        reply: Reply,
        status: int | None,
        started: datetime,
    ) -> ResponseRow:
        exchange = Exchange(reply, status or 200, self._latency, 0, started)
        ok = parses(request, reply.answer)
        return self._kept(answer_record(sender, request, key.attempt, exchange, ok))

    def _error(
        self, sender: Sender, request: Request, key: BatchKey, error: CallError, started: datetime
    ) -> ResponseRow:
        if not error.retryable:  # a request the server refuses goes again in a later run only
            self._runner._held_back.add(_held(key))
        self._runner.outcome.finished += 1  # an error ends its attempts, as online
        return self._kept(error_record(sender, request, key.attempt, error, started))

    def _kept(self, record: AttemptRecord) -> ResponseRow:
        """``record`` as the row to store, counted for the batch and the run."""
        outcome = self._runner.outcome
        self.stored += 1
        outcome.attempts += 1
        if record.outcome == "answer":
            self.answered += 1
            outcome.answered += 1
            outcome.input_tokens += record.input_tokens or 0
            outcome.output_tokens += record.output_tokens or 0
        else:
            self.errored += 1
            outcome.errored += 1
        return response_row(record)

    def _problem(self, line: ResultLine, why: str) -> None:
        tag = self._batch.record.id
        self._problems.append(BatchProblem(tag, line.where, line.custom_id, why))
        self.problems += 1
        self._runner.outcome.problems += 1
        if line.custom_id in self._keys and line.custom_id not in self._seen:
            self.problem_ids.add(line.custom_id)

    async def flush(self) -> None:
        ledger = self._runner._ledger
        if self._rows:
            await ledger.write_responses(self._rows)
            self._rows = []
        if self._problems:
            await ledger.record_problems(self._problems)
            self._problems = []


def _attempt(call: Pending) -> tuple[str, str, int, str, int]:
    """The attempt ``call`` sends next, as the runner counts what it sent."""
    return (call.configuration, call.condition, call.budget, call.qid, call.next_attempt)


def _held(key: BatchKey) -> tuple[str, str, int, str, int]:
    """The attempt a batch holds under ``key``, as :func:`_attempt` names it."""
    return (key.configuration, key.condition, key.budget, key.qid, key.attempt)


def _described(remote: RemoteBatch) -> dict[str, object]:
    """What the ledger keeps of the provider's description of a batch."""
    return {
        "state": remote.state,
        "provider_state": remote.provider_state,
        "output_file": remote.output_file,
        "error_file": remote.error_file,
        "succeeded": remote.succeeded,
        "failed": remote.failed,
        "message": remote.message,
    }


def _same_model(reported: str | None, asked: str) -> bool:
    """Whether the model a line names is the one asked: the same, or a dated snapshot of it
    (OpenAI answers ``gpt-4o`` as ``gpt-4o-2024-08-06``); a line naming none is taken as
    asked."""
    if reported is None:
        return True
    reported = reported.removeprefix("models/")
    return reported == asked or reported.startswith(asked + "-")


def _now() -> datetime:
    return datetime.now(UTC)


__all__ = [
    "BatchOutcome",
    "BatchRunner",
    "BatchSettings",
    "Ledger",
    "MakeApi",
    "OpenBatch",
    "Where",
]
