"""BatchRunner as the feeder's port: the real :class:`Feeder` leases it calls over a real store
(``StorePort.local``), against an in-memory batch API whose lines the simulator answers (as
online), with no HTTP, no Ray and no real waiting: splitting, parse retries, resume after a
kill at each step, expiry, quota, the spending cap, and result lines that cannot be read. The
wires over HTTP have tests of their own."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    Configuration,
    DataRoot,
    Request,
    Transport,
    VariantCache,
    plan,
    task_of,
)
from runner.backends import (
    CallError,
    Fatal,
    OpenAIChat,
    QuotaExhausted,
    RateLimited,
    Refused,
    Transient,
    Unreadable,
    provider_named,
)
from runner.backends._wire import Body, splice_json
from runner.batch import (
    BatchLimits,
    BatchRunner,
    BatchSettings,
    RemoteBatch,
    ResultLine,
    Where,
)
from runner.batch._api import Sought, Source, Undecided
from runner.batch._ids import BadId
from runner.distributed import (
    Feed,
    Feeder,
    FeedPolicy,
    Outcome,
    SpendCap,
    Stop,
    StorePort,
    WorkerLost,
    WorstCase,
)
from runner.distributed._store_actor import StoreActor
from runner.simulator import Behaviour, SimSpec, Simulator
from runner.store import BatchKey, BatchRecord, GridRow, Pending, Registration, Store

QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0, prose=0.0)
PATH = "/v1/chat/completions"
_T = TypeVar("_T")


class Killed(BaseException):
    """The driver dies here (not an Exception: nothing on the way catches it)."""


async def no_wait(_: float) -> None:
    await asyncio.sleep(0)  # a turn for the other leases, as a real wait would give


async def no_silence() -> None:
    """A driver always heard."""


async def inline(work: Callable[[], _T]) -> _T:
    """Files written on the loop, not a thread: the leases take turns in a countable order."""
    return work()


@dataclass
class _Batch:
    id: str
    tag: str
    file: str
    lines: list[tuple[str, bytes]]
    polls: int = 0
    state: str = "in_progress"
    results: list[ResultLine] = field(default_factory=list)


class FakeBatches:
    """A provider's batch API in memory: lines answered by the simulator, as online."""

    def __init__(self, simulator: Simulator, model: str, *, polls_to_end: int = 2) -> None:
        self.simulator = simulator
        self.wire = OpenAIChat(provider_named("qwen"), model)
        self.limits = BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
        self.inline = False
        self.files: dict[str, list[tuple[str, bytes]]] = {}
        self.batches: dict[str, _Batch] = {}
        self.submitted: Counter[str] = Counter()  # custom id: batches it was created in
        self.polls_to_end = polls_to_end
        self.expire: set[int] = set()  # serials of batches that expire half done
        self.quota_after: int | None = None
        self.lose_create_answer = False  # the batch is made, the answer lost
        self.kill_at: str | None = None  # "upload", "create"
        self.death: type[BaseException] = Killed  # what a kill raises
        self.dead = False  # killed (the driver): nothing more reaches the provider or the store
        self.bad_lines: list[ResultLine] = []  # added to the first batch's results
        self.model_said: str | None = None
        self.usage: tuple[int, int] | None = None  # (input, output) tokens each answer reports
        # What each line's body holds in place of the simulator's usage (None: its own;
        # HOSTILE_LINES names them) and whether it keeps its choices.
        self.hostile: dict[str, Any] | None = None
        self.looked = 0  # finds asked
        self.undecided = 0  # finds that cannot tell yet (Anthropic's Undecided), still to come
        self.find_fails: CallError | None = None  # what every find raises, if anything
        self.throttle_creates = 0  # creates refused with a 429 (nothing made), still to come
        self._ids = itertools.count(1)

    def line(self, custom_id: str, request: Request) -> Body:
        doc = {"custom_id": custom_id, "method": "POST", "url": PATH,
               "body": self.wire.payload(request)}  # fmt: skip
        image = request.image.data_url if request.image is not None else None
        body = splice_json(doc, image)
        return Body((*body.parts, b"\n"))

    def _killed(self, point: str = "") -> None:
        """Raise a death at ``point`` once; a driver killed stays dead: its other leases reach
        neither the provider nor the store, as when its process ends."""
        if self.dead:
            raise Killed("the driver is dead")
        if self.kill_at == point:
            self.kill_at = None
            self.dead = self.death is Killed
            raise self.death("killed at " + point)

    async def upload(self, path: Path, display_name: str) -> str:
        assert not self.inline, "an inline provider is never asked to upload"
        self._killed("upload")
        file = f"file-{next(self._ids)}"
        self.files[file] = _read(path)
        return file

    async def create(self, source: Source, tag: str) -> RemoteBatch:
        if self.throttle_creates:
            self.throttle_creates -= 1
            raise RateLimited("slow down", status=429, retry_after=0.0)
        if self.quota_after is not None and len(self.batches) >= self.quota_after:
            raise QuotaExhausted("insufficient_quota", status=429, code="insufficient_quota")
        if self.inline:  # the file's lines go in the create itself: read while it is there
            assert isinstance(source, Path)
            self._killed("send")
            file_id, lines = "", _read(source)
        else:
            assert isinstance(source, str)
            file_id, lines = source, self.files[source]
        batch = _Batch(f"batch_{next(self._ids)}", tag, file_id, lines)
        self.batches[batch.id] = batch
        self.submitted.update(c for c, _ in batch.lines)
        self._killed("create")
        if self.lose_create_answer:
            self.lose_create_answer = False
            raise Transient("no response within 60 s")
        return self._remote(batch)

    async def get(self, batch_id: str) -> RemoteBatch:
        self._killed()
        batch = self.batches[batch_id]
        batch.polls += 1
        if batch.state == "in_progress" and batch.polls >= self.polls_to_end:
            self._end(batch)
        return self._remote(batch)

    async def find(self, sought: Sought) -> RemoteBatch | None:
        self._killed()
        self.looked += 1
        if self.undecided:
            self.undecided -= 1
            raise Undecided("2 batches at the provider could be it")
        if self.find_fails is not None:
            raise self.find_fails
        found = [b for b in self.batches.values() if self._is_sought(b, sought)]
        return self._remote(found[0]) if found else None

    def _is_sought(self, batch: _Batch, sought: Sought) -> bool:
        if self.inline:  # an inline provider keeps no tag: its batch holds the ids sought
            return {c for c, _ in batch.lines} == sought.custom_ids
        return batch.tag == sought.tag

    async def cancel(self, batch_id: str) -> RemoteBatch:
        raise NotImplementedError

    async def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
        self._killed()
        for line in self.batches[batch.id].results:
            yield line

    async def delete_file(self, file_id: str) -> None:
        self.files.pop(file_id, None)

    def _end(self, batch: _Batch) -> None:
        serial = list(self.batches).index(batch.id) + 1
        expires = serial in self.expire
        done = len(batch.lines) // 2 if expires else len(batch.lines)
        for n, (custom, body) in enumerate(batch.lines, 1):
            where = f"{batch.id}-out line {n}"
            if n > done:
                batch.results.append(ResultLine(where, custom, ran=False))
                continue
            status, doc = self.simulator.answer_line(PATH, body, custom)
            if self.model_said is not None:
                doc["model"] = self.model_said
            if self.usage is not None:
                doc["usage"] = {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1]}
            if self.hostile is not None:
                doc.pop("usage", None)
                doc.update(self.hostile)
            batch.results.append(self._read(where, custom, doc, status))
        if serial == 1:
            batch.results.extend(self.bad_lines)
        batch.state = "expired" if expires else "completed"

    def _read(self, where: str, custom: str, doc: dict[str, Any], status: int) -> ResultLine:
        """A line's body read as the adapters read one: billed, so an answer that cannot be
        read is the line's error with its usage (runner.batch._openai)."""
        try:
            reply = self.wire.read(doc)
        except Unreadable as exc:
            return ResultLine(where, custom, error=exc, status=status)
        return ResultLine(where, custom, reply=reply, status=status)

    def _remote(self, batch: _Batch) -> RemoteBatch:
        return RemoteBatch(batch.id, batch.state, batch.state, batch.tag, batch.file)  # type: ignore[arg-type]


