"""The simulator's batch endpoints against the official clients' own types (issue 42, points 2,
3 and 6).

Each SDK's batch client (openai, google-genai, anthropic) runs end to end against the simulator
on loopback (upload where the API has files, create, poll until done, download the results,
list, cancel, delete), and every object it hands back is validated again, strictly, from the
JSON the simulator sent: the SDKs build their objects without validating (``construct``), so a
missing required field would otherwise pass unseen. Negative controls show each check can fail:
a wrong key is refused with the documented 401, a malformed input file fails the batch line by
line (OpenAI) or is refused (Gemini, Anthropic), params the Messages API refuses come back as an
``errored`` result rather than a refused batch (Anthropic), and a document with a required field
removed fails the same validation.
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
from runner.backends import AnthropicMessages, ApiKey, Origin
from runner.batch._openai import OpenAIBatches
from runner.simulator import BatchFaults, SimSpec, Simulator, serving
from tests.runner.batch.test_openai_batches import QWEN_PROVIDER, Clock
from tests.runner.test_against_simulator import CLEAN, KEY, QWEN, _requests
from tests.runner.test_anthropic_against_simulator import CLAUDE

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
anthropic = pytest.importorskip("anthropic")
from anthropic.types import Message  # noqa: E402
from anthropic.types.messages import (  # noqa: E402
    DeletedMessageBatch,
    MessageBatch,
    MessageBatchIndividualResponse,
)
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


# -- Anthropic ------------------------------------------------------------------------------

ENDED = "ended"


def _claude_requests(
    cohort: Cohort, root: DataRoot, cache: VariantCache, n: int
) -> list[dict[str, Any]]:
    """``n`` batch requests with their images, the params as groundbench sends them online."""
    wire = AnthropicMessages(CLAUDE.model)
    made = _requests(cohort, root, cache, CLAUDE, n)
    return [
        {"custom_id": f"req-{i}", "params": json.loads(bytes(wire.encode(r)))}
        for i, r in enumerate(made)
    ]


def _with_anthropic(sim: Simulator, use: Callable[[Any], T], key: str = KEY) -> T:
    """``use`` of the official synchronous client (in a thread) on the simulator."""

    async def main() -> T:
        async with serving(sim) as url:
            client = anthropic.Anthropic(api_key=key, base_url=url, max_retries=0)
            try:
                return await asyncio.to_thread(use, client)
            finally:
                client.close()

    return asyncio.run(main())


def _strict_batch(raw: Any) -> MessageBatch:
    """``raw`` as a MessageBatch, strictly, with every field of the reference present (the
    unset ones null) and no other."""
    assert set(raw) == set(MessageBatch.model_fields), sorted(raw)
    batch = _strict(MessageBatch, raw)
    counts = batch.request_counts
    total = counts.processing + counts.succeeded + counts.errored + counts.canceled
    assert total + counts.expired == sum(raw["request_counts"].values())
    return batch  # type: ignore[no-any-return]


def _claude_poll(client: Any, clock: Clock, batch_id: str) -> list[MessageBatch]:
    """The batch as each retrieve saw it, until it ended (at most :data:`POLLS`)."""
    seen: list[MessageBatch] = []
    for _ in range(POLLS):
        clock.now += TURNAROUND_S / 3
        raw = client.messages.batches.with_raw_response.retrieve(batch_id)
        seen.append(_strict_batch(_raw(raw)))
        if seen[-1].processing_status == ENDED:
            return seen
    raise AssertionError(f"{batch_id} never ended: {[b.processing_status for b in seen]}")


def _result_lines(client: Any, batch_id: str) -> list[Any]:
    """The results file as the simulator sent it, each line parsed as JSON."""
    raw = client.messages.batches.with_raw_response.results(batch_id)
    return [json.loads(line) for line in raw.http_response.read().splitlines()]


def test_anthropic_sdk_runs_a_batch_end_to_end_and_every_object_validates(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _claude_requests(small_cohort, small_root, cache, 3)

    def use(client: Any) -> dict[str, Any]:
        batches = client.messages.batches
        made = batches.with_raw_response.create(requests=requests)
        created = _strict_batch(_raw(made))
        assert made.parse().id == created.id
        polls = _claude_poll(client, clock, created.id)
        listed = _raw(batches.with_raw_response.list(limit=10))
        lines = _result_lines(client, created.id)
        decoded = list(batches.results(created.id))  # the SDK's own JSONL decoder
        paged = [b.id for b in batches.list(limit=1)]  # auto-paginated by after_id
        deleted = _strict(DeletedMessageBatch, _raw(batches.with_raw_response.delete(created.id)))
        return {
            "created": created, "polls": polls, "listed": listed, "lines": lines,
            "decoded": decoded, "paged": paged, "deleted": deleted,
        }  # fmt: skip

    now = time.time()
    got = _with_anthropic(sim, use)
    created, ended = got["created"], got["polls"][-1]
    assert created.type == "message_batch" and created.id.startswith("msgbatch_")
    assert created.processing_status == "in_progress" and created.request_counts.processing == 3
    assert abs(created.created_at.timestamp() - now) < NOW_SLACK_S
    assert (created.expires_at - created.created_at).total_seconds() == 24 * 3600
    assert created.results_url is None and created.ended_at is None
    assert created.archived_at is None and created.cancel_initiated_at is None
    assert [b.processing_status for b in got["polls"]] == ["in_progress"] * 2 + [ENDED]
    assert ended.request_counts.succeeded == 3 and ended.request_counts.processing == 0
    assert ended.ended_at is not None
    assert created.created_at <= ended.ended_at
    assert (ended.ended_at - created.created_at).total_seconds() <= TURNAROUND_S + 1
    assert ended.results_url is not None and ended.results_url.endswith(f"/{ended.id}/results")
    listed = got["listed"]
    assert set(listed) == {"data", "has_more", "first_id", "last_id"}
    assert [_strict_batch(b).id for b in listed["data"]] == [created.id]
    assert listed["has_more"] is False and listed["first_id"] == listed["last_id"] == created.id
    assert got["paged"] == [created.id]
    wire = AnthropicMessages(CLAUDE.model)
    lines = got["lines"]
    assert sorted(line["custom_id"] for line in lines) == [r["custom_id"] for r in requests]
    for line in lines:
        result = _strict(MessageBatchIndividualResponse, line).result
        assert result.type == "succeeded"
        message = _strict(Message, line["result"]["message"])
        assert message.type == "message" and message.role == "assistant"
        assert wire.read(line["result"]["message"]).answer  # groundbench reads it too
    assert [(r.custom_id, r.result.type) for r in got["decoded"]] == [
        (line["custom_id"], "succeeded") for line in lines
    ]
    assert got["deleted"].id == created.id and got["deleted"].type == "message_batch_deleted"
    assert sum(sim.stats.paid.values()) == 3 and sim.stats.batches_created == 1


def test_anthropic_sdk_cancels_a_batch_and_every_request_is_canceled(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _claude_requests(small_cohort, small_root, cache, 2)

    def use(client: Any) -> tuple[MessageBatch, list[MessageBatch], list[Any]]:
        made = client.messages.batches.create(requests=requests)
        with pytest.raises(anthropic.AnthropicError, match="results_url"):
            client.messages.batches.results(made.id)  # not ended: the SDK asks nothing
        raw = client.messages.batches.with_raw_response.cancel(made.id)
        canceling = _strict_batch(_raw(raw))
        polls = _claude_poll(client, clock, made.id)
        lines = _result_lines(client, made.id)
        client.messages.batches.delete(made.id)
        return canceling, polls, lines

    canceling, polls, lines = _with_anthropic(sim, use)
    assert canceling.processing_status == "canceling"
    assert canceling.cancel_initiated_at is not None and canceling.request_counts.processing == 2
    ended = polls[0]  # the first look after the cancel ends it
    assert ended.processing_status == ENDED and ended.request_counts.canceled == 2
    assert ended.cancel_initiated_at == canceling.cancel_initiated_at
    assert ended.ended_at is not None and ended.cancel_initiated_at <= ended.ended_at
    for line in lines:
        assert _strict(MessageBatchIndividualResponse, line).result.type == "canceled"
    assert sim.stats.paid == {}


def test_anthropic_sdk_gets_params_the_api_refuses_back_as_errored_results(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    """The negative control of the results: the Messages API refuses a thinking budget not
    under ``max_tokens``; in a batch it is accepted, and ends ``errored`` with that error."""
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    good = _claude_requests(small_cohort, small_root, cache, 1)[0]
    params = dict(good["params"])
    params["thinking"] = {"type": "enabled", "budget_tokens": params["max_tokens"]}
    requests = [good, {"custom_id": "budget-too-big", "params": params}]

    def use(client: Any) -> tuple[MessageBatch, MessageBatch, list[Any]]:
        created = _strict_batch(_raw(client.messages.batches.with_raw_response.create(
            requests=requests
        )))  # fmt: skip
        ended = _claude_poll(client, clock, created.id)[-1]
        return created, ended, _result_lines(client, created.id)

    created, ended, lines = _with_anthropic(sim, use)
    assert created.processing_status == "in_progress"  # not refused when made
    assert ended.request_counts.succeeded == 1 and ended.request_counts.errored == 1
    results = {line["custom_id"]: _strict(MessageBatchIndividualResponse, line) for line in lines}
    assert results[good["custom_id"]].result.type == "succeeded"
    errored = results["budget-too-big"].result
    assert errored.type == "errored" and errored.error.type == "error"
    assert errored.error.error.type == "invalid_request_error"
    assert "budget_tokens" in errored.error.error.message


@pytest.mark.parametrize("call", ["create", "retrieve", "list", "cancel", "delete"])
def test_anthropic_sdk_with_a_wrong_key_is_refused_401_on_every_batch_endpoint(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache, call: str
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock())
    requests = [{"custom_id": "a", "params": {"model": "m", "max_tokens": 1, "messages": []}}]

    def use(client: Any) -> Any:
        batches = client.messages.batches
        calls: dict[str, Callable[[], Any]] = {
            "create": lambda: batches.create(requests=requests),
            "retrieve": lambda: batches.retrieve("msgbatch_sim000000"),
            "list": lambda: batches.list(),
            "cancel": lambda: batches.cancel("msgbatch_sim000000"),
            "delete": lambda: batches.delete("msgbatch_sim000000"),
        }
        with pytest.raises(anthropic.AuthenticationError) as refused:
            calls[call]()
        return refused.value

    refused = _with_anthropic(sim, use, key="sk-ant-not-the-configured-key-0000")
    assert refused.status_code == 401
    assert refused.body["error"]["type"] == "authentication_error"
    assert "sk-ant-not-the" not in refused.message


def test_anthropic_sdk_sees_a_repeated_custom_id_refused_400_and_no_batch_made(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    sim = _sim(small_cohort, small_root, cache, Clock())
    request = _claude_requests(small_cohort, small_root, cache, 1)[0]

    def use(client: Any) -> tuple[Any, list[Any]]:
        with pytest.raises(anthropic.BadRequestError) as refused:
            client.messages.batches.create(requests=[request, request])
        return refused.value, list(client.messages.batches.list())

    refused, listed = _with_anthropic(sim, use)
    assert refused.status_code == 400
    assert refused.body["type"] == "error"
    assert refused.body["error"]["type"] == "invalid_request_error"
    assert "custom_id" in refused.body["error"]["message"]
    assert listed == [] and sim.stats.batches_created == 0 and sim.stats.paid == {}


def test_anthropic_documents_without_a_required_field_fail_the_same_validation(
    small_cohort: Cohort, small_root: DataRoot, cache: VariantCache
) -> None:
    """The negative control: the checks above can fail."""
    clock = Clock()
    sim = _sim(small_cohort, small_root, cache, clock)
    requests = _claude_requests(small_cohort, small_root, cache, 1)

    def use(client: Any) -> tuple[Any, Any, Any]:
        made = client.messages.batches.create(requests=requests)
        _claude_poll(client, clock, made.id)
        batch = _raw(client.messages.batches.with_raw_response.retrieve(made.id))
        line = _result_lines(client, made.id)[0]
        deleted = _raw(client.messages.batches.with_raw_response.delete(made.id))
        return batch, line, deleted

    batch, line, deleted = _with_anthropic(sim, use)
    for model, doc, field in (
        (MessageBatch, batch, "created_at"),
        (MessageBatch, batch, "processing_status"),
        (MessageBatch, batch, "request_counts"),
        (MessageBatchIndividualResponse, line, "custom_id"),
        (MessageBatchIndividualResponse, line, "result"),
        (Message, line["result"]["message"], "content"),
        (Message, line["result"]["message"], "usage"),
        (DeletedMessageBatch, deleted, "type"),
    ):
        model.model_validate(doc)
        with pytest.raises(pydantic.ValidationError):
            model.model_validate({k: v for k, v in doc.items() if k != field})
    with pytest.raises(pydantic.ValidationError):  # a result of no documented type
        MessageBatchIndividualResponse.model_validate({**line, "result": {"type": "failed"}})
    with pytest.raises(pydantic.ValidationError):  # a state the reference does not name
        MessageBatch.model_validate({**batch, "processing_status": "completed"})
    with pytest.raises(AssertionError):  # a documented field missing, though optional
        _strict_batch({k: v for k, v in batch.items() if k != "archived_at"})
