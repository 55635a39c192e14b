"""A backend: every call of one configuration, through one limiter and one HTTP session.

:meth:`Client.send` makes one attempt: it posts the request by the one HTTP exchange
(:mod:`runner.backends._exchange`) and retries transport failures by the one retry policy
(:mod:`runner.backends._retry`; a throttle waits out the pause the limiter imposed, which
honours the server's retry-after), bounded by a number of tries and by time. Fatal errors
and spent quota are never retried. Once a terminal error is seen (spent quota; a refused key,
permission or model) the backend stops: every later call is refused before it is sent, and
the calls already waiting for a rate slot leave it unsent (the limiter checks after the wait,
not before), so a run never pays for calls it knows fail.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self

import aiohttp
import aiohttp.payload
from aiohttp.abc import AbstractStreamWriter
from tenacity import RetryCallState

from conditions import (
    CONDITIONS,
    REASONINGS,
    Configuration,
    Decoding,
    Request,
    reasoning_decoding,
)
from runner._errors import ConfigError
from runner.backends._anthropic import AnthropicMessages
from runner.backends._errors import CallError, QuotaExhausted, RateLimited, Unreadable
from runner.backends._exchange import Peer, billed_exchange, scrubbed
from runner.backends._gemini import GeminiGenerate
from runner.backends._limits import Clock, RateLimiter, Slot, Stopped
from runner.backends._openai import OpenAIChat
from runner.backends._origin import OffOrigin, Origin
from runner.backends._providers import Provider, provider_named, thinking_fields
from runner.backends._retry import RetryPolicy
from runner.backends._secrets import KEY_SHAPED, ApiKey, clip, holds_key, key_from_env, redact
from runner.backends._served import ModelCheck, check_model
from runner.backends._usage import INPUT_MARGIN, Bill, Usage, Worst
from runner.backends._wire import Body, Reply, WireFormat

log = logging.getLogger("groundbench.backends")

IMAGE_PATCH = 28  # pixels per image token side: a rough, provider-neutral estimate
DEFAULT_OUTPUT_ESTIMATE = 1024  # tokens expected per answer before any usage is reported
# OpenAI's header for a client-chosen request id (echoed in its logs for support); other
# providers ignore it. The simulator answers by it, so a resent call is the same call.
CALL_ID_HEADER = "X-Client-Request-Id"


def call_id(request: Request, attempt: int) -> str:
    """The id of one attempt at ``request``: the same for each transport retry and resend."""
    return f"gb-{request.fingerprint[:24]}-r{request.replicate}-a{attempt}"


@dataclass(frozen=True)
class Exchange:
    """A completed response and how it was obtained."""

    reply: Reply
    status: int
    latency_s: float
    transport_retries: int
    started_at: datetime
    billed: Bill  # what the response is counted at


def wire_format(
    provider: Provider, model: str, *, max_tokens_field: str | None = None
) -> WireFormat:
    """The wire format that talks to ``provider`` about ``model`` (``max_tokens_field``: the
    backend's choice of the OpenAI wire's output-allowance field)."""
    if provider.wire == "gemini":
        return GeminiGenerate(model)
    if provider.wire == "anthropic":
        return AnthropicMessages(model)
    return OpenAIChat(provider, model, max_tokens_field=max_tokens_field)


def decodings(configuration: Configuration) -> list[Decoding]:
    """Every decoding the configuration's conditions send (the polygon grid's, or a box
    benchmark's reasoning settings)."""
    names = set(configuration.conditions)
    base = configuration.decoding
    grid = [c.decoding(base) for c in CONDITIONS if c.name in names]
    return grid + [reasoning_decoding(r, base) for r in REASONINGS if r in names]


def key_for(simulator_key: str | None) -> Callable[[Configuration], ApiKey | None]:
    """How a backend gets its key: the simulator's for a simulated backend (a real key never
    goes to the simulator), else the configured variable of this process's environment;
    ``None`` for a provider that needs none where the backend names no variable."""

    def key(configuration: Configuration) -> ApiKey | None:
        if simulator_key is not None:
            return ApiKey(simulator_key)
        return configured_key(configuration)

    return key


def key_variable(configuration: Configuration) -> str | None:
    """The variable ``configuration``'s key is read from: the backend's, else its provider's
    (``None``: a provider that needs no key, and the backend names none)."""
    provider = provider_named(configuration.provider)
    return configuration.transport.api_key_env or provider.key_variable


def configured_key(configuration: Configuration) -> ApiKey | None:
    """The key in :func:`key_variable`, or ``None`` where there is no variable to read.

    Raises
    ------
    ConfigError
        The variable is named but not set.
    """
    variable = key_variable(configuration)
    return None if variable is None else key_from_env(variable)