def _read(path: Path) -> list[tuple[str, bytes]]:
    """A JSONL file's lines as (custom id, body)."""
    lines = []
    for raw in path.read_bytes().splitlines():
        doc = json.loads(raw)
        lines.append((doc["custom_id"], json.dumps(doc["body"]).encode()))
    return lines


def _configuration() -> Configuration:
    transport = Transport.model_validate({"base_url": "http://batch.invalid"})
    return QWEN.model_copy(update={"conditions": ("base",), "transport": transport})


@dataclass
class Rig:
    store: Store
    api: FakeBatches
    simulator: Simulator
    cohort: Cohort
    root: DataRoot
    tmp: Path
    ledger: StorePort = field(init=False)
    echoed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        actor = StoreActor.serving(self.store)

        async def invoke(name: str, *args: Any) -> Any:
            if self.api.dead:  # a killed driver's store port reaches nothing
                raise Killed("the driver is dead")
            return getattr(actor, name)(*args)

        self.ledger = StorePort(invoke)  # StorePort.local's, dying with the driver

    def runner(self, *, sleep: Callable[[float], Awaitable[None]] = no_wait,
               heard: Callable[[], Awaitable[None]] = no_silence,
               **settings: object) -> BatchRunner:  # fmt: skip
        builder = task_of(self.cohort).builder(self.root.images, VariantCache(self.tmp / "v"))
        where = Where("qwen", "qwen", "http://batch.invalid", "DASHSCOPE_API_KEY")
        return BatchRunner(
            where, [_configuration()], builder, self.ledger, lambda *_: self.api,
            self.tmp / "spool", BatchSettings.model_validate({"poll_s": 1, **settings}),
            transport=_configuration().transport, limits=self.api.limits, sleep=sleep,
            offload=inline, heard=heard,
        )  # fmt: skip

    def feed(self, runner: BatchRunner, restarts: list[BatchRunner] | None = None) -> Feed:
        """``runner``'s feed; a restart hands out the next of ``restarts``."""
        spares = list(restarts or [])

        async def restart() -> BatchRunner:
            return spares.pop(0)

        return Feed("qwen", (QWEN.name,), runner, restart, runner.shape)

    def drive(
        self, runner: BatchRunner, feed: Feed | None = None, *,
        policy: FeedPolicy | None = None, cap: SpendCap | None = None,
    ) -> Feed:  # fmt: skip
        """Drive ``runner`` with the run's feeder until nothing is left to hand it."""
        feed = feed or self.feed(runner)
        feeder = Feeder(self.ledger, policy or FeedPolicy(), self.echoed.append, no_wait, cap=cap)
        asyncio.run(feeder.drive(feed))
        return feed

    def drive_fresh(self, **settings: Any) -> BatchRunner:
        """A fresh runner with ``settings``, driven to the end."""
        runner = self.runner(**settings)
        self.drive(runner)
        return runner

    def answered(self) -> int:
        rows = self.store.repository.query(
            "SELECT count(*) FROM responses WHERE outcome = 'answer'"
        )[1]
        return int(rows[0][0])

    def sent_once(self) -> bool:
        """No key went in two batches, and the simulator was paid for none twice."""
        return max(self.api.submitted.values()) == 1 and self.simulator.stats.paid_twice == 0


