"""The simulator's batch endpoints against the official clients' own types (issue 42, point 6).

Each SDK's batch client runs end to end against the simulator on loopback (upload, create,
poll until done, download, list, cancel), and every object it hands back is validated again,
strictly, from the JSON the simulator sent: the SDKs build their objects without validating
(``construct``), so a missing required field would otherwise pass unseen. Negative controls
show each check can fail: a wrong key is refused with the documented 401, a malformed input
file fails the batch line by line, and a document with a required field removed fails the
same validation.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pydantic
import pytest

from conditions import Cohort, DataRoot, VariantCache
from runner.backends import ApiKey, Origin
from runner.batch._openai import OpenAIBatches
from runner.simulator import BatchFaults, SimSpec, Simulator, serving
from tests.runner.batch.test_openai_batches import QWEN_PROVIDER, Clock
from tests.runner.test_against_simulator import CLEAN, KEY, QWEN, _requests

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
from google.genai import types as gtypes  # noqa: E402
from openai.types import Batch, BatchError, FileDeleted, FileObject  # noqa: E402
from openai.types.chat import ChatCompletion  # noqa: E402

T = TypeVar("T")
TURNAROUND_S = 10.0
POLLS = 5  # a poll moves the clock a third of the turnaround: done by the fourth
NOW_SLACK_S = 120  # how far a timestamp may sit from the test's own unix time


@pytest.fixture
def cache(tmp_path: Path) -> VariantCache:
    return VariantCache(tmp_path / "variants")


def _sim(cohort: Cohort, root: DataRoot, cache: VariantCache, clock: Clock) -> Simulator:
    spec = SimSpec(behaviour=CLEAN, api_key=KEY, batch=BatchFaults(turnaround_s=TURNAROUND_S))
    return Simulator(cohort, root.images, cache, spec, clock=clock)


def _raw(response: Any) -> Any:
    """The JSON the simulator sent, from an SDK raw response."""
    return json.loads(response.http_response.text)


def _strict(model: type[pydantic.BaseModel], raw: Any) -> Any:
    """``raw`` validated as ``model``: required fields present, each of its type."""
    return model.model_validate(raw)


# -- OpenAI ---------------------------------------------------------------------------------


def _input(cohort: Cohort, root: DataRoot, cache: VariantCache, path: Path, n: int) -> list[str]:
    """An input file of ``n`` valid lines, written by our own batch client; their ids."""
    x = Origin.of("http://x")
    api = OpenAIBatches(None, QWEN_PROVIDER, QWEN.model, "http://x", ApiKey(KEY), origin=x)  # type: ignore[arg-type]
    ids = [f"line-{i}" for i in range(n)]
    with path.open("wb") as f:
        for custom_id, request in zip(ids, _requests(cohort, root, cache, QWEN, n), strict=True):
            f.write(bytes(api.line(custom_id, request)))
    return ids


def _with_openai(sim: Simulator, body: Callable[[Any], Awaitable[T]], key: str = KEY) -> T:
    async def main() -> T:
        async with serving(sim) as url:
            client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=key, max_retries=0)
            try:
                return await body(client)
            finally:
                await client.close()

    return asyncio.run(main())


async def _poll(client: Any, clock: Clock, batch_id: str) -> list[Batch]:
    """The batch as each poll saw it, until it ended (at most :data:`POLLS` polls)."""
    seen: list[Batch] = []
    for _ in range(POLLS):
        clock.now += TURNAROUND_S / 3
        raw = _raw(await client.batches.with_raw_response.retrieve(batch_id))
        seen.append(_strict(Batch, raw))
        if seen[-1].status in ("completed", "failed", "expired", "cancelled"):
            return seen
    raise AssertionError(f"batch {batch_id} never ended: {[b.status for b in seen]}")


def test_openai_sdk_runs_a_batch_end_to_end_and_every_object_validates(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    ids = _input(small_cohort, small_root, cache, tmp_path / "in.jsonl", 3)

    async def body(client: Any) -> dict[str, Any]:
        with (tmp_path / "in.jsonl").open("rb") as f:
            up = await client.files.with_raw_response.create(file=f, purpose="batch")
        uploaded = _strict(FileObject, _raw(up))
        assert up.parse().id == uploaded.id
        got = await client.files.with_raw_response.retrieve(uploaded.id)
        made = await client.batches.with_raw_response.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions",
            completion_window="24h", metadata={"groundbench": "contract"},
        )  # fmt: skip
        created = _strict(Batch, _raw(made))
        polls = await _poll(client, clock, created.id)
        output_file = await client.files.with_raw_response.retrieve(polls[-1].output_file_id)
        content = await client.files.content(polls[-1].output_file_id)
        listed = await client.batches.with_raw_response.list(limit=10)
        page = [b async for b in client.batches.list(limit=1)]
        deleted = await client.files.with_raw_response.delete(uploaded.id)
        return {
            "uploaded": uploaded, "retrieved": _strict(FileObject, _raw(got)),
            "created": created, "polls": polls,
            "output_file": _strict(FileObject, _raw(output_file)), "content": content.content,
            "listed": _raw(listed), "page": page, "deleted": _strict(FileDeleted, _raw(deleted)),
        }  # fmt: skip

    now = time.time()
    got = _with_openai(sim, body)
    uploaded, created, ended = got["uploaded"], got["created"], got["polls"][-1]
    assert got["retrieved"] == uploaded and uploaded.purpose == "batch"
    assert abs(uploaded.created_at - now) < NOW_SLACK_S
    assert created.status == "validating" and abs(created.created_at - now) < NOW_SLACK_S
    assert created.metadata == {"groundbench": "contract"}
    assert created.expires_at == created.created_at + 24 * 3600
    assert [b.status for b in got["polls"]][:2] == ["validating", "in_progress"]
    assert ended.status == "completed" and ended.request_counts is not None
    assert ended.request_counts.completed == 3 and ended.request_counts.total == 3
    assert ended.in_progress_at is not None and ended.finalizing_at is not None
    assert ended.completed_at is not None
    assert created.created_at <= ended.in_progress_at <= ended.finalizing_at
    assert ended.finalizing_at <= ended.completed_at <= created.created_at + TURNAROUND_S + 1
    assert ended.failed_at is None and ended.cancelled_at is None and ended.expired_at is None
    assert got["output_file"].purpose == "batch_output"
    assert got["output_file"].bytes == len(got["content"])
    lines = [json.loads(line) for line in got["content"].splitlines()]
    assert sorted(line["custom_id"] for line in lines) == ids
    for line in lines:
        assert line["error"] is None and line["response"]["status_code"] == 200
        completion = ChatCompletion.model_validate(line["response"]["body"])
        assert completion.object == "chat.completion" and completion.choices[0].message.content
        assert abs(completion.created - now) < NOW_SLACK_S
    assert [_strict(Batch, b).id for b in got["listed"]["data"]] == [created.id]
    assert [b.id for b in got["page"]] == [created.id]
    assert got["deleted"].deleted and got["deleted"].id == uploaded.id


def test_openai_sdk_cancels_a_batch_and_the_never_run_lines_say_so(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    _input(small_cohort, small_root, cache, tmp_path / "in.jsonl", 2)

    async def body(client: Any) -> tuple[Batch, list[Batch], bytes]:
        with (tmp_path / "in.jsonl").open("rb") as f:
            uploaded = await client.files.create(file=f, purpose="batch")
        made = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        cancelling = _strict(Batch, _raw(await client.batches.with_raw_response.cancel(made.id)))
        polls = await _poll(client, clock, made.id)
        errors = await client.files.content(polls[-1].error_file_id)
        return cancelling, polls, errors.content

    cancelling, polls, errors = _with_openai(sim, body)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    ended = polls[-1]
    assert ended.status == "cancelled" and ended.cancelled_at is not None
    assert ended.cancelling_at == cancelling.cancelling_at <= ended.cancelled_at
    assert ended.completed_at is None and ended.in_progress_at is None
    assert ended.output_file_id is None
    for line in errors.splitlines():
        doc = json.loads(line)
        assert doc["response"] is None
        assert BatchError.model_validate(doc["error"]).code == "batch_cancelled"
    assert sim.stats.paid == {}


def test_openai_sdk_sees_a_malformed_file_fail_its_batch_line_by_line(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    _input(small_cohort, small_root, cache, tmp_path / "good.jsonl", 1)
    good = (tmp_path / "good.jsonl").read_bytes()
    no_messages = json.loads(good)
    no_messages["custom_id"] = "no-messages"
    del no_messages["body"]["messages"]
    (tmp_path / "in.jsonl").write_bytes(good + good + json.dumps(no_messages).encode() + b"\n")

    async def body(client: Any) -> tuple[FileObject, list[Batch]]:
        with (tmp_path / "in.jsonl").open("rb") as f:
            uploaded = await client.files.create(file=f, purpose="batch")
        made = await client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        return uploaded, await _poll(client, clock, made.id)

    uploaded, polls = _with_openai(sim, body)
    assert uploaded.id  # accepted at upload: OpenAI validates the file in the batch's life
    failed = polls[-1]
    assert failed.status == "failed" and failed.failed_at is not None
    assert failed.in_progress_at is None and failed.completed_at is None
    assert failed.errors is not None and failed.errors.data is not None
    found = [(e.line, e.code, e.param) for e in failed.errors.data]
    assert found == [
        (2, "duplicate_custom_id", "custom_id"),
        (3, "missing_required_parameter", "body.messages"),
    ]
    assert sim.stats.paid == {} and sim.stats.submitted == {}


@pytest.mark.parametrize("call", ["upload", "retrieve", "create", "list", "cancel", "content"])
def test_openai_sdk_with_a_wrong_key_is_refused_401_on_every_batch_endpoint(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path, call: str
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock())
    (tmp_path / "in.jsonl").write_bytes(b"{}\n")

    async def body(client: Any) -> Any:
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "upload": lambda: client.files.create(
                file=(tmp_path / "in.jsonl").open("rb"), purpose="batch"
            ),
            "retrieve": lambda: client.files.retrieve("file-sim000001"),
            "create": lambda: client.batches.create(
                input_file_id="file-sim000001",
                endpoint="/v1/chat/completions",
                completion_window="24h",
            ),
            "list": lambda: client.batches.list(),
            "cancel": lambda: client.batches.cancel("batch_sim000000"),
            "content": lambda: client.files.content("file-sim000001"),
        }
        with pytest.raises(openai.AuthenticationError) as refused:
            await calls[call]()
        return refused.value

    refused = _with_openai(sim, body, key="sk-not-the-configured-key-0000")
    assert refused.status_code == 401
    assert refused.body["code"] == "invalid_api_key"
    assert "sk-not-the-configured-key" not in refused.message


def test_removing_a_required_field_fails_the_same_validation(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    """The negative control: the checks above can fail."""
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    _input(small_cohort, small_root, cache, tmp_path / "in.jsonl", 1)

    async def body(client: Any) -> tuple[Any, Any, Any]:
        with (tmp_path / "in.jsonl").open("rb") as f:
            up = _raw(await client.files.with_raw_response.create(file=f, purpose="batch"))
        made = await client.batches.create(
            input_file_id=up["id"], endpoint="/v1/chat/completions", completion_window="24h"
        )
        polls = await _poll(client, clock, made.id)
        content = await client.files.content(polls[-1].output_file_id)
        raw = _raw(await client.batches.with_raw_response.retrieve(made.id))
        return up, raw, json.loads(content.content.splitlines()[0])["response"]["body"]

    file_doc, batch_doc, completion = _with_openai(sim, body)
    for model, doc, field in (
        (FileObject, file_doc, "created_at"),
        (Batch, batch_doc, "created_at"),
        (ChatCompletion, completion, "created"),
        (ChatCompletion, completion, "choices"),
    ):
        model.model_validate(doc)
        with pytest.raises(pydantic.ValidationError):
            model.model_validate({k: v for k, v in doc.items() if k != field})


# -- Gemini ---------------------------------------------------------------------------------

GEMINI_KEY = "AIzaSyGroundbenchTestKey0123456789abcdef"
LINE = b'{"key": "%s", "request": {"contents": [{"parts": [{"text": "hi"}]}]}}\n'


def _gemini_sim(cohort: Cohort, root: DataRoot, cache: VariantCache, clock: Clock) -> Simulator:
    spec = SimSpec(api_key=GEMINI_KEY, batch=BatchFaults(turnaround_s=TURNAROUND_S))
    return Simulator(cohort, root.images, cache, spec, clock=clock)


def _with_genai(sim: Simulator, use: Callable[[Any], T], key: str = GEMINI_KEY) -> T:
    async def main() -> T:
        async with serving(sim) as url:
            options = gtypes.HttpOptions(base_url=url, api_version="v1beta")
            return await asyncio.to_thread(use, genai.Client(api_key=key, http_options=options))

    return asyncio.run(main())


def _json(obj: Any) -> Any:
    """The SDK object as its own JSON (what it parsed from the simulator)."""
    return json.loads(obj.model_dump_json(exclude_none=True))


def test_genai_sdk_runs_a_batch_end_to_end_and_every_object_validates(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _gemini_sim(small_cohort, small_root, cache, clock)
    (tmp_path / "in.jsonl").write_bytes(b"".join(LINE % k for k in (b"a", b"b")))

    def use(client: Any) -> dict[str, Any]:
        uploaded = client.files.upload(
            file=tmp_path / "in.jsonl", config={"mime_type": "application/jsonl"}
        )
        retrieved = client.files.get(name=uploaded.name)
        created = client.batches.create(
            model="m", src=uploaded.name, config={"display_name": "contract"}
        )
        polls = []
        for _ in range(POLLS):
            clock.now += TURNAROUND_S / 3
            polls.append(client.batches.get(name=created.name))
            if polls[-1].done:
                break
        results = client.files.download(file=polls[-1].dest.file_name)
        listed = list(client.batches.list())
        return {
            "uploaded": uploaded, "retrieved": retrieved, "created": created, "polls": polls,
            "results": results, "listed": listed,
        }  # fmt: skip

    now = time.time()
    got = _with_genai(sim, use)
    for name in ("uploaded", "retrieved"):
        doc = gtypes.File.model_validate(_json(got[name]))
        assert doc.name == got["uploaded"].name and doc.size_bytes == len(LINE % b"a") * 2
        assert doc.create_time is not None and abs(doc.create_time.timestamp() - now) < NOW_SLACK_S
    created = gtypes.BatchJob.model_validate(_json(got["created"]))
    assert created.state == gtypes.JobState.JOB_STATE_PENDING and created.display_name == "contract"
    assert created.create_time is not None
    assert abs(created.create_time.timestamp() - now) < NOW_SLACK_S
    states = [p.state for p in got["polls"]]
    assert states[:2] == [gtypes.JobState.JOB_STATE_PENDING, gtypes.JobState.JOB_STATE_RUNNING]
    ended = gtypes.BatchJob.model_validate(_json(got["polls"][-1]))
    assert ended.state == gtypes.JobState.JOB_STATE_SUCCEEDED and ended.done
    assert ended.end_time is not None and ended.update_time is not None
    assert ended.create_time == created.create_time
    assert created.create_time <= ended.update_time == ended.end_time  # start_time: Vertex only
    assert ended.dest is not None and ended.dest.file_name is not None
    lines = [json.loads(line) for line in got["results"].splitlines()]
    assert sorted(line["key"] for line in lines) == ["a", "b"]
    for line in lines:
        response = gtypes.GenerateContentResponse.model_validate(line["response"])
        assert response.candidates and response.candidates[0].content is not None
    assert [b.name for b in got["listed"]] == [created.name]


def test_genai_sdk_cancels_a_batch(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    clock = Clock()
    sim = _gemini_sim(small_cohort, small_root, cache, clock)
    (tmp_path / "in.jsonl").write_bytes(LINE % b"a")

    def use(client: Any) -> Any:
        uploaded = client.files.upload(
            file=tmp_path / "in.jsonl", config={"mime_type": "application/jsonl"}
        )
        created = client.batches.create(
            model="m", src=uploaded.name, config={"display_name": "cancelled"}
        )
        client.batches.cancel(name=created.name)
        clock.now += TURNAROUND_S * 2
        return client.batches.get(name=created.name)

    ended = gtypes.BatchJob.model_validate(_json(_with_genai(sim, use)))
    assert ended.state == gtypes.JobState.JOB_STATE_CANCELLED and ended.end_time is not None
    assert sim.stats.paid == {}


def test_genai_sdk_refuses_a_malformed_file_and_a_wrong_key(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, tmp_path: Path
) -> None:
    sim = _gemini_sim(small_cohort, small_root, cache, Clock())
    (tmp_path / "in.jsonl").write_bytes(LINE % b"a" + LINE % b"a")

    def use(client: Any) -> Any:
        uploaded = client.files.upload(
            file=tmp_path / "in.jsonl", config={"mime_type": "application/jsonl"}
        )
        with pytest.raises(genai.errors.ClientError) as refused:
            client.batches.create(model="m", src=uploaded.name, config={"display_name": "x"})
        return refused.value

    refused = _with_genai(sim, use)
    assert refused.code == 400 and refused.status == "INVALID_ARGUMENT"

    def wrong(client: Any) -> Any:
        with pytest.raises(genai.errors.ClientError) as refused:
            list(client.batches.list())
        return refused.value

    refused = _with_genai(sim, wrong, key="AIzaSyNotTheConfiguredKey000000000000000")
    assert refused.code in (400, 401)  # Google answers a bad key 400 API_KEY_INVALID


def test_genai_batch_without_its_state_fails_validation() -> None:
    """The negative control: the SDK's types refuse what the simulator must send."""
    with pytest.raises(pydantic.ValidationError):
        gtypes.BatchJob.model_validate({"name": "batches/x", "create_time": "not a time"})
    with pytest.raises(pydantic.ValidationError):
        gtypes.File.model_validate({"name": "files/x", "create_time": "not a time"})
