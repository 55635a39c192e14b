"""One backend's calls as the provider's batches: the feeder's :class:`~runner.CallPort` in
batch mode.

:class:`BatchRunner` is what a batch-mode backend's actor runs, and is tested without Ray. The
feeder (:mod:`runner.distributed._feeder`) decides what is sent, resent, capped or stopped, as
for an online worker; a *lease* is one batch: the runner writes its lines, makes the batch,
polls it until it ends and stores its results, then says what became of it
(:class:`~runner.Outcome`). Its one rule: **each step is recorded in the store before the
next is taken** (see :mod:`runner.store._batches`), so a driver killed anywhere finds the batch
again and collects it (:meth:`BatchRunner.collect_open`), and never sends its keys a second
time:

1. a lease's calls of one model are built and written to a JSONL file on disk, under the
   provider's limits and each line id once per file (what does not fit is given back);
2. the file's batch is recorded with its keys (``preparing``), the file uploaded
   (``uploaded``), the batch created with groundbench's tag (``submitted``); an ``inline``
   provider's (Anthropic's) is recorded ``uploaded`` with no file and its create carries the
   file's lines;
3. the batch is polled, backing off while nothing changes; once ended its results are read
   line by line into ``responses`` as an online answer would be (``read``);
4. an unparseable answer's next attempt, and the lines a batch never ran, are pending again:
   the feeder hands them in a later lease (a later batch).

At most ``max_open`` batches are open at once, and after a batch that failed none is made
until another ends. A create that fails without a clear refusal may still have made the
batch: the runner looks for it (:class:`~runner.batch.Sought`) before each later try (a
throttle's excepted) and before it gives the keys up, never before a batch's first create; a
look that cannot tell leaves the keys held for a later run. Quota on the batch endpoints
stops submitting (the open batches are still collected); a refused key or model stops the
backend; 429s and 5xx are retried with the online path's backoff, honouring the server's
retry-after. An id the provider answers that breaks the rule of :mod:`runner.batch._ids` (too
long, odd characters, the key in it) is never kept or used: its batch is abandoned, as not
made or as lost, with one line saying why, and no more batches are made this run. While the
worker's driver is silent no batch is created (``heard``); once it is gone none is, and the
runner reports a ``driver`` stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from conditions import AttemptKey, Builder, Configuration, Request, RequestKey, Transport
from runner._port import Outcome, Shape, Stop, Tally
from runner.backends import (
    AttemptRecord,
    Bill,
    CallError,
    Exchange,
    Fatal,
    OffOrigin,
    Origin,
    QuotaExhausted,
    RateLimited,
    RetryPolicy,
    Sender,
    Unreadable,
    answer_record,
    attempts_allowed,
    call_id,
    error_record,
    parses,
    worst_of,
)
from runner.backends._secrets import MAX_MESSAGE, clip
from runner.batch._api import (
    BatchApi,
    BatchLimits,
    RemoteBatch,
    ResultLine,
    Sought,
    Source,
    Undecided,
)
from runner.batch._ids import BadId
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


class BatchSettings(BaseModel):
    """A batch-mode backend's settings (the experiment's ``batch = {…}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # poll_s = inf

    poll_s: PositiveFloat = 30.0  # the first wait between polls of an open batch
    max_poll_s: PositiveFloat = 600.0  # the longest, reached while nothing changes
    max_open: PositiveInt = 50  # batches open at once (a provider limits what is enqueued)
    max_requests: PositiveInt | None = None  # lines per batch (default: the provider's limit)
    max_bytes: PositiveInt | None = None  # bytes per input file (default: the provider's)
    resubmits: int = Field(default=2, ge=0)  # times one attempt may go again in one run
    # (its batch expired, failed or never ran it, or its line met a transient error)


