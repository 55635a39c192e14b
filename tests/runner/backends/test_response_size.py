"""A response body past ``max_response_bytes`` is an error of its own, stored and never parsed,
whether its length is declared or it streams without end."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web

from conditions import Configuration, Decoding, Request, RequestKey, Transport
from runner.backends import ApiKey, AttemptRecord, Client, ask
from tests.runner.backends.loopback import Handler, serving_posts

CAP = 64 << 10


def _chat(answer: str) -> bytes:
    choice = {"message": {"content": answer}, "finish_reason": "stop"}
    return json.dumps({"id": "x", "choices": [choice]}).encode()


async def _declared_huge(request: web.Request) -> web.StreamResponse:
    return web.Response(body=_chat("1 " * CAP), content_type="application/json")


async def _endless_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(b'{"choices": [{"message": {"content": "')
    for _ in range(10_000):  # 160 MB unless the client stops reading
        try:
            await response.write(b"1, " * 5461)
        except (ConnectionError, RuntimeError):
            break
    return response


async def _small(request: web.Request) -> web.StreamResponse:
    return web.Response(body=_chat("[1, 2, 3, 4]"), content_type="application/json")


async def _record(handler: Handler) -> AttemptRecord:
    request = Request(
        RequestKey(configuration="c", condition="base", budget=2, qid="q1"),
        "p",
        "outline",
        None,
        Decoding(),
        0,
    )
    async with serving_posts(handler) as url:
        transport = Transport(base_url=url, max_response_bytes=CAP, max_transport_retries=0)
        configuration = Configuration(name="c", provider="qwen", model="m", transport=transport)
        async with Client(configuration, ApiKey("sk-test-0123456789")) as backend:
            (record, *_) = await ask(backend, request, lambda r: None)
    return record


@pytest.mark.parametrize("handler", [_declared_huge, _endless_stream], ids=["declared", "stream"])
def test_a_body_past_the_cap_is_a_stored_error_never_parsed(handler: Handler) -> None:
    record = asyncio.run(_record(handler))
    assert record.outcome == "fatal" and record.error_code == "response-too-large"
    assert record.answer is None and not record.parseable
    assert record.error_message is not None and "65,536 bytes" in record.error_message


def test_a_body_under_the_cap_answers() -> None:
    record = asyncio.run(_record(_small))
    assert record.outcome == "answer" and record.parseable
