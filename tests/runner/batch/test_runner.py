"""BatchRunner against an in-memory batch API whose lines the simulator answers (as online), with
a real store and no HTTP: splitting, parse retries, resume after a kill at each step, expiry,
quota, and result lines that cannot be read. The wires over HTTP have tests of their own."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

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
    Fatal,
    OpenAIChat,
    QuotaExhausted,
    RateLimited,
    Transient,
    provider_named,
)
from runner.backends._wire import Body, splice_json
from runner.batch import (
    BatchLimits,
    BatchRunner,
    BatchSettings,
    RemoteBatch,
    ResultLine,
    StoreLedger,
    Where,
)
from runner.simulator import Behaviour, SimSpec, Simulator
from runner.store import BatchKey, BatchRecord, GridRow, Registration, Store

QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0, prose=0.0)
PATH = "/v1/chat/completions"


class Killed(BaseException):
    """The driver dies here (not an Exception: nothing on the way catches it)."""


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
        self.files: dict[str, list[tuple[str, bytes]]] = {}
        self.batches: dict[str, _Batch] = {}
        self.submitted: Counter[str] = Counter()  # custom id: batches it was created in
        self.polls_to_end = polls_to_end
        self.expire: set[int] = set()  # serials of batches that expire half done
        self.quota_after: int | None = None
        self.lose_create_answer = False  # the batch is made, the answer lost
        self.kill_at: str | None = None  # "upload", "create"
        self.bad_lines: list[ResultLine] = []  # added to the first batch's results
        self.model_said: str | None = None
        self._ids = itertools.count(1)

    def line(self, custom_id: str, request: Request) -> Body:
        doc = {"custom_id": custom_id, "method": "POST", "url": PATH,
               "body": self.wire.payload(request)}  # fmt: skip
        image = request.image.data_url if request.image is not None else None
        body = splice_json(doc, image)
        return Body((*body.parts, b"\n"))

    async def upload(self, path: Path, display_name: str) -> str:
        if self.kill_at == "upload":
            raise Killed
        lines = []
        for raw in path.read_bytes().splitlines():
            doc = json.loads(raw)
            lines.append((doc["custom_id"], json.dumps(doc["body"]).encode()))
        file = f"file-{next(self._ids)}"
        self.files[file] = lines
        return file

    async def create(self, file_id: str, tag: str) -> RemoteBatch:
        if self.quota_after is not None and len(self.batches) >= self.quota_after:
            raise QuotaExhausted("insufficient_quota", status=429, code="insufficient_quota")
        batch = _Batch(f"batch_{next(self._ids)}", tag, file_id, self.files[file_id])
        self.batches[batch.id] = batch
        self.submitted.update(c for c, _ in batch.lines)
        if self.kill_at == "create":
            raise Killed
        if self.lose_create_answer:
            self.lose_create_answer = False
            raise Transient("no response within 60 s")
        return self._remote(batch)

    async def get(self, batch_id: str) -> RemoteBatch:
        batch = self.batches[batch_id]
        batch.polls += 1
        if batch.state == "in_progress" and batch.polls >= self.polls_to_end:
            self._end(batch)
        return self._remote(batch)

    async def find(self, tag: str, file_id: str | None) -> RemoteBatch | None:
        found = [b for b in self.batches.values() if b.tag == tag]
        return self._remote(found[0]) if found else None

    async def cancel(self, batch_id: str) -> RemoteBatch:
        raise NotImplementedError

    async def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
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
            reply = self.wire.decode(json.dumps(doc).encode())
            batch.results.append(ResultLine(where, custom, reply=reply, status=status))
        if serial == 1:
            batch.results.extend(self.bad_lines)
        batch.state = "expired" if expires else "completed"

    def _remote(self, batch: _Batch) -> RemoteBatch:
        return RemoteBatch(batch.id, batch.state, batch.state, batch.tag, batch.file)  # type: ignore[arg-type]


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

    def runner(self, **settings: object) -> BatchRunner:
        configuration = _configuration()
        builder = task_of(self.cohort).builder(self.root.images, VariantCache(self.tmp / "v"))
        where = Where("qwen", "qwen", "http://batch.invalid", "DASHSCOPE_API_KEY")

        async def no_wait(_: float) -> None:
            return None

        return BatchRunner(
            where, [configuration], builder, StoreLedger(self.store), lambda *_: self.api,
            self.tmp / "spool", BatchSettings.model_validate({"poll_s": 1, **settings}),
            sleep=no_wait,
        )  # fmt: skip

    def run(self, **settings: object) -> object:
        return asyncio.run(self.runner(**settings).run())

    def answered(self) -> int:
        rows = self.store.query("SELECT count(*) FROM responses WHERE outcome = 'answer'")[1]
        return int(rows[0][0])


@pytest.fixture
def rig(small_cohort: Cohort, small_root: DataRoot, tmp_path: Path) -> Rig:
    return _rig(small_cohort, small_root, tmp_path, SimSpec(behaviour=CLEAN))


def _rig(cohort: Cohort, root: DataRoot, tmp: Path, spec: SimSpec) -> Rig:
    store = Store(tmp / "exp.duckdb")
    keys = plan(cohort, [_configuration()], budgets=(8, 16), box=False)
    store.register(
        [Registration(QWEN.name, "p" * 64, "qwen", QWEN.model, 3, "{}")],
        [GridRow(k.configuration, k.condition, k.budget, k.qid, 3) for k in keys],
    )
    simulator = Simulator(cohort, root.images, VariantCache(tmp / "v"), spec)
    return Rig(store, FakeBatches(simulator, QWEN.model), simulator, cohort, root, tmp)


def test_every_request_goes_in_batches_under_the_limit_and_is_stored_once(rig: Rig) -> None:
    requests = len(rig.store.pending())
    outcome = rig.runner(max_requests=7).run
    result = asyncio.run(outcome())
    assert rig.store.pending() == []
    assert result.answered == requests == rig.answered() == result.finished
    assert all(len(b.lines) <= 7 for b in rig.api.batches.values())
    assert len(rig.api.batches) == -(-requests // 7)
    assert max(rig.api.submitted.values()) == 1 and rig.simulator.stats.paid_twice == 0
    records = rig.store.batches()
    assert {b.phase for b in records} == {"read"} and sum(b.requests for b in records) == requests
    assert list(rig.tmp.joinpath("spool").iterdir()) == []  # no file left behind
    assert rig.api.files == {}  # input files deleted once read


def test_unparseable_answers_go_again_in_later_batches(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    spec = SimSpec(behaviour=Behaviour(refusal=0.5, wrong_count=0.0, prose=0.0))
    rig = _rig(small_cohort, small_root, tmp_path, spec)
    requests = len(rig.store.pending())
    outcome = asyncio.run(rig.runner().run())
    assert outcome.finished == requests < outcome.attempts  # retries are attempts, not requests
    attempts = dict(rig.store.query("SELECT attempt, count(*) FROM responses GROUP BY ALL")[1])
    assert attempts[1] > 0 and attempts[2] > 0  # retries went, each in a batch after its failure
    assert rig.store.pending() == []
    assert max(rig.api.submitted.values()) == 1 and rig.simulator.stats.paid_twice == 0


@pytest.mark.parametrize("point", ["upload", "create"])
def test_a_run_killed_at_each_step_resumes_without_sending_a_key_twice(
    rig: Rig, point: str
) -> None:
    rig.api.kill_at = point
    with pytest.raises(Killed):
        rig.run(max_requests=5)
    rig.api.kill_at = None
    phases = Counter(b.phase for b in rig.store.batches())
    assert phases == Counter({"preparing" if point == "upload" else "uploaded": 1})
    rig.run(max_requests=5)
    assert rig.store.pending() == []
    assert max(rig.api.submitted.values()) == 1 and rig.simulator.stats.paid_twice == 0
    if point == "create":  # the batch made before the kill was found and collected
        assert len(rig.api.batches) == len(rig.store.batches())


def test_a_run_killed_while_polling_or_reading_collects_the_same_batch(rig: Rig) -> None:
    runner = rig.runner(max_requests=5)
    ledger = runner._ledger
    real = ledger.write_responses
    calls = 0

    async def dying(rows: list) -> object:  # type: ignore[type-arg]
        nonlocal calls
        calls += 1
        if calls == 2:  # half way through the results
            raise Killed
        return await real(rows)

    ledger.write_responses = dying  # type: ignore[method-assign]
    with pytest.raises(Killed):
        asyncio.run(runner.run())
    assert any(b.phase == "ended" for b in rig.store.batches())
    rig.run(max_requests=5)
    assert rig.store.pending() == []
    assert max(rig.api.submitted.values()) == 1 and rig.simulator.stats.paid_twice == 0


def test_a_create_whose_answer_was_lost_is_found_not_made_again(rig: Rig) -> None:
    rig.api.lose_create_answer = True
    rig.run()
    assert rig.store.pending() == []
    assert max(rig.api.submitted.values()) == 1 and len(rig.api.batches) == 1


def test_an_expired_batch_keeps_its_answers_and_its_other_keys_go_again(rig: Rig) -> None:
    requests = len(rig.store.pending())
    rig.api.expire = {1}
    outcome = asyncio.run(rig.runner().run())
    assert rig.store.pending() == [] and rig.answered() == requests
    first = rig.store.batches()[0]
    assert first.state == "expired" and first.answered == requests // 2
    assert first.unrun == requests - requests // 2 == outcome.unrun
    assert rig.simulator.stats.paid_twice == 0  # the expired half was answered once, later


def test_quota_on_create_stops_submitting_and_leaves_the_rest_pending(rig: Rig) -> None:
    requests = len(rig.store.pending())
    rig.api.quota_after = 1
    outcome = asyncio.run(rig.runner(max_requests=5).run())
    assert outcome.quota is not None and "insufficient_quota" in outcome.quota
    assert rig.answered() == 5 and len(rig.store.pending()) == requests - 5
    phases = Counter(b.phase for b in rig.store.batches())
    assert phases == Counter({"read": 1, "abandoned": 1})


def test_bad_result_lines_are_each_one_stored_problem_and_the_rest_kept(rig: Rig) -> None:
    requests = len(rig.store.pending())
    first_id = None

    def bad(first: str) -> list[ResultLine]:
        return [
            ResultLine("out line 901", "gb-unknown-r0-a0", reply=None, status=200,
                       error=Transient("x")),
            ResultLine("out line 902", first, error=Transient("again")),
            ResultLine("out line 903", None, problem="not JSON: Expecting value"),
        ]  # fmt: skip

    original = rig.api._end

    def end(batch: _Batch) -> None:
        nonlocal first_id
        first_id = batch.lines[0][0]
        rig.api.bad_lines = bad(first_id)
        original(batch)

    rig.api._end = end  # type: ignore[method-assign]
    outcome = asyncio.run(rig.runner().run())
    assert rig.answered() == requests and rig.store.pending() == []
    problems = rig.store.query("SELECT line, message FROM batch_problems ORDER BY line")[1]
    assert [p[0] for p in problems] == ["out line 901", "out line 902", "out line 903"]
    assert "does not hold" in problems[0][1] and "second result" in problems[1][1]
    assert outcome.problems == 3


def test_an_answer_from_another_model_is_stored_as_an_error_naming_batch_and_line(
    rig: Rig,
) -> None:
    rig.api.model_said = "qwen-something-else"
    rig.run(resubmits=0)
    rows = rig.store.query("SELECT DISTINCT outcome, error_code FROM responses")[1]
    assert rows == [("fatal", "model_mismatch")]
    message = rig.store.query("SELECT error_message FROM responses LIMIT 1")[1][0][0]
    assert "batch gb-" in message and "line" in message and "qwen-something-else" in message
    assert rig.store.pending() != []  # a later run sends them again


def test_a_throttled_poll_waits_the_servers_retry_after_and_goes_on(rig: Rig) -> None:
    waits: list[float] = []
    runner = rig.runner()

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    runner._sleep = sleep
    real_get = rig.api.get
    throttled = 0

    async def get(batch_id: str) -> RemoteBatch:
        nonlocal throttled
        if throttled < 2:
            throttled += 1
            raise RateLimited("slow down", status=429, retry_after=7.5)
        return await real_get(batch_id)

    rig.api.get = get  # type: ignore[method-assign]
    outcome = asyncio.run(runner.run())
    assert rig.store.pending() == [] and outcome.quota is None
    assert waits[:2] == [7.5, 7.5]  # each throttle waited the server's time, then polled again


def test_a_batch_of_an_earlier_runs_own_simulator_is_given_up_not_polled(rig: Rig) -> None:
    old = BatchRecord(
        id="gb-old", backend="qwen", provider="qwen", model=QWEN.model,
        base_url="http://127.0.0.1:1", phase="submitted", remote_id="batch_gone", requests=1,
        created_at=datetime.now(UTC),
    )  # fmt: skip
    first = rig.store.pending()[0]
    rig.store.record_batch(old, [BatchKey("gb-old", "x", *first)])
    runner = rig.runner()
    runner.where = Where("qwen", "qwen", "http://batch.invalid", None, simulated=True)
    asyncio.run(runner.run())
    (record,) = rig.store.batches(ids=["gb-old"])
    assert record.phase == "abandoned" and "simulator of an earlier run" in (record.message or "")
    assert rig.store.pending() == []  # its request went in a batch of this run


def test_files_keep_under_the_byte_limit_and_a_line_over_it_alone_goes_in_none(
    rig: Rig,
) -> None:
    requests = len(rig.store.pending())
    rig.run(max_bytes=1)  # every line is over it
    assert rig.api.batches == {} and len(rig.store.pending()) == requests
    assert rig.store.batches() == []  # nothing recorded: nothing was sent
    largest = 0

    real_upload = rig.api.upload

    async def upload(path: Path, display_name: str) -> str:
        nonlocal largest
        largest = max(largest, path.stat().st_size)
        return await real_upload(path, display_name)

    rig.api.upload = upload  # type: ignore[method-assign]
    rig.run(max_bytes=400_000)
    assert rig.store.pending() == [] and 0 < largest <= 400_000
    assert len(rig.api.batches) > 1


def test_after_a_failed_batch_no_batch_is_made_until_another_ends(rig: Rig) -> None:
    requests = len(rig.store.pending())
    rig.api.polls_to_end = 4  # the others end on their fourth poll ...
    real_get = rig.api.get

    async def get(batch_id: str) -> RemoteBatch:
        batch = rig.api.batches[batch_id]
        if batch_id == next(iter(rig.api.batches)) and batch.state == "in_progress":
            batch.polls += 1
            if batch.polls == 3:  # ... the first fails on its third (OpenAI: enqueued tokens)
                batch.state = "failed"
            return rig.api._remote(batch)
        return await real_get(batch_id)

    made_while_open: list[int] = []
    real_create = rig.api.create

    async def create(file_id: str, tag: str) -> RemoteBatch:
        made_while_open.append(sum(b.state == "in_progress" for b in rig.api.batches.values()))
        return await real_create(file_id, tag)

    rig.api.get = get  # type: ignore[method-assign]
    rig.api.create = create  # type: ignore[method-assign]
    rig.run(max_requests=10, max_open=3)
    assert rig.store.pending() == [] and rig.answered() == requests
    first = rig.store.batches()[0]
    assert first.state == "failed" and first.unrun == 10
    # One made per round of polls; when the first failed two were open, and the next was made
    # only once one of them had ended (room alone would have made it beside both).
    assert made_while_open[:4] == [0, 1, 2, 1]


def test_a_file_the_provider_refuses_stops_making_batches_with_its_reason(rig: Rig) -> None:
    requests = len(rig.store.pending())

    async def refused(path: Path, display_name: str) -> str:
        raise Fatal("File is too large: at most 209715200 bytes", status=400)

    rig.api.upload = refused  # type: ignore[method-assign]
    outcome = asyncio.run(rig.runner(max_requests=10).run())
    assert outcome.not_made is not None and "File is too large" in outcome.not_made
    (record,) = rig.store.batches()  # one tried, not one per resend
    assert record.phase == "abandoned" and "upload failed" in (record.message or "")
    assert len(rig.store.pending()) == requests