@pytest.fixture
def rig(small_cohort: Cohort, small_root: DataRoot, tmp_path: Path) -> Rig:
    return _rig(small_cohort, small_root, tmp_path, SimSpec(behaviour=CLEAN))


def _rig(cohort: Cohort, root: DataRoot, tmp: Path, spec: SimSpec) -> Rig:
    store = Store(tmp / "exp.duckdb")
    keys = plan(cohort, [_configuration()], budgets=(8, 16), box=False)
    store.register(
        [Registration(QWEN.name, "p" * 64, "qwen", QWEN.model, 3, "{}")],
        [
            GridRow(
                configuration=k.configuration,
                condition=k.condition,
                budget=k.budget,
                qid=k.qid,
                attempts=3,
            )
            for k in keys
        ],
    )
    simulator = Simulator(cohort, root.images, VariantCache(tmp / "v"), spec)
    return Rig(store, FakeBatches(simulator, QWEN.model), simulator, cohort, root, tmp)


# -- the port's shape and its leases --------------------------------------------------------------


def test_the_shape_is_a_batch_a_lease_and_the_open_batches_in_all(rig: Rig) -> None:
    shape = rig.runner(max_requests=7, max_open=3, resubmits=1).shape
    assert (shape.holds, shape.lease, shape.resends, shape.one_attempt) == (21, 7, 1, True)
    rig.api.limits = BatchLimits(max_requests=5, max_bytes=1024)  # the provider's is lower
    assert rig.runner(max_requests=7, max_open=3).shape.lease == 5


