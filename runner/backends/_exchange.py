"""The one HTTP exchange: every request a provider receives goes through :func:`exchanging`
(an online call, a batch's upload, create, poll, cancel and list, a file's download and
deletion), so each rule below is written once:

- the URL is checked against the origin the experiment file configures
  (:meth:`~runner.backends._origin.Origin.admit`) before anything is sent, and the key is
  attached to the request only then, by :attr:`Peer.credentials`: here and nowhere else;
- no redirect is followed (it would carry the key to another server): a 3xx is a
  :class:`Fatal` error naming where it pointed;
- a body is read up to a cap (:class:`TooLarge` past it, never read whole);
- a timeout, or an aiohttp client error (refused, reset, cut short), is :class:`Transient`,
  while the response is awaited and while a streamed body is read alike; one met reading the
  body of a 2xx of a billed call (:func:`billed_exchange`) keeps that status;
- a non-2xx answer is classified by the wire's classifier, from its body parsed once
  (:class:`~runner.backends._wire.ErrorBody`): no caller re-serialises JSON to reuse one;
- every error's text is redacted of the key and capped (:func:`scrubbed`) before it is raised.

Nothing here retries: :mod:`runner.backends._retry` is the one policy, applied by the caller.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import aiohttp
from yarl import URL

from runner.backends._errors import CallError, Fatal, TooLarge, Transient
from runner.backends._origin import Origin
from runner.backends._secrets import MAX_MESSAGE, ApiKey, clip, redact
from runner.backends._wire import ErrorBody

Classifier = Callable[[int, Mapping[str, str], ErrorBody], CallError]
Observer = Callable[[Mapping[str, str]], None]


@dataclass(frozen=True)
class Peer:
    """A provider as its exchanges reach it: the session, where its key may go, the key and
    the headers that carry it, how its errors read, how long to wait and how much to read."""

    session: aiohttp.ClientSession
    origin: Origin  # the configured base_url's: the key goes to no other
    key: ApiKey | None  # None: a server that takes no key (no credential header is sent)
    credentials: Callable[[ApiKey | None], Mapping[str, str]]  # the headers that carry it
    classify: Classifier  # the wire's: a non-2xx answer's error
    timeout: aiohttp.ClientTimeout
    max_bytes: int  # the most of a body read into memory (a streamed one is the caller's)


@dataclass(frozen=True)
class Answer:
    """A 2xx response, read whole."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Sending(TypedDict, total=False):
    """What a request sends besides its method and URL (all optional)."""

    headers: Mapping[str, str]  # besides the key's, which the Peer adds
    data: object  # a body: bytes, a payload, a form, an open file
    json: Mapping[str, Any] | None  # a body serialised as JSON
    params: Mapping[str, str] | None  # the query
    keyed: bool  # whether the key goes (default True): an upload URL is its own credential
    observe: Observer  # shown every response's headers (the limiter reads rate headers)


async def exchange(peer: Peer, method: str, url: str | URL, **sending: Unpack[Sending]) -> Answer:
    """One request and its 2xx answer, its body read up to ``peer.max_bytes``; any failure
    raised as its :class:`CallError` (see the module docstring)."""
    async with exchanging(peer, method, url, **sending) as response:
        body = await read_capped(response, peer.max_bytes)
        return Answer(response.status, response.headers, body)


async def billed_exchange(
    peer: Peer, method: str, url: str | URL, **sending: Unpack[Sending]
) -> Answer:
    """:func:`exchange`, for a call a 2xx bills (a model's answer): a failure met reading the
    body of a 2xx keeps its status, so the caller counts what it was billed."""
    async with exchanging(peer, method, url, **sending) as response:
        try:
            body = await read_capped(response, peer.max_bytes)
        except TimeoutError:
            late = Transient(f"no response within {_waited(peer.timeout):g} s")
            raise _cut_short(late, response) from None
        except aiohttp.ClientError as exc:
            raise _cut_short(connection_failed(exc, peer.key), response) from None
        return Answer(response.status, response.headers, body)