class Ledger(Protocol):
    """The store's batch ledger, as a batch runner asks it (:class:`~runner.distributed.
    StorePort`: the store actor's, or a store open in this process)."""

    async def open_batches(self, backend: str) -> list[BatchRecord]: ...

    async def batch_keys(self, batch: str) -> list[BatchKey]: ...

    async def remote_ids(self, provider: str) -> set[str]: ...

    async def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None: ...

    async def update_batch(self, batch: str, changes: dict[str, object]) -> BatchRecord: ...

    async def write_responses(self, rows: list[ResponseRow]) -> object: ...

    async def record_problems(self, problems: list[BatchProblem]) -> object: ...


MakeApi = Callable[[str, str], BatchApi]  # the batch API of (model, base URL), on one session
Sleep = Callable[[float], Awaitable[None]]
Heard = Callable[[], Awaitable[None]]  # returns once the driver is heard (or gone)


async def _always_heard() -> None:
    """No driver to hear (a runner on its own): never waits."""


class Offload(Protocol):
    """Runs CPU work off the event loop (``asyncio.to_thread``; tests run it inline, so the
    leases' turns come in an order they can count)."""

    def __call__(self, work: Callable[[], _T], /) -> Awaitable[_T]: ...


@dataclass(frozen=True)
class Where:
    """Where a batch-mode backend sends: for the ledger's records (never the key itself)."""

    backend: str
    provider: str
    base_url: str
    api_key_env: str | None
    simulated: bool = False  # the run's own simulator, which ends with the run

    @property
    def origin(self) -> Origin:
        """Where the backend's key may go: its configured base_url's origin."""
        return Origin.of(self.base_url)


@dataclass
class _Tally:
    """What batches stored: one batch's, a lease's, or the batches collected at once."""

    counts: Tally = field(default_factory=Tally)
    unrun: int = 0  # keys sent or held and not stored: pending again (the feeder's next round)

    def kept(self, record: AttemptRecord) -> None:
        self.counts += Tally.of(record)

    def finished(self, requests: int = 1) -> None:
        """``requests`` whose attempts ended, as an online worker counts them."""
        self.counts += Tally(finished=requests)

    def add(self, other: _Tally) -> None:
        self.counts += other.counts
        self.unrun += other.unrun


@dataclass
class BatchOutcome:
    """What a batch runner did this run: the run's report and the monitor's."""

    created: int = 0  # batches created at the provider
    read: int = 0  # batches whose results were stored
    tally: Tally = field(default_factory=Tally)  # what their results stored
    unrun: int = 0  # lines a batch never ran (expired, cancelled, failed): pending again
    problems: int = 0  # result lines that could not be read
    stop: Stop | None = None  # what stopped submitting (spent quota, a refusal), if anything did
    not_made: str | None = None  # a file or batch the provider refused, which stopped submitting
    elsewhere: int = 0  # open batches recorded at another origin: left open, never polled
    elsewhere_why: str | None = None  # the first of them, and why (one line)

    def add(self, read: _Tally, problems: int) -> None:
        """Count what one batch's reading stored."""
        self.tally += read.counts
        self.problems += problems


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
    calls: list[Pending] = field(default_factory=list)  # the calls of ``keys``, in order
    size: int = 0


@dataclass(frozen=True)
class _Made:
    """What became of a file's batch: made (``batch``), or not, its keys then free
    (``freed``: abandoned, or never sent) or still held by the ledger (a create whose fate is
    unknown, left for a later run to look for)."""

    batch: _Open | None = None
    freed: bool = False


class _Unknown(Exception):
    """A look for a batch that could not tell whether it was made (:meth:`BatchRunner._look`);
    never retried, unlike the :class:`CallError` it carries."""

    def __init__(self, error: CallError) -> None:
        super().__init__(str(error))
        self.error = error