def test_every_request_goes_in_batches_under_the_limit_and_is_stored_once(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    runner = rig.runner(max_requests=7)
    feed = rig.drive(runner)
    assert rig.store.repository.pending() == []
    assert feed.tally.finished == requests == rig.answered() == runner.outcome.tally.finished
    assert runner.outcome.tally.answered == requests and feed.tally.answered == requests
    assert all(len(b.lines) <= 7 for b in rig.api.batches.values())
    assert len(rig.api.batches) == -(-requests // 7) == runner.outcome.created
    assert rig.sent_once()
    records = rig.store.repository.batches()
    assert {b.phase for b in records} == {"read"} and sum(b.requests for b in records) == requests
    assert list(rig.tmp.joinpath("spool").iterdir()) == []  # no file left behind
    assert rig.api.files == {}  # input files deleted once read
    assert runner.open_batches() == []


def _open_at_each_create(rig: Rig) -> list[int]:
    """The batches in progress as each create is asked, filled in as the rig runs."""
    seen: list[int] = []
    real_create = rig.api.create

    async def create(source: Source, tag: str) -> RemoteBatch:
        seen.append(sum(b.state == "in_progress" for b in rig.api.batches.values()))
        return await real_create(source, tag)

    rig.api.create = create  # type: ignore[method-assign]
    return seen


def test_at_most_max_open_batches_are_open_at_once(rig: Rig) -> None:
    open_at_create = _open_at_each_create(rig)
    rig.drive_fresh(max_requests=3, max_open=2)
    assert rig.store.repository.pending() == [] and max(open_at_create) == 1 and rig.sent_once()
    assert len(open_at_create) > 2


def test_a_lease_gives_back_what_its_batch_has_no_room_for_and_it_goes_later(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    runner = rig.runner()
    # Room for about three lines a file, in leases of ten: each batch gives most back.
    largest = max(len(runner._api(QWEN.model).line(str(i), runner._build(c.request)))
                  for i, c in enumerate(rig.store.repository.pending()))  # fmt: skip
    runner = rig.runner(max_requests=10, max_bytes=3 * largest + 1)
    given_back: list[int] = []
    lease = runner.lease

    async def watched(calls: list[Pending], input_bound: int | None = None) -> Outcome:
        outcome = await lease(calls, input_bound)
        given_back.append(len(outcome.given_back))
        return outcome

    runner.lease = watched  # type: ignore[method-assign]
    rig.drive(runner)
    assert rig.store.repository.pending() == [] and rig.answered() == requests and rig.sent_once()
    assert sum(given_back) > 0 and max(len(b.lines) for b in rig.api.batches.values()) < 10


def test_unparseable_answers_go_again_in_later_batches(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    spec = SimSpec(behaviour=Behaviour(refusal=0.5, wrong_count=0.0, prose=0.0))
    rig = _rig(small_cohort, small_root, tmp_path, spec)
    requests = len(rig.store.repository.pending())
    outcome = rig.drive_fresh().outcome
    # retries are attempts, not requests
    assert outcome.tally.finished == requests < outcome.tally.attempts
    attempts = dict(
        rig.store.repository.query("SELECT attempt, count(*) FROM responses GROUP BY ALL")[1]
    )
    assert attempts[1] > 0 and attempts[2] > 0  # retries went, each in a batch after its failure
    assert rig.store.repository.pending() == [] and rig.sent_once()


# -- a driver killed, a worker dead ---------------------------------------------------------------


@pytest.mark.parametrize("point", ["upload", "create"])
def test_a_run_killed_at_each_step_resumes_without_sending_a_key_twice(
    rig: Rig, point: str
) -> None:
    rig.api.kill_at = point
    with pytest.raises(Killed):
        rig.drive_fresh(max_requests=5)
    rig.api.dead = False  # a new driver
    phases = Counter(b.phase for b in rig.store.repository.batches())
    assert phases == Counter({"preparing" if point == "upload" else "uploaded": 1})
    rig.drive_fresh(max_requests=5)  # a new runner and feeder: the ledger's batch collected first
    assert rig.store.repository.pending() == [] and rig.sent_once()
    if point == "create":  # the batch made before the kill was found and collected
        assert len(rig.api.batches) == len(rig.store.repository.batches())
    else:
        assert Counter(b.phase for b in rig.store.repository.batches())["abandoned"] == 1


def test_a_run_killed_while_polling_or_reading_collects_the_same_batch(rig: Rig) -> None:
    real = rig.ledger.write_responses
    calls = 0

    async def dying(rows: list) -> object:  # type: ignore[type-arg]
        nonlocal calls
        calls += 1
        if calls == 2:  # half way through the results
            rig.api.dead = True
            raise Killed
        return await real(rows)

    rig.ledger.write_responses = dying  # type: ignore[method-assign]
    with pytest.raises(Killed):
        rig.drive_fresh(max_requests=5)
    rig.api.dead = False
    assert any(b.phase == "ended" for b in rig.store.repository.batches())
    rig.drive_fresh(max_requests=5)
    assert rig.store.repository.pending() == [] and rig.sent_once()


@pytest.mark.parametrize("point", ["upload", "create"])
def test_a_worker_dying_at_each_step_is_replaced_and_no_key_goes_twice(
    rig: Rig, point: str
) -> None:
    requests = len(rig.store.repository.pending())
    rig.api.kill_at, rig.api.death = point, WorkerLost
    dying, fresh = rig.runner(max_requests=5), rig.runner(max_requests=5)
    feed = rig.drive(dying, rig.feed(dying, [fresh]))
    assert feed.restarts == 1 and feed.port is fresh
    assert rig.store.repository.pending() == [] and rig.answered() == requests and rig.sent_once()
    assert rig.echoed[0].startswith("backend qwen: actor restarted")


def test_a_create_whose_answer_was_lost_is_found_not_made_again(rig: Rig) -> None:
    rig.api.lose_create_answer = True
    rig.drive_fresh()
    assert rig.store.repository.pending() == []
    assert rig.sent_once() and len(rig.api.batches) == 1


# -- a provider that takes the requests in the create (Anthropic's) ------------------------------


def test_an_inline_provider_gets_the_file_in_its_create_and_nothing_is_uploaded(rig: Rig) -> None:
    rig.api.inline = True
    phases_at_create: list[str] = []
    real_create = rig.api.create

    async def create(source: Source, tag: str) -> RemoteBatch:
        phases_at_create.append(rig.store.repository.batches(ids=[tag])[0].phase)
        return await real_create(source, tag)

    rig.api.create = create  # type: ignore[method-assign]
    requests = len(rig.store.repository.pending())
    rig.drive_fresh(max_requests=7)
    assert rig.store.repository.pending() == [] and rig.answered() == requests and rig.sent_once()
    # Recorded as handed over before each create was sent; nothing looked for on a first try.
    assert set(phases_at_create) == {"uploaded"} and len(phases_at_create) == -(-requests // 7)
    assert rig.api.looked == 0 and rig.api.files == {}
    assert {b.input_file for b in rig.store.repository.batches()} == {None}
    assert list(rig.tmp.joinpath("spool").iterdir()) == []


@pytest.mark.parametrize("made", [True, False])
def test_an_inline_batch_killed_in_its_create_is_found_or_known_never_made(
    rig: Rig, made: bool
) -> None:
    rig.api.inline = True
    rig.api.kill_at = "create" if made else "send"
    with pytest.raises(Killed):
        rig.drive_fresh(max_requests=5)
    rig.api.dead = False  # a new driver: its file of requests is gone with the old one's run
    assert [b.phase for b in rig.store.repository.batches()] == ["uploaded"]
    rig.drive_fresh(max_requests=5)
    assert rig.store.repository.pending() == [] and rig.sent_once()
    first = rig.store.repository.batches()[0]
    if made:  # found by the ids it holds, and collected
        assert first.phase == "read" and first.remote_id == "batch_1"
    else:  # nothing holds its requests: never made, and its keys went in later batches
        assert first.phase == "abandoned" and "never created" in (first.message or "")


def test_an_inline_batch_that_cannot_be_told_yet_is_neither_made_again_nor_given_up(
    rig: Rig,
) -> None:
    rig.api.inline = True
    rig.api.lose_create_answer = True  # made, its answer lost, and then no find can tell
    rig.api.undecided = 100
    runner = rig.runner(max_requests=500)
    asyncio.run(runner.lease(rig.store.repository.pending()))
    (record,) = rig.store.repository.batches()
    assert record.phase == "uploaded" and "not yet known to be created" in (record.message or "")
    assert len(rig.api.batches) == 1 and rig.store.repository.pending() == []  # its keys held
    rig.api.undecided = 0  # a later run, once the candidates ended, tells
    rig.drive_fresh()
    assert rig.store.repository.batches()[0].phase == "read" and rig.sent_once()
    assert rig.store.repository.pending() == []


@pytest.mark.parametrize(
    "failure",
    [
        BadId("the server answered a batch id with characters outside [A-Za-z0-9_./:-]"),
        Refused("no list for you", status=403),
    ],
    ids=["bad-id", "refused"],
)
@pytest.mark.parametrize("inline", [False, True], ids=["file", "inline"])
def test_a_look_that_fails_for_good_holds_the_keys_of_a_batch_that_may_exist(
    rig: Rig, failure: CallError, inline: bool
) -> None:
    """A create's answer is lost, and the look for it then fails as no retry mends: whether
    the batch was made is not known, so its keys are held, never sent again this run, and
    batches are still made; the next run that can look finds it."""
    rig.api.inline = inline
    rig.api.lose_create_answer = True
    rig.api.find_fails = failure
    runner = rig.runner(max_requests=500)
    asyncio.run(runner.lease(rig.store.repository.pending()))
    (record,) = rig.store.repository.batches()
    assert record.phase == "uploaded" and "not yet known to be created" in (record.message or "")
    assert runner.outcome.not_made is None and rig.store.repository.pending() == []
    assert len(rig.api.batches) == 1
    rig.api.find_fails = None
    rig.drive_fresh()
    assert rig.store.repository.batches()[0].phase == "read" and rig.sent_once()


def test_a_throttled_create_is_tried_again_without_a_look(rig: Rig) -> None:
    """A 429 refuses the create before anything is made: its retry needs no look."""
    rig.api.throttle_creates = 2
    rig.drive_fresh(max_requests=500)
    assert rig.api.looked == 0 and len(rig.api.batches) == 1 and rig.sent_once()
    assert rig.store.repository.pending() == []


def test_after_the_driver_is_gone_nothing_is_uploaded_and_leases_give_all_back(rig: Rig) -> None:
    runner = rig.runner(max_requests=5)
    runner.driver_gone("the driver's node is gone")
    calls = rig.store.repository.pending()[:5]
    outcome = asyncio.run(runner.lease(calls))
    assert outcome.given_back == tuple(calls) and outcome.tally.finished == 0
    assert rig.api.files == {} and rig.api.batches == {} and rig.store.repository.batches() == []
    # and the feeder is told why, so the run says it rather than ending as if done
    assert outcome.stop == Stop(kind="driver", why="the driver's node is gone")


def test_while_the_driver_is_silent_no_batch_is_created_and_once_heard_it_is(rig: Rig) -> None:
    """A paused driver (its worker's lifeline silent): the lease's batch waits before its
    create, and is created, followed and read once the driver is heard again."""
    heard, waiting = asyncio.Event(), asyncio.Event()

    async def until_heard() -> None:
        waiting.set()
        await heard.wait()

    async def main() -> Outcome:
        runner = rig.runner(max_requests=5, heard=until_heard)
        lease = asyncio.create_task(runner.lease(rig.store.repository.pending()[:5]))
        await asyncio.wait_for(waiting.wait(), 30)
        assert rig.api.batches == {} and not lease.done()  # nothing created while silent
        heard.set()
        return await asyncio.wait_for(lease, 30)

    outcome = asyncio.run(main())
    assert outcome.tally.finished == 5 and outcome.stop is None and outcome.given_back == ()
    assert len(rig.api.batches) == 1 and rig.sent_once()


# -- batches that end badly -----------------------------------------------------------------------


def test_an_expired_batch_keeps_its_answers_and_its_other_keys_go_again(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    rig.api.expire = {1}
    outcome = rig.drive_fresh().outcome
    assert rig.store.repository.pending() == [] and rig.answered() == requests
    first = rig.store.repository.batches()[0]
    assert first.state == "expired" and first.answered == requests // 2
    assert first.unrun == requests - requests // 2 == outcome.unrun
    assert rig.simulator.stats.paid_twice == 0  # the expired half was answered once, later


def test_a_batch_that_never_runs_is_resubmitted_only_as_often_as_allowed(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    rig.api.expire = {1, 2, 3, 4}  # every batch ends with half its lines unrun
    rig.api.polls_to_end = 1
    outcome = rig.drive_fresh(resubmits=1).outcome
    # Each attempt goes at most twice: what two batches left unrun waits for the next run.
    assert Counter(rig.api.submitted.values()).keys() <= {1, 2}
    assert outcome.unrun > 0 and rig.answered() < requests


def test_after_a_failed_batch_no_batch_is_made_until_another_ends(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    rig.api.polls_to_end = 4  # the others end on their fourth poll ...
    real_get = rig.api.get
    held: Counter[str] = Counter()

    async def get(batch_id: str) -> RemoteBatch:
        batch = rig.api.batches[batch_id]
        first, _, third, *_ = [*rig.api.batches, "", ""]
        if batch_id == first and batch.state == "in_progress":
            batch.polls += 1
            if batch.polls == 3:  # ... the first fails on its third (OpenAI: enqueued tokens)
                batch.state = "failed"
            return rig.api._remote(batch)
        if batch_id == third and held[third] < 2:  # ... the third two polls after the others
            held[third] += 1
            return rig.api._remote(batch)
        return await real_get(batch_id)

    made_while_open = _open_at_each_create(rig)
    rig.api.get = get  # type: ignore[method-assign]
    rig.drive_fresh(max_requests=10, max_open=3)
    assert rig.store.repository.pending() == [] and rig.answered() == requests
    first = rig.store.repository.batches()[0]
    assert first.state == "failed" and first.unrun == 10
    # Three made while there was room; when the first failed two were open, and the next was
    # made only once one of them had ended (room alone would have made it beside both).
    assert made_while_open[:4] == [0, 1, 2, 1]


def test_bad_result_lines_are_each_one_stored_problem_and_the_rest_kept(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())

    def bad(first: str) -> list[ResultLine]:
        return [
            ResultLine("out line 901", "gb-unknown-r0-a0", reply=None, status=200,
                       error=Transient("x")),
            ResultLine("out line 902", first, error=Transient("again")),
            ResultLine("out line 903", None, problem="not JSON: Expecting value"),
        ]  # fmt: skip

    original = rig.api._end

    def end(batch: _Batch) -> None:
        rig.api.bad_lines = bad(batch.lines[0][0])
        original(batch)

    rig.api._end = end  # type: ignore[method-assign]
    outcome = rig.drive_fresh().outcome
    assert rig.answered() == requests and rig.store.repository.pending() == []
    problems = rig.store.repository.query("SELECT line, message FROM batch_problems ORDER BY line")[
        1
    ]
    assert [p[0] for p in problems] == ["out line 901", "out line 902", "out line 903"]
    assert "does not hold" in problems[0][1] and "second result" in problems[1][1]
    assert outcome.problems == 3


def test_an_answer_from_another_model_is_stored_as_an_error_naming_batch_and_line(
    rig: Rig,
) -> None:
    rig.api.model_said = "qwen-something-else"
    rig.drive_fresh()  # resubmits allowed: an error no resend mends is held back all the same
    rows = rig.store.repository.query("SELECT DISTINCT outcome, error_code FROM responses")[1]
    assert rows == [("fatal", "model_mismatch")]
    message = rig.store.repository.query("SELECT error_message FROM responses LIMIT 1")[1][0][0]
    assert "batch gb-" in message and "line" in message and "qwen-something-else" in message
    assert (
        rig.store.repository.pending() != [] and max(rig.api.submitted.values()) == 1
    )  # a later run's


def test_a_batch_of_an_earlier_runs_own_simulator_is_given_up_not_polled(rig: Rig) -> None:
    old = BatchRecord(
        id="gb-old", backend="qwen", provider="qwen", model=QWEN.model,
        base_url="http://127.0.0.1:1", phase="submitted", remote_id="batch_gone", requests=1,
        created_at=datetime.now(UTC),
    )  # fmt: skip
    first = rig.store.repository.pending()[0]
    rig.store.repository.record_batch(
        old, [BatchKey.of(first.attempt_key, batch="gb-old", custom_id="x")]
    )
    runner = rig.runner()
    runner.where = Where("qwen", "qwen", "http://batch.invalid", None, simulated=True)
    rig.drive(runner)
    (record,) = rig.store.repository.batches(ids=["gb-old"])
    assert record.phase == "abandoned" and "simulator of an earlier run" in (record.message or "")
    assert rig.store.repository.pending() == []  # its request went in a batch of this run


def test_files_keep_under_the_byte_limit_and_a_line_over_it_alone_goes_in_none(
    rig: Rig,
) -> None:
    requests = len(rig.store.repository.pending())
    rig.drive_fresh(max_bytes=1)  # every line is over it
    assert rig.api.batches == {} and len(rig.store.repository.pending()) == requests
    assert rig.store.repository.batches() == []  # nothing recorded: nothing was sent
    largest = 0

    real_upload = rig.api.upload

    async def upload(path: Path, display_name: str) -> str:
        nonlocal largest
        largest = max(largest, path.stat().st_size)
        return await real_upload(path, display_name)

    rig.api.upload = upload  # type: ignore[method-assign]
    rig.drive_fresh(max_bytes=400_000)
    assert rig.store.repository.pending() == [] and 0 < largest <= 400_000
    assert len(rig.api.batches) > 1 and rig.sent_once()


# -- what stops submitting ------------------------------------------------------------------------


def test_quota_on_create_stops_submitting_and_leaves_the_rest_pending(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    rig.api.quota_after = 1
    runner = rig.runner(max_requests=5)
    feed = rig.drive(runner)
    assert feed.stop is not None and feed.stop.kind == "quota"
    assert "insufficient_quota" in feed.stop.why and runner.outcome.stop == feed.stop
    assert rig.answered() == 5 and len(rig.store.repository.pending()) == requests - 5
    phases = Counter(b.phase for b in rig.store.repository.batches())
    assert phases == Counter({"read": 1, "abandoned": 1})
    assert rig.echoed == [f"backend qwen: quota exhausted, stopped: {feed.stop.why}"]


def test_after_the_quota_wait_batches_are_made_again(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())
    rig.api.quota_after = 1
    runner = rig.runner(max_requests=5)
    real_create = rig.api.create

    async def create(source: Source, tag: str) -> RemoteBatch:
        try:
            return await real_create(source, tag)
        except QuotaExhausted:
            rig.api.quota_after = None  # the quota is back after the wait
            raise

    rig.api.create = create  # type: ignore[method-assign]
    feed = rig.drive(runner, policy=FeedPolicy(wait_on_quota_s=60.0))
    assert feed.stop is None and runner.outcome.stop is None
    assert rig.store.repository.pending() == [] and rig.answered() == requests and rig.sent_once()


def test_a_refused_key_stops_the_backend_and_its_batch_is_left_for_the_next_run(rig: Rig) -> None:
    async def refused(batch_id: str) -> RemoteBatch:
        raise Refused("Incorrect API key provided", status=401, code="invalid_api_key")

    rig.api.get = refused  # type: ignore[method-assign]
    feed = rig.drive(rig.runner(max_requests=5, max_open=1))
    assert feed.stop is not None and feed.stop.kind == "refused"
    assert "invalid_api_key" in feed.stop.why
    assert len(rig.api.batches) == 1  # none made after the refusal
    assert [b.phase for b in rig.store.repository.batches()] == [
        "submitted"
    ]  # the next run polls it


def test_a_throttled_poll_waits_the_servers_retry_after_and_goes_on(rig: Rig) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(0)

    real_get = rig.api.get
    throttled = 0

    async def get(batch_id: str) -> RemoteBatch:
        nonlocal throttled
        if throttled < 2:
            throttled += 1
            raise RateLimited("slow down", status=429, retry_after=7.5)
        return await real_get(batch_id)

    rig.api.get = get  # type: ignore[method-assign]
    feed = rig.drive(rig.runner(sleep=sleep))
    assert rig.store.repository.pending() == [] and feed.stop is None
    assert waits[:2] == [7.5, 7.5]  # each throttle waited the server's time, then polled again


def test_a_file_the_provider_refuses_stops_making_batches_with_its_reason(rig: Rig) -> None:
    requests = len(rig.store.repository.pending())

    async def refused(path: Path, display_name: str) -> str:
        raise Fatal("File is too large: at most 209715200 bytes", status=400)

    rig.api.upload = refused  # type: ignore[method-assign]
    outcome = rig.drive_fresh(max_requests=10).outcome
    assert outcome.not_made is not None and "File is too large" in outcome.not_made
    (record,) = rig.store.repository.batches()  # one tried, not one per resend
    assert record.phase == "abandoned" and "upload failed" in (record.message or "")
    assert len(rig.store.repository.pending()) == requests


# -- the spending cap -----------------------------------------------------------------------------


def _batch_price(input_tokens: int, output_tokens: int) -> float:
    """Half of $2 in and $8 out per million tokens: the batch price."""
    return (2 * input_tokens + 8 * output_tokens) / 2_000_000


def test_batches_are_only_as_large_as_the_money_left_pays_for(rig: Rig) -> None:
    estimate, max_output = 500, 1_000
    worst = WorstCase(_batch_price, 4 * estimate, {QWEN.name: max_output}, {QWEN.name: 3},
                      one_attempt=True)  # fmt: skip
    line = worst(rig.store.repository.pending()[0])  # every line's worst case
    rig.api.usage = (3 * estimate, max_output)  # 3x the estimate, within the bounds
    cap = SpendCap(line * 17.5)
    runner = rig.runner(max_requests=8)
    spent_at_create: list[tuple[int, float]] = []
    real_create = rig.api.create

    async def create(source: Source, tag: str) -> RemoteBatch:
        assert isinstance(source, str)
        spent_at_create.append((len(rig.api.files[source]), cap.spent))
        return await real_create(source, tag)

    rig.api.create = create  # type: ignore[method-assign]
    feed = rig.feed(runner)
    feed.cost, feed.worst = _batch_price, worst
    rig.drive(runner, feed, cap=cap)
    assert (
        feed.stop is not None
        and feed.stop.kind == "capped"
        and cap.spent <= cap.limit
        and cap.reserved == 0
    )
    assert all(lines * line <= cap.limit - spent + 1e-9 for lines, spent in spent_at_create)
    assert feed.spent == pytest.approx(cap.spent)
    answers = rig.answered()
    assert cap.spent == pytest.approx(answers * _batch_price(3 * estimate, max_output))
    assert answers >= 17 and rig.sent_once()  # the money went on lines, each once
    assert rig.store.repository.pending() != []  # the rest wait for more money


# Issue 56: the five replies of a hostile server, as a batch's result lines.
HOSTILE_LINES: dict[str, dict[str, Any]] = {
    "negative": {"usage": {"prompt_tokens": -1_000_000_000, "completion_tokens": 1000}},
    "past-int64": {"usage": {"prompt_tokens": 10**30, "completion_tokens": 1000}},
    "past-float": {"usage": {"prompt_tokens": 10**400, "completion_tokens": 1000}},
    "no-choices": {"usage": {"prompt_tokens": 1000, "completion_tokens": 1000}, "choices": []},
    "no-usage": {},
}


@pytest.mark.parametrize("name", HOSTILE_LINES)
def test_a_hostile_usage_in_a_batch_line_keeps_the_bill_under_the_cap_and_every_line_stored(
    rig: Rig, name: str
) -> None:
    max_output = QWEN.decoding.max_output_tokens
    bound = 1000  # the cap's bound on a line's input: the server bills 1,000 in
    worst = WorstCase(_batch_price, bound, {QWEN.name: max_output}, {QWEN.name: 3},
                      one_attempt=True)  # fmt: skip
    line = _batch_price(1000, max_output)  # what the server bills a line at most
    cap = SpendCap(line * 12.5)
    rig.api.hostile = HOSTILE_LINES[name]
    runner = rig.runner(max_requests=4)
    feed = rig.feed(runner)
    feed.cost, feed.worst = _batch_price, worst
    rig.drive(runner, feed, cap=cap)  # nothing raised
    ran = [custom for b in rig.api.batches.values() for custom, _ in b.lines]
    rows = rig.store.repository.query(
        "SELECT outcome, input_tokens, output_tokens, usage_unknown FROM responses"
    )[1]
    # The server bills each count it reported, its real input (1,000) and at most
    # max_output_tokens where it reported none; the run counts an unknown count at the worst
    # case the cap reserved (the bound, max_output_tokens).
    output = 1000 if "completion_tokens" in HOSTILE_LINES[name].get("usage", {}) else max_output
    billed = len(ran) * _batch_price(1000, output)  # the server's bill
    assert 0 < billed <= cap.limit and cap.spent == pytest.approx(billed)
    # Every line the server answered is in a row: one per attempt, a line sent again in a
    # later batch (an error, sent again as an expired one is) adding its bill to its row's.
    assert len(rows) == len(set(ran))
    assert sum(_batch_price(r[1], r[2]) for r in rows) == pytest.approx(billed)
    if name == "no-choices":  # billed as reported, though no answer could be read: an error
        assert {(r[0], r[3]) for r in rows} == {("transient", 0)}
        assert sum(r[1] for r in rows) == 1000 * len(ran)
    else:  # each unknown count at the worst case reserved for it
        assert set(rows) == {("answer", bound, output, 1)}
    assert feed.spent == pytest.approx(billed)
