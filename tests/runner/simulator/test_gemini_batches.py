"""The simulator's Gemini batch endpoints: what they refuse, where they route, and that the
official ``google-genai`` SDK reads them as the documented API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
from google import genai
from google.genai import types as gtypes

from conditions import Cohort, DataRoot, VariantCache
from runner.simulator import BatchFaults, SimSpec, Simulator, serving

KEY = "AIzaSyGroundbenchTestKey0123456789abcdef"
HEADERS = {"x-goog-api-key": KEY}
LINE = b'{"key": "a", "request": {"contents": [{"parts": [{"text": "hi"}]}]}}\n'


def _keyed(*keys: str) -> bytes:
    return b"".join(LINE.replace(b'"a"', f'"{k}"'.encode()) for k in keys)


def _sim(cohort: Cohort, root: DataRoot, tmp: Path, **spec: Any) -> Simulator:
    return Simulator(cohort, root.images, VariantCache(tmp / "v"), SimSpec.model_validate(spec))


async def _upload(session: aiohttp.ClientSession, url: str, data: bytes) -> tuple[int, Any]:
    start = {
        **HEADERS,
        "X-Goog-Upload-Protocol": "resumable",
        "X-Goog-Upload-Command": "start",
        "X-Goog-Upload-Header-Content-Length": str(len(data)),
    }
    async with session.post(f"{url}/upload/v1beta/files", json={"file": {}}, headers=start) as r:
        if r.status != 200:
            return r.status, await r.json()
        upload_url = r.headers["X-Goog-Upload-URL"]
    sending = {**HEADERS, "X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0"}
    async with session.post(upload_url, data=data, headers=sending) as r:
        return r.status, await r.json()


async def _create(
    session: aiohttp.ClientSession, url: str, file: str, model: str = "m"
) -> tuple[int, Any]:
    body = {"batch": {"display_name": "t", "input_config": {"file_name": file}}}
    async with session.post(
        f"{url}/v1beta/models/{model}:batchGenerateContent", json=body, headers=HEADERS
    ) as r:
        return r.status, await r.json()


def test_files_and_batches_it_refuses(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    batch = BatchFaults(max_requests=2, max_file_bytes=1000)
    sim = _sim(small_cohort, small_root, tmp_path, batch=batch, models=("m",))

    async def main() -> list[tuple[int, Any]]:
        out = []
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            out.append(await _upload(session, url, LINE * 20))  # over max_file_bytes
            for data in (_keyed("a", "b", "c"), _keyed("a", "b", "a"), b"not json\n", LINE):
                status, doc = await _upload(session, url, data)
                assert status == 200, doc
                out.append(await _create(session, url, doc["file"]["name"]))
            status, doc = await _upload(session, url, LINE)
            out.append(await _create(session, url, doc["file"]["name"], model="other"))
        return out

    big, many, twice, broken, fine, other = asyncio.run(main())
    for status, doc in (big, many, twice, broken):
        assert status == 400 and doc["error"]["status"] == "INVALID_ARGUMENT"
    assert "3 requests" in many[1]["error"]["message"]
    assert "twice" in twice[1]["error"]["message"]
    assert "not JSON" in broken[1]["error"]["message"]
    assert fine[0] == 200 and fine[1]["name"].startswith("batches/")
    assert fine[1]["metadata"]["state"] == "BATCH_STATE_PENDING"
    assert other[0] == 404 and other[1]["error"]["status"] == "NOT_FOUND"
    assert sim.stats.batches_created == 1 and sim.stats.submitted == {"a": 1}


def test_batch_routes_come_before_the_online_catch_all(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    sim = _sim(small_cohort, small_root, tmp_path)
    online = json.dumps({"contents": [{"parts": [{"text": "hi"}]}]}).encode()

    async def main() -> tuple[int, int, int]:
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            async with session.post(
                f"{url}/v1beta/models/m:generateContent", data=online, headers=HEADERS
            ) as r:
                answered = r.status
            status, _ = await _create(session, url, "files/none")
            async with session.delete(f"{url}/v1beta/files/none", headers=HEADERS) as r:
                deleted = r.status
        return answered, status, deleted

    answered, created, deleted = asyncio.run(main())
    assert answered == 200  # the online endpoint still answers
    assert created == 400  # the batch endpoint answered (the catch-all would say 404)
    assert deleted == 404


def test_the_official_sdk_reads_the_batch_endpoints(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    sim = _sim(small_cohort, small_root, tmp_path, batch=BatchFaults(turnaround_s=0))
    (tmp_path / "in.jsonl").write_bytes(LINE)

    def use_sdk(
        url: str,
    ) -> tuple[gtypes.File, gtypes.BatchJob, gtypes.BatchJob, list[gtypes.BatchJob]]:
        options = gtypes.HttpOptions(base_url=url, api_version="v1beta")
        client = genai.Client(api_key=KEY, http_options=options)
        uploaded = client.files.upload(
            file=tmp_path / "in.jsonl", config={"mime_type": "application/jsonl"}
        )
        assert uploaded.name is not None
        created = client.batches.create(
            model="m", src=uploaded.name, config={"display_name": "sdk"}
        )
        assert created.name is not None
        done = client.batches.get(name=created.name)
        return uploaded, created, done, list(client.batches.list())

    async def main() -> tuple[gtypes.File, gtypes.BatchJob, gtypes.BatchJob, list[gtypes.BatchJob]]:
        async with serving(sim) as url:
            return await asyncio.to_thread(use_sdk, url)

    uploaded, created, done, listed = asyncio.run(main())
    assert uploaded.name is not None and uploaded.name.startswith("files/")
    assert created.state == gtypes.JobState.JOB_STATE_PENDING and created.display_name == "sdk"
    assert done.state == gtypes.JobState.JOB_STATE_SUCCEEDED
    assert done.dest is not None and done.dest.file_name is not None
    assert [b.name for b in listed] == [created.name]