class BatchRunner:
    """The calls of one backend's configurations, as batches: a :class:`~runner.CallPort`
    (see the module docstring)."""

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
        transport: Transport,
        limits: BatchLimits,
        sleep: Sleep = asyncio.sleep,
        offload: Offload = asyncio.to_thread,
        clock: Callable[[], float] = time.monotonic,
        heard: Heard = _always_heard,
    ) -> None:
        self.where = where
        self.configurations = {c.name: c for c in configurations}
        self.settings = settings or BatchSettings()
        # The input per line the spending cap last reserved (Client.send's input_bound): a
        # line whose usage is unknown is counted at it (None: a request's own rough bound).
        self.input_bound: int | None = None
        self._limits = limits
        self._builder = builder
        self._ledger = ledger
        self._make_api = make_api
        self._apis: dict[tuple[str, str], BatchApi] = {}
        self._spool = spool
        self._sleep = sleep
        self._offload = offload
        self._clock = clock
        # The backend's own retries (its transport's), one for all its configurations.
        self._retry = RetryPolicy.of(transport)  # the online path's policy, caps and all
        self._open: dict[str, _Open] = {}
        self._making = asyncio.Lock()  # one file on disk, one batch in the making, at a time
        self._changed = asyncio.Event()  # set (and replaced) when a batch ends or stops
        self._held_back: set[AttemptKey] = set()  # attempts not sent again this run
        self._stop: CallError | None = None  # what stopped submitting
        self._halted = False  # a terminal error met while polling: no call can succeed
        self._failed_last = False  # the batch that ended last had failed
        self._gone: str | None = None  # why the driver is gone, once it is
        self._heard = heard  # the worker's lifeline: waits while the driver is silent
        self.outcome = BatchOutcome()

    # -- the port ----------------------------------------------------------------------------

    @property
    def lines(self) -> int:
        """The most lines one batch holds: the setting, within the provider's limit."""
        most = self._limits.max_requests
        return min(most, self.settings.max_requests or most)

    @property
    def shape(self) -> Shape:
        """A lease is one batch's lines; the runner holds ``max_open`` batches; an attempt
        goes again ``resubmits`` times a run (its batch expired, failed, never ran it)."""
        lines = self.lines
        return Shape(self.settings.max_open * lines, lines, self.settings.resubmits, True)

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        """One batch of ``calls``, made once there is room, followed until it ends and
        collected: what it stored, and the calls it did not take (``given_back``: another
        model's, those past the byte limit, all of them once submitting has stopped).

        A call held back for good (a line alone over the byte limit, an attempt whose line met
        an error no resend mends) is neither sent nor given back; the lines the batch never
        ran are pending again, for the feeder's next round.
        """
        calls = [c for c in calls if c.attempt_key not in self._held_back]
        if input_bound is not None:
            self.input_bound = input_bound
        async with self._making:
            if not await self._room():
                return self._outcome(_Tally(), calls)
            made, left = await self._make(calls)
        tally = _Tally()
        if made is not None:
            await self._follow(made, tally)
        return self._outcome(tally, left)

    async def collect_open(self) -> Outcome:
        """Adopt the batches the ledger holds open for this backend (a killed run's, a dead
        worker's) and collect them: one made before its file was uploaded, or on an earlier
        run's own simulator, is abandoned (its keys pending again); one uploaded is found by
        its tag, else created; the rest are polled until they end and read."""
        tally = _Tally()
        adopted: list[_Open] = []
        for record in await self._ledger.open_batches(self.where.backend):
            batch = await self._adopt(record, tally)
            if batch is not None:
                adopted.append(batch)
        await asyncio.gather(*(self._follow(b, tally) for b in adopted))
        return self._outcome(tally)

    async def resume_after_quota(self) -> None:
        """Submit again after a quota error (the feeder waited it out), unless the driver is
        gone meanwhile (its stop stays said)."""
        if isinstance(self._stop, QuotaExhausted) and self._gone is None:
            self._stop = None
            self._halted = False
            self.outcome.stop = None

    def driver_gone(self, why: str) -> None:
        """Upload no file and create no batch from now on: no record of it could reach a
        store. Leases give their calls back, with a ``driver`` stop (over spent quota, which a
        wait could mend); the batches open are left for a later run."""
        if self._gone is None:
            self._gone = why
            if self.outcome.stop is None or self.outcome.stop.kind == "quota":
                self.outcome.stop = Stop(kind="driver", why=why)
            self._notify()

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

    def _outcome(self, tally: _Tally, given_back: Sequence[Pending] = ()) -> Outcome:
        return Outcome(tally.counts, self.outcome.stop, tuple(given_back), tally.unrun)

    def _api(self, model: str, base_url: str | None = None) -> BatchApi:
        """The batch API for ``model`` at ``base_url`` (default: the backend's now; a batch
        recorded elsewhere is collected where it was sent)."""
        at = (model, base_url or self.where.base_url)
        if at not in self._apis:
            self._apis[at] = self._make_api(*at)
        return self._apis[at]

    # -- room --------------------------------------------------------------------------------

    @property
    def _submitting(self) -> bool:
        return self._stop is None and self._gone is None and not self._halted

    def _crowded(self) -> bool:
        # A batch that failed (OpenAI fails one past the tokens a model may have enqueued)
        # frees room only when another ends: until then no batch is made beside the others.
        open_ = len(self._open)
        return open_ >= self.settings.max_open or (self._failed_last and open_ > 0)

    async def _room(self) -> bool:
        """Wait until a batch may be made; False if submitting stopped meanwhile. Every open
        batch is followed by a lease or :meth:`collect_open`, so each ends or stops."""
        while self._submitting and self._crowded():
            await self._changed.wait()
        return self._submitting

    def _notify(self) -> None:
        """Wake whoever waits for room (a batch ended, submitting stopped)."""
        self._changed.set()
        self._changed = asyncio.Event()

    # -- adopting ----------------------------------------------------------------------------

    async def _adopt(self, record: BatchRecord, tally: _Tally) -> _Open | None:
        """``record``, open in the ledger, as a batch to follow (None: nothing to follow)."""
        if record.phase == "preparing":  # nothing was created: its keys are free
            why = "the run stopped before its file was uploaded"
        elif self.where.simulated and record.base_url != self.where.base_url:
            why = "made on the simulator of an earlier run, which ended with it"
        elif self._left_elsewhere(record):
            return None
        elif record.phase == "uploaded":
            made = await self._find_or_create(record, record.input_file)
            tally.unrun += record.requests if made.freed else 0
            return made.batch
        else:
            batch = _Open(record, self._api(record.model, record.base_url), self._clock())
            self._open[record.id] = batch
            return batch
        message = f"{why}; its requests went in later batches"
        await self._update(record.id, phase="abandoned", message=message)
        tally.unrun += record.requests
        return None

    def _left_elsewhere(self, record: BatchRecord) -> bool:
        """Whether ``record`` was sent to another origin than the configured base_url's; if so
        it is counted and left open, never polled (its key goes nowhere else, whatever a store
        says), its requests held, and the run's summary says why. The wires refuse such a
        request too: this is so the run says it once, not at every poll."""
        try:
            self.where.origin.admit(record.base_url)
        except OffOrigin as exc:
            outcome = self.outcome
            outcome.elsewhere += 1
            if outcome.elsewhere_why is None:
                outcome.elsewhere_why = (
                    f"batch {record.id} ({_requests(record.requests)}), recorded at another "
                    f"address, was not collected: {exc.message}"
                )
            return True
        return False

    # -- making ------------------------------------------------------------------------------

    def _model(self, call: Pending) -> str:
        return self.configurations[call.configuration].model

    async def _make(self, calls: list[Pending]) -> tuple[_Open | None, list[Pending]]:
        """The batch of ``calls``'s first model (None if none was made), and the calls it
        did not take. A model whose every line is over the byte limit makes none: the next
        model's calls are tried."""
        left = calls
        while left:
            model = self._model(left[0])
            others = [c for c in left if self._model(c) != model]
            api = self._api(model)
            # On a thread: building requests encodes images, and the actor's loop keeps
            # answering the monitor meanwhile.
            group = [c for c in left if self._model(c) == model]
            written, unfit = await self._offload(partial(self._write_file, api, group))
            if written is not None:
                made = await self._send_file(model, api, written)
                # Not sent: given back (once the driver is gone, whatever the ledger holds).
                unsent = made.batch is None and (made.freed or self._gone is not None)
                back = written.calls if unsent else []
                return made.batch, [*back, *unfit, *others]
            left = others
        return None, []

    def _write_file(
        self, api: BatchApi, calls: list[Pending]
    ) -> tuple[_File | None, list[Pending]]:
        """The JSONL file of ``calls`` under the limits (None: no line fits), and the calls
        it has no room for.

        A line alone over the byte limit can go in no batch: its attempt is held back this run.
        """
        max_bytes = min(self._limits.max_bytes, self.settings.max_bytes or self._limits.max_bytes)
        self._spool.mkdir(parents=True, exist_ok=True)
        written = _File(self._spool / f"{self.where.backend}-{secrets.token_hex(6)}.jsonl")
        left: list[Pending] = []
        ids: set[str] = set()
        with written.path.open("wb") as out:
            for i, call in enumerate(calls):
                if len(written.keys) >= self.lines:
                    left.extend(calls[i:])
                    break
                request = self._build(call.request)
                custom = call_id(request, call.next_attempt)
                if custom in ids:  # the same request twice (two keys ask alike): the next file
                    left.append(call)
                    continue
                line = api.line(custom, request)
                if len(line) > max_bytes:
                    self._held_back.add(call.attempt_key)
                    continue
                if written.size + len(line) > max_bytes:
                    left.extend(calls[i:])
                    break
                out.writelines(line.parts)
                written.size += len(line)
                ids.add(custom)
                written.keys.append(BatchKey.of(call.attempt_key, batch="", custom_id=custom))
                written.calls.append(call)
        if not written.keys:
            written.path.unlink(missing_ok=True)
            return None, left
        return written, left

    def _build(self, key: RequestKey) -> Request:
        return self._builder.build(key, self.configurations[key.configuration])

    async def _send_file(self, model: str, api: BatchApi, written: _File) -> _Made:
        """Record the file's batch, upload the file and create the batch, each step in the
        ledger before the next. An ``inline`` provider's create carries the file's lines: it
        is recorded ``uploaded`` (its input handed over) before the create is sent."""
        tag = f"gb-{secrets.token_hex(8)}"
        record = BatchRecord(
            id=tag, backend=self.where.backend, provider=self.where.provider, model=model,
            base_url=self.where.base_url, api_key_env=self.where.api_key_env,
            phase="preparing", requests=len(written.keys), created_at=_now(),
        )  # fmt: skip
        try:
            if self._gone is not None:
                return _Made(freed=True)
            await self._ledger.record_batch(record, [k._replace(batch=tag) for k in written.keys])
            if api.inline:
                sending = await self._update(tag, phase="uploaded")
                return await self._find_or_create(sending, written.path, fresh=True)
            return await self._upload(record, api, written.path)
        finally:
            written.path.unlink(missing_ok=True)

    async def _upload(self, record: BatchRecord, api: BatchApi, path: Path) -> _Made:
        """Upload the file of ``record``'s batch, then create the batch."""
        try:
            file_id = await self._retrying(lambda: api.upload(path, record.id))
        except CallError as exc:
            await self._update(record.id, phase="abandoned", message=f"upload failed: {exc}")
            self._given_up(exc)
            return _Made(freed=True)
        uploaded = await self._update(record.id, phase="uploaded", input_file=file_id)
        return await self._find_or_create(uploaded, file_id, fresh=True)

    async def _find_or_create(
        self, record: BatchRecord, source: Source | None, *, fresh: bool = False
    ) -> _Made:
        """Create the batch of ``source`` (the uploaded file, or an inline provider's file of
        requests), unless it exists already: a create whose answer was lost (a timeout, a
        reset, a killed driver) may have made it, so it is looked for before every try but a
        ``fresh`` record's first, and after any but a throttle. With no ``source`` (an inline
        batch adopted from a killed run, whose requests' file went with it) it is only looked
        for: not found, it was never made, and its keys are free. A look that cannot tell
        leaves the record as it is, its keys held for a later run."""
        await self._heard()  # a silent driver: nothing is created until it is heard again
        if self._gone is not None:  # left 'uploaded': a later run finds or creates it
            return _Made()
        api = self._api(record.model, record.base_url)
        look = not fresh  # whether a create may have been sent

        async def find_or_create() -> tuple[RemoteBatch | None, bool]:
            nonlocal look
            if look:
                found = await self._look(api, record)
                if found is not None or source is None:
                    return found, False
            assert source is not None  # a fresh record has its source
            look = True  # from here on, a failed create may have made it
            try:
                return await api.create(source, record.id), True
            except RateLimited:  # throttled: refused before anything was made
                look = False
                raise

        try:
            remote, created = await self._retrying(find_or_create)
        except _Unknown as unknown:
            return await self._held(record, unknown.error)
        except CallError as exc:
            return await self._not_created(record, api, exc)
        if remote is None:
            message = (
                "never created (no batch at the provider is it); its requests went in later batches"
            )
            await self._update(record.id, phase="abandoned", message=message)
            return _Made(freed=True)
        self.outcome.created += created
        return _Made(await self._submitted(record, api, remote))

    async def _look(self, api: BatchApi, record: BatchRecord) -> RemoteBatch | None:
        """``record``'s batch at its provider, or None if it was never made. A look that fails
        as another try may mend (a throttle, a 5xx) raises its error; one no retry mends (a
        refusal, an id no provider gives, several batches that could be it) raises
        :class:`_Unknown`: whether the batch was made is not known, so its keys stay held."""
        try:
            return await api.find(await self._sought(record))
        except CallError as exc:
            if exc.retryable and not isinstance(exc, Undecided):
                raise
            raise _Unknown(exc) from None

    async def _sought(self, record: BatchRecord) -> Sought:
        """What finds ``record``'s batch at its provider (:class:`~runner.batch.Sought`),
        asked of the ledger at each look: a batch recorded since is known by then."""
        keys = await self._ledger.batch_keys(record.id)
        known = await self._ledger.remote_ids(record.provider)
        return Sought(
            tag=record.id, input_file=record.input_file, requests=record.requests,
            since=record.created_at, custom_ids=frozenset(k.custom_id for k in keys),
            known=frozenset(known),
        )  # fmt: skip

    async def _held(self, record: BatchRecord, exc: CallError) -> _Made:
        """Leave ``record`` as it is: its batch may exist, so its keys stay held, for the next
        run to look again."""
        self._stopped_by(exc)
        await self._update(record.id, message=f"not yet known to be created: {exc}")
        return _Made()

    async def _not_created(self, record: BatchRecord, api: BatchApi, exc: CallError) -> _Made:
        if exc.retryable:  # it may exist
            return await self._held(record, exc)
        await self._update(record.id, phase="abandoned", message=f"not created: {exc}")
        if record.input_file is not None:
            await self._quietly(api.delete_file(record.input_file))
        self._given_up(exc)
        return _Made(freed=True)

    async def _submitted(self, record: BatchRecord, api: BatchApi, remote: RemoteBatch) -> _Open:
        submitted = await self._update(
            record.id, phase="submitted", remote_id=remote.id, **_described(remote),
            submitted_at=_now(),
        )  # fmt: skip
        batch = _Open(submitted, api, self._clock(), remote)
        self._open[record.id] = batch
        return batch

    # -- following ---------------------------------------------------------------------------

    async def _follow(self, batch: _Open, tally: _Tally) -> None:
        """Poll ``batch`` until it ends, waiting longer each time nothing changed, and store
        its results; a poll that no later one can mend (a refused key) leaves it for the next
        run."""
        wait = self.settings.poll_s
        try:
            while not self._halted:
                try:
                    changed = await self._poll(batch)
                except BadId as exc:
                    await self._lost(batch, exc, tally)
                    return
                if batch.record.phase == "ended":
                    await self._collect(batch, tally)
                    return
                if changed is None:
                    return
                await self._sleep(wait)
                longer = min(self.settings.max_poll_s, wait * 1.5)
                wait = self.settings.poll_s if changed else longer
        finally:
            self._open.pop(batch.record.id, None)
            self._notify()

    async def _poll(self, batch: _Open) -> bool | None:
        """Ask the provider how ``batch`` is; whether that changed. None: no poll of it can
        succeed now (a refused key halts the runner too); the next run collects it."""
        record = batch.record
        if record.phase == "ended":  # adopted ended: read it
            return True
        assert record.remote_id is not None
        try:
            remote = await self._retrying(partial(batch.api.get, record.remote_id))
        except BadId:
            raise
        except CallError as exc:
            self._stopped_by(exc)
            self._halted = self._halted or exc.stops
            return False if exc.retryable else None  # a throttle or 5xx: the next poll asks
        changes = _described(remote)
        if remote.ended:
            changes |= {"phase": "ended", "ended_at": _now()}
        changed = any(getattr(record, k) != v for k, v in changes.items() if k != "ended_at")
        if changed:
            batch.record = await self._update(record.id, **changes)
        batch.remote = remote
        return changed

    async def _collect(self, batch: _Open, tally: _Tally) -> None:
        """Store an ended batch's results, line by line; its other keys are pending again."""
        tag = batch.record.id
        keys = {k.custom_id: k for k in await self._ledger.batch_keys(tag)}
        reading = _Reading(self, batch, keys, self._clock() - batch.opened)
        try:
            remote = batch.remote
            if remote is None:  # adopted already ended: described by the provider once more
                assert batch.record.remote_id is not None
                remote = await self._retrying(partial(batch.api.get, batch.record.remote_id))
            async for line in batch.api.results(remote):
                await reading.take(line)
        except BadId as exc:
            await self._counted(reading, tally)
            await self._lost(batch, exc, tally, stored=reading.tally.counts.attempts)
            return
        except CallError as exc:  # its results could not be fetched: the next run reads them
            await self._counted(reading, tally)
            self._stopped_by(exc)
            self._halted = self._halted or exc.stops
            return
        await self._counted(reading, tally)
        self._failed_last = remote.state == "failed"
        unrun = len(keys) - reading.tally.counts.attempts - len(reading.problem_ids)
        tally.unrun += unrun + len(reading.problem_ids)
        self.outcome.unrun += unrun
        self.outcome.read += 1
        await self._update(
            tag, phase="read", answered=reading.tally.counts.answered,
            errored=reading.tally.counts.errored,
            unrun=unrun, problems=reading.problems, read_at=_now(), message=remote.message,
        )  # fmt: skip
        if batch.record.input_file is not None:
            await self._quietly(batch.api.delete_file(batch.record.input_file))

    async def _lost(self, batch: _Open, exc: BadId, tally: _Tally, stored: int = 0) -> None:
        """Give ``batch`` up: its provider answered an id that is no id (or the ledger holds
        one, from an older version), which is never put in a URL, so no poll or read of it
        can be made. It is abandoned, its keys pending again; no more batches are made this
        run (the server that answered it would answer the next alike). ``stored``: the
        records its results gave before the id was met."""
        await self._update(batch.record.id, phase="abandoned", message=f"lost: {exc}")
        tally.unrun += batch.record.requests - stored
        self._given_up(exc)

    async def _counted(self, reading: _Reading, tally: _Tally) -> None:
        """Store what is left of ``reading`` and count what it stored."""
        await reading.flush()
        tally.add(reading.tally)
        self.outcome.add(reading.tally, reading.problems)

    # -- plumbing ----------------------------------------------------------------------------

    async def _update(self, batch: str, **changes: object) -> BatchRecord:
        return await self._ledger.update_batch(batch, changes)

    async def _retrying(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call``, tried again by the one retry policy (:mod:`runner.backends._retry`):
        after a throttle or a transient failure, the server's retry-after, else backoff."""
        return await self._retry.call(call, sleep=self._sleep)

    def _given_up(self, exc: CallError) -> None:
        """Stop making batches after a file or a batch was refused as it stands (too large, a
        bad request): the next would be refused alike. A throttle or a 5xx that outlasted its
        retries does not stop it: its requests go in a later batch."""
        self._stopped_by(exc)
        if not exc.retryable and self._stop is None:
            self._stop = exc
            self.outcome.not_made = str(exc)
            self._notify()

    def _stopped_by(self, exc: CallError) -> None:
        """Stop submitting after ``exc`` if it is terminal (spent quota; a refused key)."""
        if not exc.stops or self._stop is not None:
            return
        self._stop = exc
        self.outcome.stop = Stop.of(exc)
        self._notify()

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
        self.tally = _Tally()  # what it stored
        self.problems = 0
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
        if len(self._rows) + len(self._problems) >= WRITE_ROWS:  # memory bounded either way
            await self.flush()
        elif self._lines % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # reading is CPU work: let the actor answer the monitor

    def _row(self, key: BatchKey, line: ResultLine, tag: str) -> ResponseRow | None:
        runner = self._runner
        configuration = runner.configurations.get(key.configuration)
        if configuration is None:
            self._problem(line, f"configuration {key.configuration} is not in this run")
            return None
        request = runner._build(key.key.request)
        if call_id(request, key.attempt) != key.custom_id:
            self._problem(line, "its request changed since the batch was sent; not stored")
            return None
        sender = Sender(runner.where.provider, configuration.model)
        started = self._batch.record.submitted_at or self._batch.record.created_at
        context = f"batch {tag}, {line.where}"
        billed = self._billed(request, line)
        if line.reply is not None and not _same_model(line.reply.model, configuration.model):
            wrong = Fatal(
                f"{context}: answered by model {line.reply.model}, not {configuration.model}",
                status=line.status,
                code="model_mismatch",
            )
            wrong.billed = billed
            return self._error(sender, request, key, wrong, started)
        if line.reply is not None:
            last = attempts_allowed(request.attempts, configuration.best_effort) - 1
            exchange = Exchange(line.reply, line.status or 200, self._latency, 0, started, billed)
            answer = self._answer(sender, request, key, exchange)
            # The request is finished once an answer parses or its last attempt answered.
            self.tally.finished(answer.parseable or key.attempt >= last)
            return answer
        error = line.error or Fatal(f"{context}: a line with neither answer nor error")
        error.message = f"{context}: {error.message}"
        error.billed = billed
        return self._error(sender, request, key, error, started)

    def _billed(self, request: Request, line: ResultLine) -> Bill:
        """What the line was billed: an answer, or one whose message could not be read, at
        its usage (its worst case where that is unknown); a failed line, nothing."""
        if line.reply is not None:
            usage = line.reply.usage
        elif isinstance(line.error, Unreadable):
            usage = line.error.usage
        else:
            return Bill()
        return Bill.of(usage, worst_of(request, self._runner.input_bound))

    def _answer(
        self, sender: Sender, request: Request, key: BatchKey, exchange: Exchange
    ) -> ResponseRow:
        ok = parses(request, exchange.reply.answer)
        return self._kept(answer_record(sender, request, key.attempt, exchange, ok))

    def _error(
        self, sender: Sender, request: Request, key: BatchKey, error: CallError, started: datetime
    ) -> ResponseRow:
        # A request the server refuses goes again in a later run only; a billed line whose
        # message could not be read goes in a later batch, as an expired one does.
        if not error.retryable and not isinstance(error, Unreadable):
            self._runner._held_back.add(key.key)
        self.tally.finished()  # an error ends its attempts, as online
        return self._kept(error_record(sender, request, key.attempt, error, started))

    def _kept(self, record: AttemptRecord) -> ResponseRow:
        """``record`` as the row to store, counted."""
        self.tally.kept(record)
        return response_row(record)

    def _problem(self, line: ResultLine, why: str) -> None:
        tag = self._batch.record.id
        # The readers clip what they read; clipped again here, as the last step before the
        # store, for any reader (a fake's, a future provider's) that did not. A line's place
        # is a file id (at most 256) and its number: kept whole, as it keys the row.
        where = clip(line.where, None, MAX_MESSAGE)
        custom = None if line.custom_id is None else clip(line.custom_id)
        self._problems.append(BatchProblem(tag, where, custom, clip(why, None, MAX_MESSAGE)))
        self.problems += 1
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


def _requests(n: int) -> str:
    return f"{n:,} request{'' if n == 1 else 's'}"


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