def worst_of(request: Request, input_bound: int | None) -> Worst:
    """The most one call of ``request`` can be billed: ``input_bound`` (the spending cap's,
    which it reserved for the call) or, where none is given, :data:`INPUT_MARGIN` times the
    request's rough input; and its ``max_output_tokens``."""
    if input_bound is None:
        input_bound = math.ceil(INPUT_MARGIN * rough_input_tokens(request))
    return Worst(input_bound, request.decoding.max_output_tokens)


def rough_input_tokens(request: Request) -> int:
    """The input tokens of ``request`` before a provider has counted any: the prompt's
    characters / 4, and one token per 28-pixel patch of the image."""
    image = 0
    if request.image is not None:
        w, h = request.image.width, request.image.height
        image = math.ceil(w / IMAGE_PATCH) * math.ceil(h / IMAGE_PATCH)
    return len(request.prompt) // 4 + image


class Client:
    """All calls of one configuration on its backend: wire format, rate limiter (the
    backend's, shared by its configurations), session, key.

    Use as ``async with Client(...) as client:``; the HTTP session lives inside the block.

    Raises
    ------
    ConfigError
        Unknown provider, or a decoding the provider's API cannot express.
    """

    def __init__(
        self,
        configuration: Configuration,
        key: ApiKey | None,
        *,
        clock: Clock = time.monotonic,
        limiter: RateLimiter | None = None,
    ):
        self.configuration = configuration
        self.provider = provider_named(configuration.provider)
        for decoding in decodings(configuration):  # refuse an unmappable setting up front
            try:
                thinking_fields(self.provider.name, decoding.thinking)
                self.provider.check(decoding)
            except ConfigError as exc:
                raise ConfigError(f"configuration {configuration.name}: {exc}") from None
        transport = configuration.transport
        self.wire = wire_format(
            self.provider, configuration.model, max_tokens_field=transport.max_tokens_field
        )
        base_url = transport.base_url or self.provider.base_url
        if base_url is None:
            raise ConfigError(
                f"configuration {configuration.name}: provider {self.provider.name} has no "
                "endpoint of its own; set base_url to the server's (e.g. http://localhost:8000/v1)"
            )
        self.base_url = base_url
        self.url = self.wire.url(base_url)
        _refuse_key_in(configuration.name, {"model": configuration.model, "URL": self.url}, key)
        origin = configured_origin(f"configuration {configuration.name}", base_url)
        # Where each call goes, checked once: the URL is the configured base_url's, fixed here.
        self._send_to = origin.admit(self.url, key)
        self._origin = origin
        self._retry = RetryPolicy.of(transport)
        # Configurations on one account share its limits: the caller passes one limiter to all.
        self.limiter = limiter or RateLimiter.for_transport(transport, clock=clock)
        self.clock = clock
        self._key = key
        self._timeout = aiohttp.ClientTimeout(total=transport.timeout_s)
        self._max_bytes = transport.max_response_bytes
        self._session: aiohttp.ClientSession | None = None
        self._peer: Peer | None = None  # the provider, over the session, once open
        self._owns_session = False
        self._stopped: CallError | None = None  # the terminal error that stopped it
        self._output_tokens = _RunningMean(DEFAULT_OUTPUT_ESTIMATE)
        self.calls_sent = 0  # HTTP calls posted: every try of every attempt, for the counters
        self.retried: Counter[str] = Counter()  # failures tried again, by kind

    @classmethod
    def from_env(
        cls, configuration: Configuration, *, limiter: RateLimiter | None = None
    ) -> Client:
        """A backend whose key is read from the configured (or the provider's) variable."""
        return cls(configuration, configured_key(configuration), limiter=limiter)

    def __repr__(self) -> str:
        return f"Client({self.configuration.name}, {self.provider.name}, {self.url})"

    async def __aenter__(self) -> Self:
        self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def open(self, session: aiohttp.ClientSession | None = None) -> None:
        """Start sending, on ``session`` (shared: :meth:`close` leaves it open) or a new one.

        Call it from the event loop that will send: a session belongs to one loop.
        """
        owns = session is None
        if session is None:
            connector = aiohttp.TCPConnector(limit=self.configuration.transport.max_concurrency)
            session = aiohttp.ClientSession(connector=connector)
        self._session, self._owns_session = session, owns
        self._peer = Peer(
            session=session,
            origin=self._origin,
            key=self._key,
            credentials=self.wire.headers,
            classify=self.wire.classify,
            timeout=self._timeout,
            max_bytes=self._max_bytes,
        )

    async def close(self) -> None:
        if self._session is not None and self._owns_session:
            await self._session.close()
        self._session = None
        self._peer = None

    async def model_check(self, backend: str) -> ModelCheck:
        """What the server's ``GET {base_url}/models`` says of this configuration's model
        (:mod:`runner.backends._served`): a provider that keeps such a list
        (:attr:`Provider.lists_models`) is checked before its calls."""
        if self._peer is None:
            raise RuntimeError("use the backend inside 'async with'")
        return await check_model(self._peer, backend, self.configuration.model, self.base_url)

    @property
    def stopped(self) -> CallError | None:
        """The terminal error (spent quota, its account's or a refused key or model) that
        stopped this backend, if one has."""
        self._is_stopped()
        return self._stopped

    async def send(
        self,
        request: Request,
        attempt: int = 0,
        *,
        call: str | None = None,
        input_bound: int | None = None,
    ) -> Exchange:
        """Attempt number ``attempt`` at ``request``: post it, retrying transport failures.
        ``call``: the id sent in :data:`CALL_ID_HEADER` (default: :func:`call_id`), for a
        call that is no attempt of the grid (a check's).

        A 2xx response is billed whether its answer can be read or not: it ends the attempt
        either way (one whose answer cannot be read is :class:`Unreadable`, never tried again
        within the attempt, so no retry is paid for), and its :class:`Bill` is the usage it
        reported, or its worst case (:func:`worst_of` with ``input_bound``) where that is
        unknown. Transport retries are of calls no server billed.

        Raises
        ------
        CallError
            The attempt failed: a fatal or terminal error at once; a throttle or transient
            failure once the tries or the time allowed are used up. ``transport_retries``
            on the error says how many retries were made, ``billed`` what was billed.
        """
        if self._is_stopped():
            raise self._not_sent()
        body = self.wire.encode(request)
        headers = {CALL_ID_HEADER: call or call_id(request, attempt)}  # the key: the Peer's
        estimate = self._estimate(request)
        worst = worst_of(request, input_bound)
        started_at = datetime.now(UTC)
        retrying = self._retry.retrying(before_sleep=self._log_retry)
        tries = 0
        try:
            async for retry in retrying:
                with retry:
                    tries += 1
                    sent = _Sent(body, headers, estimate, tries - 1, started_at, worst)
                    return await self._post(sent)
        except CallError as exc:
            exc.transport_retries = tries - 1
            raise
        raise AssertionError("tenacity neither returned nor raised")  # pragma: no cover

    async def _post(self, sent: _Sent) -> Exchange:
        if self._is_stopped():  # stopped while this request waited to retry
            raise self._not_sent()
        peer = self._peer
        if peer is None:
            raise RuntimeError("use the backend inside 'async with'")
        try:
            async with self.limiter.slot(sent.estimate, given_up=self._is_stopped) as slot:
                return await self._exchange(peer, sent, slot)
        except Stopped:  # stopped while this call waited for its slot: it never leaves
            raise self._not_sent() from None

    def _is_stopped(self) -> bool:
        """Whether this backend, or its account's quota, stopped it."""
        halted = self.limiter.halted
        if self._stopped is None and isinstance(halted, CallError):
            self._stopped = halted  # another configuration of the account met its quota
        return self._stopped is not None

    async def _exchange(self, peer: Peer, sent: _Sent, slot: Slot) -> Exchange:
        self.calls_sent += 1  # the POST goes on the wire now
        begun = self.clock()
        try:
            answer = await billed_exchange(
                peer, "POST", self._send_to, headers=sent.headers, data=PartsPayload(sent.body),
                observe=self.limiter.observe,
            )  # fmt: skip
        except CallError as exc:
            if exc.status is not None and 200 <= exc.status < 300:  # answered: billed
                if exc.retryable:  # cut short: no retry pays for it twice
                    exc = Unreadable(exc.message, status=exc.status)
                exc.billed = Bill.of(Usage(), sent.worst)
            raise self._failed(exc, slot, self.clock() - begun) from None
        latency = self.clock() - begun
        try:
            reply = redact_reply(self.wire.decode(answer.body), self._key)
        except Unreadable as exc:  # billed all the same, at what it reported
            raise self._unread(exc, answer.status, sent.worst, slot, latency) from None
        except Exception as exc:  # a body no rule foresaw: this attempt's error, not the run's
            error = Unreadable(f"unreadable response body ({type(exc).__name__})")
            raise self._unread(error, answer.status, sent.worst, slot, latency) from None
        slot.settle(reply.usage.total)
        self._output_tokens.add(reply.usage.output_tokens)
        self.limiter.succeeded()
        bill = Bill.of(reply.usage, sent.worst)
        return Exchange(reply, answer.status, latency, sent.retries, sent.started, bill)

    def _unread(
        self, error: Unreadable, status: int, worst: Worst, slot: Slot, latency: float
    ) -> CallError:
        """The error of a 2xx whose answer could not be read: billed at what it reported."""
        error.status, error.latency_s = status, latency
        error.billed = Bill.of(error.usage, worst)
        slot.settle(error.usage.total)
        return self._scrubbed(error)

    def _failed(self, error: CallError, slot: Slot, latency: float) -> CallError:
        """``error`` (the exchange's, scrubbed) as it bears on the backend: a throttle pauses
        the limiter, a terminal error stops the backend."""
        if error.status is not None:  # a server answered
            error.latency_s = latency
        if isinstance(error, RateLimited):
            error.retry_after = self.limiter.throttled(slot, error.retry_after)
        elif error.stops and self._stopped is None:
            self._stopped = error
            # The calls waiting for a slot leave unsent, now: for spent quota (the account's)
            # every configuration's on the limiter, else this configuration's.
            if isinstance(error, QuotaExhausted):
                self.limiter.halt(error)
            else:
                self.limiter.wake()
            name = self.configuration.name
            log.error("%s: %s, no further calls: %s", name, error.stopped_because, error)
        return error

    def _scrubbed(self, error: CallError) -> CallError:
        return scrubbed(error, self._key)

    def _not_sent(self) -> CallError:
        """The error of a call the stopped backend refuses to send: of the class that stopped
        it, so that it stops whoever sends, as the first did."""
        stop = self._stopped
        assert stop is not None
        return type(stop)(
            f"not sent: {self.configuration.name} stopped earlier, as "
            f"{stop.stopped_because} ({stop.message})",
            status=stop.status,
            code=stop.code,
            sent=False,
        )

    def _estimate(self, request: Request) -> int:
        output = min(request.decoding.max_output_tokens, round(self._output_tokens.mean))
        return rough_input_tokens(request) + output

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        if isinstance(exc, CallError):
            self.retried[exc.kind] += 1
        log.info(
            "%s: retry %d in %.2f s after %s",
            self.configuration.name,
            state.attempt_number,
            wait,
            exc,  # CallError's str is built from redacted text only
        )