def _cut_short(error: CallError, response: aiohttp.ClientResponse) -> CallError:
    """``error``, met reading the body of a 2xx: it keeps that status."""
    error.status = response.status
    error.message = f"cut short after its headers: {error.message}"
    error.args = (error.message,)
    return error


@asynccontextmanager
async def exchanging(
    peer: Peer, method: str, url: str | URL, **sending: Unpack[Sending]
) -> AsyncIterator[aiohttp.ClientResponse]:
    """``async with``: a request's 2xx response, open for its body to be streamed; a timeout
    or a broken connection while it is read is :class:`Transient` too."""
    checked = peer.origin.admit(url, peer.key)  # OffOrigin: nothing is sent
    key = peer.credentials(peer.key) if sending.get("keyed", True) else {}
    observe = sending.get("observe")
    try:
        async with peer.session.request(
            method,
            checked,
            headers={**key, **sending.get("headers", {})},
            data=sending.get("data"),
            json=sending.get("json"),
            params=sending.get("params"),
            timeout=peer.timeout,
            allow_redirects=False,  # a redirect would carry the key to another server
        ) as response:
            if observe is not None:
                observe(response.headers)
            if not 200 <= response.status < 300:
                raw = await read_capped(response, peer.max_bytes)
                raise failed(peer, response.status, response.headers, raw)
            yield response
    except TimeoutError:
        raise Transient(f"no response within {_waited(peer.timeout):g} s") from None
    except aiohttp.ClientError as exc:
        raise connection_failed(exc, peer.key) from None


def failed(peer: Peer, status: int, headers: Mapping[str, str], raw: bytes) -> CallError:
    """The error of a non-2xx answer: a redirect's, or the wire's class for it, scrubbed."""
    if 300 <= status < 400:
        return redirected(status, headers, peer.key)
    try:
        classified = peer.classify(status, headers, ErrorBody.read(raw))
    except Exception:  # an error body no rule foresaw: classified by its status alone
        classified = peer.classify(status, headers, ErrorBody({}))
    return scrubbed(classified, peer.key)


async def read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, decompressed; :class:`TooLarge` once it runs past ``limit`` bytes (the rest
    is never read)."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise TooLarge(limit, response.status)
    body = bytearray()
    async for chunk in response.content.iter_chunked(1 << 16):
        body += chunk
        if len(body) > limit:
            raise TooLarge(limit, response.status)
    return bytes(body)


def scrubbed(error: CallError, key: ApiKey | None) -> CallError:
    """``error`` with every text from the server redacted of the key and capped (:func:`clip`)."""
    error.message = clip(error.message, key, MAX_MESSAGE)
    error.code = None if error.code is None else clip(error.code, key)
    error.args = (error.message,)
    return error


def redirected(status: int, headers: Mapping[str, str], key: ApiKey | None) -> Fatal:
    """The error of a redirect, never followed: it would carry the key to another server."""
    location = redact(headers.get("Location", "(no Location header)"), key)
    return Fatal(
        f"the server redirects to {location}: groundbench sends a key to no address but the "
        "configured one; if that address is right, set base_url to it",
        status=status,
        code="redirect",
    )


def connection_failed(exc: aiohttp.ClientError, key: ApiKey | None) -> Transient:
    """A connection that failed (refused, reset, cut short), its words redacted of the key."""
    detail = redact(str(exc), key) or "connection failed"
    return Transient(f"{type(exc).__name__}: {detail}")


def _waited(timeout: aiohttp.ClientTimeout) -> float:
    """The limit a timeout met: the whole exchange's, else a read's (a long download has no
    total, but no read may stall)."""
    if timeout.total is not None:
        return timeout.total
    return timeout.sock_read or 0.0


__all__ = [
    "Answer",
    "Classifier",
    "Peer",
    "Sending",
    "connection_failed",
    "exchange",
    "exchanging",
    "failed",
    "read_capped",
    "redirected",
    "scrubbed",
]
