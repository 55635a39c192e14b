"""Ids a batch server gives (issue 37, finding 7): a batch id or file id that echoes the key, runs
to 10 KB or holds a newline is refused as read, never stored, printed or put in a URL; the
batch it names is not made (or, once made, lost), and the run says so in one line.

The whole run goes through the real OpenAI-compatible wire against the simulator on loopback,
whose batch objects are made hostile here; the other paths (Gemini's names, an id an older
version stored) are read directly.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from conditions import Cohort, DataRoot, VariantCache, task_of
from runner.backends import ApiKey, Origin, holds_key, provider_named
from runner.batch import BatchRunner, BatchSettings, ResultLine, Where
from runner.batch._gemini import GeminiBatches, remote_batch
from runner.batch._ids import MAX_ID, BadId, checked_id
from runner.batch._openai import OpenAIBatches
from runner.distributed import Feeder, FeedPolicy
from runner.distributed._report import BatchReport
from runner.simulator import SimSpec, Simulator, serving
from runner.simulator import _openai_batches as simulated
from runner.store import BatchKey, BatchRecord
from runner.summary import batch_lines
from tests.runner.backends.loopback import Listener, listening
from tests.runner.batch.test_runner import QWEN, Rig, _configuration, _rig, inline, no_wait
from tests.runner.test_against_simulator import CLEAN, KEY

API_KEY = ApiKey(KEY)
ECHOED = f"batch_{KEY}"  # the key echoed in an id
HUGE = "batch_" + "x" * 10_000
NEWLINE = "batch_1\nX-Injected: yes"
HOSTILE = {"echoed key": ECHOED, "10 KB": HUGE, "newline": NEWLINE}
LONGEST_TEXT = 1_100  # a stored text: an id is at most 256, a message 1,024 and its context


# -- the rule --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE)
def test_an_id_that_breaks_the_rule_is_refused_in_one_line_without_the_key(name: str) -> None:
    with pytest.raises(BadId) as refused:
        checked_id(HOSTILE[name], "batch id", API_KEY)
    line = str(refused.value)
    assert "\n" not in line and len(line) < 300 and not holds_key(line, API_KEY)
    assert line.startswith("fatal (no response bad-id): the server answered a batch id ")
    assert not refused.value.retryable


def test_every_documented_id_keeps_to_the_rule() -> None:
    for id_ in ("batch_abc123", "file-XyZ_09", "batches/123abc", "files/abc-1.jsonl",
                "batch_67a1:us-east-1", "b" * MAX_ID):  # fmt: skip
        assert checked_id(id_, "id", API_KEY) == id_


@pytest.mark.parametrize("name", HOSTILE)
def test_a_gemini_batch_naming_a_hostile_batch_or_file_is_refused(name: str) -> None:
    hostile = HOSTILE[name].replace("batch_", "batches/")
    good = {"name": "batches/1", "metadata": {"state": "BATCH_STATE_SUCCEEDED",
            "output": {"responsesFile": "files/2"}}}  # fmt: skip
    assert remote_batch(good, API_KEY).output_file == "files/2"
    for doc in ({**good, "name": hostile},
                {**good, "metadata": {"output": {"responsesFile": hostile}}}):  # fmt: skip
        with pytest.raises(BadId) as refused:
            remote_batch(doc, API_KEY)
        assert not holds_key(str(refused.value), API_KEY) and "\n" not in str(refused.value)


# -- never in a URL --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE)
def test_an_id_an_older_version_stored_is_never_put_in_a_url(name: str) -> None:
    hostile = HOSTILE[name]
    server = Listener(status=404)

    async def main() -> tuple[object, ...]:
        async with listening(server) as url, aiohttp.ClientSession() as session:
            qwen = OpenAIBatches(session, provider_named("qwen"), "m", url + "/v1", API_KEY,
                                 origin=Origin.of(url))  # fmt: skip
            gemini = GeminiBatches(session, "m", url + "/v1beta", API_KEY, origin=Origin.of(url))
            calls = [qwen.get(hostile), qwen.cancel(hostile), qwen.delete_file(hostile),
                     gemini.get(hostile), gemini.cancel(hostile), gemini.delete_file(hostile),
                     gemini.get(hostile.replace("batch_", "batches/"))]  # fmt: skip
            return tuple(await asyncio.gather(*calls, return_exceptions=True))

    refused = asyncio.run(main())
    assert server.seen == []  # not one request left
    assert all(isinstance(e, BadId) for e in refused), refused
    assert not any(holds_key(str(e), API_KEY) for e in refused)


# -- a run against a server that answers them ----------------------------------------------------


def _hostile_batches(monkeypatch: pytest.MonkeyPatch, **fields: str) -> None:
    """The simulator's batch objects, with ``fields`` replaced once each is set."""
    real = simulated._Batch.doc

    def doc(self: simulated._Batch) -> dict[str, Any]:
        described = real(self)
        return described | {k: v for k, v in fields.items() if described.get(k) is not None}

    monkeypatch.setattr(simulated._Batch, "doc", doc)