@dataclass(frozen=True)
class _Sent:
    """One try of an attempt: what goes on the wire, and the most it can be billed."""

    body: Body
    headers: Mapping[str, str]
    estimate: int  # tokens the limiter counts it at before it is answered
    retries: int  # tries of the attempt before this one
    started: datetime  # when the attempt began
    worst: Worst


class PartsPayload(aiohttp.payload.Payload):
    """A :class:`Body` sent piece by piece, with its length known up front (no chunking)."""

    _value: Body

    def __init__(self, body: Body) -> None:
        super().__init__(body, content_type="application/json")
        self._size = len(body)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return bytes(self._value).decode(encoding, errors)

    async def write(self, writer: AbstractStreamWriter) -> None:
        for part in self._value.parts:
            await writer.write(part)


def _refuse_key_in(name: str, texts: Mapping[str, str], key: ApiKey | None) -> None:
    """Refuse a configuration that would write its key where it is logged and stored."""
    for what, text in texts.items():
        if (key is not None and holds_key(text, key)) or KEY_SHAPED.search(text):
            raise ConfigError(
                f"configuration {name}: its {what} holds an API key; a key goes only in the "
                "environment variable the backend names (api_key_env)"
            )


def configured_origin(name: str, base_url: str) -> Origin:
    """The origin of ``name``'s configured ``base_url`` (``name``: "backend qwen"): where its
    key may go, and nowhere else.

    Raises
    ------
    ConfigError
        ``base_url`` is no ``http(s)://`` address with a host.
    """
    try:
        return Origin.of(base_url)
    except OffOrigin as exc:
        raise ConfigError(f"{name}: base_url: {exc.message}") from None


def redact_reply(reply: Reply, key: ApiKey | None) -> Reply:
    """``reply`` with the key redacted from every text the server wrote, and its short texts
    (finish reason, model, id) capped (:func:`clip`); the answer and reasoning are bounded
    by the response's size cap."""

    def scrub(text: str | None) -> str | None:
        return None if text is None else clip(text, key)

    return dataclasses.replace(
        reply,
        answer=redact(reply.answer, key),
        reasoning=redact(reply.reasoning, key),
        finish_reason=scrub(reply.finish_reason),
        model=scrub(reply.model),
        response_id=scrub(reply.response_id),
    )


class _RunningMean:
    def __init__(self, prior: float) -> None:
        self.mean = prior
        self.count = 0

    def add(self, value: int | None) -> None:
        if value is None:
            return
        self.count += 1
        self.mean += (value - self.mean) / self.count
