"""The simulator's server: deterministic from its seed, strict about what it accepts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from conditions import Cohort, DataRoot, VariantCache
from runner.backends import ErrorBody, Refused, classify_gemini, classify_openai
from runner.simulator import SimSpec, Simulator, serving
from runner.simulator._server import _lift_image
from runner.simulator._wires import OpenAIWire
from tests.runner.test_against_simulator import QWEN, _ask_all, _requests, _run


def _answers(cohort: Cohort, root: DataRoot, cache: VariantCache, seed: int) -> list[str]:
    sim = Simulator(cohort, root.images, cache, SimSpec(seed=seed))
    records = _run(
        sim, QWEN, lambda c: _requests(cohort, root, cache, c, 30), _ask_all,
        max_concurrency=1,  # one at a time: the same order on every run
    )  # fmt: skip
    return [r.answer or "" for r in sorted(records, key=lambda r: (r.qid, r.budget, r.attempt))]


def test_the_same_seed_gives_the_same_answers(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "v")
    first = _answers(small_cohort, small_root, cache, seed=5)
    assert first == _answers(small_cohort, small_root, cache, seed=5)
    assert first != _answers(small_cohort, small_root, cache, seed=6)


def test_the_image_is_found_without_decoding_it_and_odd_bodies_fall_back() -> None:
    body = json.dumps({"messages": [{"content": [{"image_url": {"url": "data:x;base64,QUJD"}}]}]})
    rest, image = _lift_image(OpenAIWire.image_marker, body.encode())
    assert (
        image == b"QUJD"
        and json.loads(rest)["messages"][0]["content"][0]["image_url"]["url"] == "data:x;base64,"
    )
    escaped = body.replace("QUJD", "QU\\/JD").encode()
    assert _lift_image(OpenAIWire.image_marker, escaped) == (escaped, None)


def test_a_bad_request_is_a_400_in_the_wire_formats_own_shape(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    sim = Simulator(small_cohort, small_root.images, VariantCache(tmp_path / "v"), SimSpec())

    async def main() -> list[tuple[int, dict[str, object]]]:
        out = []
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            for path, headers in (
                ("/v1/chat/completions", {"Authorization": "Bearer sk-x"}),
                ("/v1beta/models/g:generateContent", {"x-goog-api-key": "AIza-x"}),
                ("/v1/chat/completions", {}),
                ("/v1beta/models/g:generateContent", {}),
            ):
                async with session.post(url + path, data=b"{", headers=headers) as response:
                    out.append((response.status, await response.json()))
        return out

    (s1, openai), (s2, gemini), (s3, _), (s4, no_key) = asyncio.run(main())
    assert s1 == 400 and openai["error"]["code"] == "invalid_request_error"  # type: ignore[index]
    assert s2 == 400 and gemini["error"]["status"] == "INVALID_ARGUMENT"  # type: ignore[index]
    assert s3 == 401
    # As the Gemini API says a key is wrong: a 400 whose ErrorInfo reason names it.
    (info,) = no_key["error"]["details"]  # type: ignore[index]
    assert s4 == 400 and info["reason"] == "API_KEY_INVALID"


def test_a_model_it_does_not_serve_is_answered_404_as_each_provider_answers_it(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    spec = SimSpec(models=("served",))
    sim = Simulator(small_cohort, small_root.images, VariantCache(tmp_path / "v"), spec)
    openai_body = json.dumps({"model": "other", "messages": [{"content": []}]}).encode()
    gemini_body = json.dumps({"contents": [{"parts": []}]}).encode()

    async def main() -> list[tuple[int, bytes]]:
        out = []
        async with serving(sim) as url, aiohttp.ClientSession() as session:
            for path, headers, body in (
                ("/v1/chat/completions", {"Authorization": "Bearer sk-x"}, openai_body),
                ("/v1beta/models/other:generateContent", {"x-goog-api-key": "k"}, gemini_body),
            ):
                async with session.post(url + path, data=body, headers=headers) as response:
                    out.append((response.status, await response.read()))
        return out

    (s1, openai), (s2, gemini) = asyncio.run(main())
    # Read as the clients read them: a refusal of the model, which stops the backend.
    for status, raw, classify in ((s1, openai, classify_openai), (s2, gemini, classify_gemini)):
        error = classify(status, {}, ErrorBody.read(raw))
        assert status == 404 and isinstance(error, Refused) and error.stops
    assert json.loads(openai)["error"]["code"] == "model_not_found"
    assert json.loads(gemini)["error"]["status"] == "NOT_FOUND"
