"""A server that echoes the key it is sent, anywhere in its reply, gets none of it stored.

The echoing server runs on loopback (port 0). Every field of the record an attempt produces is
searched for the key and for any piece of it of 8 characters or more; a redirect to a second
server must not carry the key there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from conditions import Configuration, Decoding, Request, RequestKey, Transport
from runner._errors import ConfigError
from runner.backends import FRAGMENT, ApiKey, AttemptRecord, Client, ask
from tests.runner.backends.loopback import serving_posts

# A UUID-style key (as Volcengine Ark issues) matches no key shape: only its value can find it.
KEY = "0f3c9e2a-7b41-4d8e-9a6f-2c5d1e8b7a90"
Reply = Callable[[str], web.StreamResponse]


def _key_sent(request: web.Request) -> str:
    return request.headers.get("x-goog-api-key") or request.headers["Authorization"][7:]


def _echo_chat(key: str) -> web.StreamResponse:
    return web.json_response({
        "id": f"chatcmpl-{key}",
        "model": f"m {key[:30]}",  # a piece of it, cut
        "choices": [{
            "message": {"content": f"[1, 2, 3, 4, 5, 6, 7, 8] {key}", "reasoning_content": key},
            "finish_reason": key[5:20],
        }],
    })  # fmt: skip


def _echo_gemini(key: str) -> web.StreamResponse:
    return web.json_response({
        "responseId": key,
        "modelVersion": key[::-1][:5] + key[3:14],
        "candidates": [{
            "content": {"parts": [{"text": key[:35], "thought": True}, {"text": f"ok {key}"}]},
            "finishReason": f"STOP {key}",
        }],
    })  # fmt: skip


def _echo_error(key: str) -> web.StreamResponse:
    error = {"code": key, "type": "invalid_request_error", "message": f"bad key {key[:35]}…"}
    return web.json_response({"error": error}, status=400)


def _echo_broken(key: str) -> web.StreamResponse:
    return web.Response(body=f"<html>upstream {key} failed", content_type="text/html")


@asynccontextmanager
async def _serving(reply: Reply) -> AsyncIterator[tuple[str, list[str]]]:
    """A server answering every POST with ``reply(key it was sent)``; yields its URL and the
    keys it received."""
    received: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        received.append(_key_sent(request))
        return reply(received[-1])

    async with serving_posts(handle) as url:
        yield url, received


def _configuration(provider: str, url: str) -> Configuration:
    transport = Transport(base_url=url, requests_per_minute=6000, max_transport_retries=0)
    return Configuration(name="c", provider=provider, model="m", transport=transport)


def _request() -> Request:
    return Request(
        RequestKey(configuration="c", condition="base", budget=8, qid="q1"),
        "p",
        "outline it",
        None,
        Decoding(),
        0,
    )


async def _one_record(configuration: Configuration) -> AttemptRecord:
    async with Client(configuration, ApiKey(KEY)) as backend:
        (record, *_) = await ask(backend, _request(), lambda r: None)
    return record


def _leaks(record: AttemptRecord) -> list[str]:
    """The fields of ``record`` holding a piece of the key at least FRAGMENT long."""
    pieces = {KEY[i : i + FRAGMENT] for i in range(len(KEY) - FRAGMENT + 1)}
    text = {k: str(v) for k, v in record.model_dump().items()}
    return [k for k, v in text.items() if any(p in v for p in pieces)]


@pytest.mark.parametrize(
    ("provider", "reply", "outcome"),
    [
        ("doubao", _echo_chat, "answer"),
        ("gemini", _echo_gemini, "answer"),
        ("doubao", _echo_error, "fatal"),
        ("doubao", _echo_broken, "transient"),
    ],
    ids=["chat-answer", "gemini-answer", "error-body", "broken-body"],
)
def test_a_key_echoed_anywhere_in_a_reply_is_stored_nowhere(
    provider: str, reply: Reply, outcome: str
) -> None:
    async def main() -> tuple[AttemptRecord, list[str]]:
        async with _serving(reply) as (url, received):
            return await _one_record(_configuration(provider, url)), received

    record, received = asyncio.run(main())
    assert received and set(received) == {KEY}  # the server did get the key, and echoed it
    assert record.outcome == outcome
    assert _leaks(record) == []
    if outcome != "transient":  # a broken body is described, not quoted
        assert "[redacted]" in json.dumps(record.model_dump(mode="json"))


@pytest.mark.parametrize("provider", ["doubao", "gemini"])
def test_a_redirect_elsewhere_is_not_followed_and_says_where_it_pointed(provider: str) -> None:
    def redirect_to(target: str) -> Reply:
        return lambda key: web.Response(status=307, headers={"Location": f"{target}/v1/x"})

    async def main() -> tuple[AttemptRecord, list[str], list[str]]:
        async with (
            _serving(lambda key: web.json_response({})) as (elsewhere, stolen),
            _serving(redirect_to(elsewhere)) as (url, received),
        ):
            record = await _one_record(_configuration(provider, url))
            return record, received, stolen

    record, received, stolen = asyncio.run(main())
    assert received == [KEY] and stolen == []  # the other server heard nothing, key or not
    assert record.outcome == "fatal" and record.http_status == 307
    assert record.error_message is not None
    assert record.error_message.startswith("the server redirects to http://127.0.0.1:")


@pytest.mark.parametrize(
    "model",
    [f"m-{KEY}", f"x{KEY[4:16]}", "sk-proj-abcdefghijklmnop"],
    ids=["whole", "piece", "shape"],
)
def test_a_model_name_holding_the_key_is_refused_in_one_line(model: str) -> None:
    configuration = Configuration(name="c", provider="doubao", model=model)
    with pytest.raises(
        ConfigError, match=r"^configuration c: its model holds an API key;"
    ) as caught:
        Client(configuration, ApiKey(KEY))
    assert KEY[:FRAGMENT] not in str(caught.value) and "\n" not in str(caught.value)


def test_a_url_holding_the_key_is_refused() -> None:
    transport = Transport(base_url=f"http://127.0.0.1:9/{KEY}")
    configuration = Configuration(name="c", provider="doubao", model="m", transport=transport)
    with pytest.raises(ConfigError, match="its URL holds an API key"):
        Client(configuration, ApiKey(KEY))