def _run_against_simulator(
    rig: Rig, cohort: Cohort, root: DataRoot, before: Callable[[str], None] = lambda _: None
) -> BatchRunner:
    """A batch run of the rig's grid through the real wire, against the simulator on loopback
    (its clock a step further at each look, so a batch ends after a few polls); ``before``
    is given the simulator's base URL before the run starts."""
    steps: Iterator[float] = itertools.count(0.0, 0.05)
    sim = Simulator(cohort, root.images, VariantCache(rig.tmp / "sv"),
                    SimSpec(behaviour=CLEAN, api_key=KEY), clock=lambda: next(steps))  # fmt: skip
    builder = task_of(cohort).builder(root.images, VariantCache(rig.tmp / "v"))

    async def main() -> BatchRunner:
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            before(url + "/v1")
            api = OpenAIBatches(session, provider_named("qwen"), QWEN.model, url + "/v1", API_KEY,
                                origin=Origin.of(url))  # fmt: skip
            runner = BatchRunner(
                Where("qwen", "qwen", url + "/v1", "DASHSCOPE_API_KEY"), [_configuration()],
                builder, rig.ledger, lambda *_: api, rig.tmp / "spool",
                BatchSettings.model_validate({"poll_s": 1, "max_requests": 8, "max_open": 1}),
                transport=_configuration().transport, limits=api.limits, sleep=no_wait,
                offload=inline,
            )  # fmt: skip
            feeder = Feeder(rig.ledger, FeedPolicy(), rig.echoed.append, no_wait)
            await feeder.drive(rig.feed(runner))
            return runner

    return asyncio.run(main())


def _stored_texts(rig: Rig) -> list[str]:
    texts = []
    for table in ("batches", "batch_problems", "responses"):
        for row in rig.store.repository.query(f"SELECT * FROM {table}")[1]:
            texts += [v for v in row if isinstance(v, str)]
    return texts


def _nothing_stored_holds_it(rig: Rig) -> None:
    for text in _stored_texts(rig):
        assert not holds_key(text, API_KEY) and len(text) <= LONGEST_TEXT, text[:80]
        assert "X-Injected" not in text or "\\n" in text  # a newline only ever shown escaped


def _one_hostile_batch(
    cohort: Cohort, root: DataRoot, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, **field: str
) -> tuple[Rig, int, BatchRunner, BatchRecord]:
    """A run whose batch objects carry ``field`` as the server gives it: the rig, its pending
    requests before, the runner, and the one batch it recorded (nothing stored holds the key)."""
    rig = _rig(cohort, root, tmp_path, SimSpec(behaviour=CLEAN))
    requests = len(rig.store.repository.pending())
    _hostile_batches(monkeypatch, **field)
    runner = _run_against_simulator(rig, cohort, root)
    _nothing_stored_holds_it(rig)
    (record,) = rig.store.repository.batches()
    return rig, requests, runner, record


@pytest.mark.parametrize("name", HOSTILE)
def test_a_batch_created_under_a_hostile_id_is_not_made_and_the_run_says_so_once(
    name: str,
    small_cohort: Cohort,
    small_root: DataRoot,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig, requests, runner, record = _one_hostile_batch(
        small_cohort, small_root, tmp_path, monkeypatch, id=HOSTILE[name]
    )  # one tried; no more made after it
    assert record.phase == "abandoned" and record.remote_id is None
    assert (record.message or "").startswith("not created: fatal (no response bad-id): ")
    assert len(rig.store.repository.pending()) == requests  # nothing lost: every request is pending
    said = runner.outcome.not_made
    assert said is not None and "the server answered a batch id" in said
    report = BatchReport(created=0, read=0, unrun=0, problems=0, online_cost=0.0, not_made=said)
    line = batch_lines("qwen", 0.0, report)[-1]
    assert "\n" not in line and not holds_key(line, API_KEY) and "file too large" not in line


@pytest.mark.parametrize("name", HOSTILE)
def test_a_batch_that_ends_naming_a_hostile_output_file_is_lost_not_read(
    name: str,
    small_cohort: Cohort,
    small_root: DataRoot,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig, requests, runner, record = _one_hostile_batch(
        small_cohort, small_root, tmp_path, monkeypatch, output_file_id=HOSTILE[name]
    )
    assert record.phase == "abandoned" and record.output_file is None
    assert (record.message or "").startswith("lost: fatal (no response bad-id): ")
    assert "output_file_id" in (record.message or "")
    assert len(rig.store.repository.pending()) == requests and rig.answered() == 0
    assert runner.outcome.not_made is not None


def test_a_hostile_id_an_older_version_stored_loses_its_batch_without_a_request(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Any
) -> None:
    rig = _rig(small_cohort, small_root, tmp_path, SimSpec(behaviour=CLEAN))

    def record_old(url: str) -> None:  # at the backend's own address: only its id is wrong
        old = BatchRecord(
            id="gb-old", backend="qwen", provider="qwen", model=QWEN.model, base_url=url,
            phase="submitted", remote_id=ECHOED, requests=1, created_at=datetime.now(UTC),
        )  # fmt: skip
        rig.store.repository.record_batch(
            old,
            [
                BatchKey.of(
                    rig.store.repository.pending()[0].attempt_key, batch="gb-old", custom_id="x"
                )
            ],
        )

    _run_against_simulator(rig, small_cohort, small_root, before=record_old)
    (record, *_) = rig.store.repository.batches(ids=["gb-old"])
    assert record.phase == "abandoned" and "holds the API key" in (record.message or "")
    assert not holds_key(record.message or "", API_KEY)


def test_a_problem_however_long_a_reader_said_it_is_stored_clipped(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Any
) -> None:
    rig = _rig(small_cohort, small_root, tmp_path, SimSpec(behaviour=CLEAN))
    rig.api.bad_lines = [
        ResultLine("out line 1" + "w" * 10_000, "id-" + "c" * 10_000, problem="p" * 200_000),
        ResultLine("out line 2", None, problem=f"said {KEY} " + "q" * 5_000),
    ]
    rig.drive_fresh()
    rows = rig.store.repository.query("SELECT line, custom_id, message FROM batch_problems")[1]
    assert len(rows) == 2
    for row in rows:
        for text in row:
            assert text is None or (len(text) <= 1_024 and KEY not in text)
