"""The simulator's HTTP server: every wire format, answers from a cohort or a box benchmark's
questions, injected faults.

It serves ``POST …/chat/completions`` (OpenAI-compatible, whatever the prefix, so any
provider's ``base_url`` can point at it), ``POST …/models/<model>:generateContent`` (Gemini) and
``POST …/v1/messages`` (Anthropic), and each provider's batch API: OpenAI's files and batches
(:mod:`runner.simulator._openai_batches`, which DashScope copies), Gemini's
``batchGenerateContent`` (:mod:`runner.simulator._gemini_batches`) and Anthropic's Message
Batches (:mod:`runner.simulator._anthropic_batches`), whose requests are answered as the online
calls. It tells which question it is asked from the expression in the prompt and the image's
bytes (matched against the questions' image variants, indexed lazily), reads the hints and the
reasoning setting, and answers through :mod:`runner.simulator._model` (GroundBench's questions)
or :mod:`runner.simulator._boxes` (a box benchmark's, in its own answer form).

Faults are decided per request in this order: authentication (when the spec names a key),
the rate limit (a token bucket, a sliding or a fixed window: :mod:`runner.simulator._limiters`;
429 with retry-after, and ``x-ratelimit-*`` headers on every reply), spent quota after K
answers, connection resets, latency, 5xx and overload, and last malformed, truncated or deep
bodies (1 MB of ``[``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from aiohttp import web

from conditions import (
    BoxQuestion,
    BoxSet,
    Cohort,
    Question,
    Questions,
    Variant,
    VariantCache,
    capped_size,
    sent_scale,
)
from runner.simulator._anthropic_batches import AnthropicBatchService
from runner.simulator._boxes import box_answer
from runner.simulator._gemini_batches import GeminiBatchService
from runner.simulator._limiters import Limits, Verdict, make_limiter
from runner.simulator._model import Answer, Seen, Truth, answer
from runner.simulator._openai_batches import OpenAIBatchService
from runner.simulator._profiles import PROFILES
from runner.simulator._prompts import BOX_PROMPTS, COLOUR, SPATIAL, expression_and_budget
from runner.simulator._spec import Faults, SimSpec
from runner.simulator._traced import profile_answer
from runner.simulator._wires import (
    WIRES,
    BadRequest,
    Doc,
    Parsed,
    Usage,
    WireFormat,
    wire_for,
)

_IMAGE_TOKEN = 28
_PAUSE_POLL_S = 0.05  # how often a held call looks whether the simulator still pauses
# The request id a client may choose (OpenAI's name for it): one per call, kept on retries.
CALL_ID_HEADER = "X-Client-Request-Id"
DEEP_BODY = b"[" * 1_000_000  # the deep fault's body (Faults.deep)
# Most requests send the full image: index those first, the rarer variants only when needed.
_INDEX_PASSES: tuple[tuple[Variant, ...], ...] = (("full",), ("half", "grey"))


@dataclass
class SimStats:
    """What the server did, for tests and benchmarks."""

    statuses: Counter[int] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    admitted_at: list[float] = field(default_factory=list)  # monotonic times of admitted calls
    throttled_at: list[float] = field(default_factory=list)  # and of calls answered 429
    answered: int = 0
    paid: Counter[str] = field(default_factory=Counter)  # answers made, per call
    delays_s: list[float] = field(default_factory=list)  # injected latencies
    batches_created: int = 0  # batches the batch endpoints created (any wire)
    submitted: Counter[str] = field(default_factory=Counter)  # batches each custom id was in

    @property
    def paid_twice(self) -> int:
        """Answers made again for a call already answered: what a client paid more than once."""
        return sum(n - 1 for n in self.paid.values())


class Simulator:
    """A local stand-in for the providers' APIs, answering from ``questions``: a cohort, or a
    box benchmark's questions.

    ``images`` and ``cache`` are the directory of the questions' images and the variant cache:
    the same ones the runner uses, so a variant is rendered once for both.
    """

    def __init__(
        self,
        questions: Questions,
        images: Path | str,
        cache: VariantCache,
        spec: SimSpec | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.questions = questions
        self.images = Path(images)
        self.cache = cache
        self.spec = spec = spec if spec is not None else SimSpec()
        self.stats = SimStats()
        self._by_expression: dict[str, list[str]] = {}
        for q in questions.questions:
            self._by_expression.setdefault(q.expression, []).append(q.qid)
        self._image_index: dict[str, tuple[str, Variant]] = {}
        self._indexed: set[tuple[str, Variant]] = set()
        self._occurrences: Counter[str] = Counter()
        self._arrivals: Counter[str] = Counter()
        self._calls = 0
        self.clock = clock
        # Where the clock's zero lies in unix time. The clock is monotonic (its zero is
        # arbitrary, and a test's clock starts at 0), so the timestamps the APIs document as
        # unix seconds are this offset plus the clock: real time, moving as the clock moves.
        self._epoch = time.time() - clock()
        self._limits = _limits(spec.faults)
        self.openai_batches = OpenAIBatchService(self)
        self.anthropic_batches = AnthropicBatchService(self)
        # While True, an admitted call waits before it is answered: a test holds a run going
        # for as long as it needs (another process to attach), then lets it end.
        self.paused = False
        # Pause once this many answers are made: a test acts at that point of a run whatever
        # the machine's speed (a poll of the count may come late, and the run be over by then).
        self.pause_after: int | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        # Anthropic's and Gemini's first: their paths (/v1/messages/batches, /v1beta/batches)
        # end as OpenAI's any-prefix routes do, which would take them; all before the online
        # catch-all (Anthropic's takes every path under /v1/messages/batches).
        self.anthropic_batches.install(app)
        GeminiBatchService(self).install(app)
        self.openai_batches.add_routes(app)
        app.router.add_post("/{path:.*}", self._handle)
        # OpenAI's list-models, which a local server answers at its base: the check's.
        for path in ("/models", "/v1/models"):
            app.router.add_get(path, self._models)
        return app

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """``GET /models``: the models the spec serves, in OpenAI's list shape; 404 where it
        serves any name (no list to give), as a bare proxy answers."""
        wire = WIRES[0]
        if not self._authorised(request, wire):
            status, doc = wire.bad_key(self._bad_key_message(request))
            return self._send(status, json.dumps(doc).encode(), {})
        if self.spec.models is None:
            return self._error(wire, 404, "not_found", "no model list: any model is served", {})
        data = [{"id": m, "object": "model", "owned_by": "simulator"} for m in self.spec.models]
        return self._send(200, json.dumps({"object": "list", "data": data}).encode(), {})

    # -- the request ---------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        wire = wire_for(request.path)
        if wire is None:
            return self._error(WIRES[0], 404, "not_found", "no such endpoint", {})
        if not self._authorised(request, wire):
            status, doc = wire.bad_key(self._bad_key_message(request))
            return self._send(status, json.dumps(doc).encode(), {})
        verdict = self._admit()
        if verdict is not None and not verdict.admitted:
            return self._throttle(wire, verdict)
        headers = self._limit_headers(wire, verdict)
        self._calls += 1
        if self.spec.faults.quota_after is not None and self._calls > self.spec.faults.quota_after:
            self.stats.faults["quota"] += 1
            return self._quota(wire)
        try:
            parsed = _parse(wire, request.path, await request.read())
        except BadRequest as exc:
            return self._error(wire, 400, "invalid_request_error", str(exc), headers)
        models = self.spec.models
        if models is not None and parsed.model not in models:
            status, doc = wire.unknown_model(parsed.model)
            return self._send(status, json.dumps(doc).encode(), headers)
        image = _digest(parsed.image_b64) if parsed.image_b64 is not None else None
        call, rng, luck = self._generators(parsed, image, request.headers.get(CALL_ID_HEADER))
        fault = self._fault(luck)
        if fault == "reset":
            return await self._reset(request)
        while self.paused:
            await asyncio.sleep(_PAUSE_POLL_S)
        low, high = self.spec.faults.latency_s
        if high > 0:
            delay = luck.uniform(low, high)
            self.stats.delays_s.append(delay)
            await asyncio.sleep(delay)
        if fault == "server_error":
            return self._error(wire, luck.choice((500, 503)), "server_error", "internal", headers)
        if fault == "overloaded":
            return self._overloaded(wire, headers)
        body = json.dumps(self._answered(wire, parsed, image, call, rng)).encode()
        if fault == "malformed":
            return self._send(200, body[: len(body) // 3].replace(b"{", b"<"), headers)
        if fault == "truncated":
            return await self._truncated(request, body, headers)
        if fault == "deep":
            return self._send(200, DEEP_BODY, headers)
        return self._send(200, body, headers)

    def answer_line(self, path: str, raw: bytes, call_id: str | None) -> tuple[int, Doc]:
        """What the online endpoint at ``path`` answers to the body ``raw`` sent as
        ``call_id``, with no fault and no limit: a batch's line (status, JSON body).

        The answer is the online call's (the same seed and call), and is counted as paid.
        """
        wire = wire_for(path)
        if wire is None:
            return 404, WIRES[0].error(404, "not_found", f"no such endpoint: {path}")
        try:
            parsed = _parse(wire, path, raw)
        except BadRequest as exc:
            return 400, wire.error(400, "invalid_request_error", str(exc))
        models = self.spec.models
        if models is not None and parsed.model not in models:
            return wire.unknown_model(parsed.model)
        image = _digest(parsed.image_b64) if parsed.image_b64 is not None else None
        call, rng, _ = self._generators(parsed, image, call_id)
        return 200, self._answered(wire, parsed, image, call, rng)

    def _answered(
        self, wire: WireFormat, parsed: Parsed, image: str | None, call: str, rng: random.Random
    ) -> Doc:
        """The model's answer to ``parsed``, as ``wire`` writes it; counted as paid."""
        reply, image_tokens = self._reply(parsed, image, call, rng)
        self.stats.answered += 1
        self.stats.paid[call] += 1  # the model did the work: billed, whatever reaches the client
        if self.pause_after is not None and self.stats.answered >= self.pause_after:
            self.paused = True
        return _reply_doc(wire, parsed, reply, self.stats.answered, image_tokens, self.unix_time())

    def unix_time(self, at: float | None = None) -> int:
        """The unix time in seconds of the clock's reading ``at`` (None: now)."""
        return int(self._epoch + (self.clock() if at is None else at))

    def _authorised(self, request: web.Request, wire: WireFormat) -> bool:
        given = wire.given_key(request.headers)
        if not given:
            return self.spec.keyless
        return self.spec.api_key is None or given == self.spec.api_key

    @staticmethod
    def _bad_key_message(request: web.Request) -> str:
        # As OpenAI does: the message echoes a masked key (clients must redact it).
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        given = given or request.headers.get("x-goog-api-key", "")
        masked = f"{given[:5]}***{given[-2:]}" if len(given) > 8 else "***"
        return f"Incorrect API key provided: {masked}. You can find your API key in the console."

    def _reply(
        self, parsed: Parsed, image: str | None, call: str, rng: random.Random
    ) -> tuple[Answer, int]:
        """The model's answer, and the tokens its image cost."""
        if isinstance(self.questions, BoxSet):
            return self._box_reply(self.questions, parsed, image, rng)
        seen = self._see(self.questions, parsed, image)
        profile = PROFILES[self.spec.profile]
        tracing = profile.tracing(parsed.model)
        if tracing is None:
            reply = answer(seen, self.questions, self.spec.behaviour, rng)
        else:
            # Partly common random numbers: the luck of (question, budget, attempt) mixed with
            # the cell's own (this model, this request's condition and replicate).
            replicate, attempt = replicate_and_attempt(call)
            reply = profile_answer(
                seen, self.questions, profile, tracing, self.spec.seed, attempt, replicate,
                model=parsed.model,
            )  # fmt: skip
        return reply, self._image_tokens(seen.qid, seen.variant)

    def _box_reply(
        self, questions: BoxSet, parsed: Parsed, image: str | None, rng: random.Random
    ) -> tuple[Answer, int]:
        """A box benchmark's question, answered in its form (thinking: the setting, or Ref-Adv's
        think-first prompt)."""
        benchmark = questions.benchmark
        asked = next(
            ((r, m) for r, p in BOX_PROMPTS[benchmark] if (m := p.fullmatch(parsed.prompt))),
            None,
        )
        found = None
        if asked is not None and image is not None:
            found = self._identify(asked[1].group(1), image)
        if asked is None or found is None:
            return Answer("I cannot tell which object is meant.", ""), 0
        q = questions.question(found[0])
        behaviour = self.spec.behaviour.boxes
        thinking = parsed.thinking or (benchmark == "ref-adv" and asked[0] == "cot")
        reply = box_answer(
            q, benchmark, behaviour.convention, behaviour, rng,
            thinking=thinking, sent_scale=sent_scale(q),
        )  # fmt: skip
        return reply, self._image_tokens(q.qid, found[1])

    def _question(self, qid: str) -> Question | BoxQuestion:
        return self.questions.question(qid)

    def _see(self, cohort: Cohort, parsed: Parsed, image: str | None) -> Seen:
        expression, budget = expression_and_budget(parsed.prompt)
        qid: str | None = None
        variant: Variant = "none"
        if image is not None:
            found = self._identify(expression, image)
            qid, variant = found if found is not None else (None, "full")
        spatial = colour = None
        if qid is not None:
            q = cohort.question(qid)
            if m := SPATIAL.search(parsed.prompt):
                spatial = _truth(m.group(1) == q.cell)
            if m := COLOUR.search(parsed.prompt):
                colour = _truth(m.group(1) == q.colour)
        return Seen(
            qid, expression, budget, variant, spatial, colour, parsed.thinking, parsed.temperature,
            parsed.thinking_budget, parsed.effort,
        )  # fmt: skip

    def _identify(self, expression: str, digest: str) -> tuple[str, Variant] | None:
        """The question and variant of the image whose base64 text has ``digest``."""
        candidates = self._by_expression.get(expression, [])
        for variants in _INDEX_PASSES:
            if digest in self._image_index:
                break
            for qid in candidates:
                for variant in variants:
                    self._index(qid, variant)
        return self._image_index.get(digest)

    def _index(self, qid: str, variant: Variant) -> None:
        if (qid, variant) in self._indexed:
            return
        q = self._question(qid)
        assert q.image_sha256 is not None  # a BoxSet binds every image
        blob = self.cache.get(self.images / q.image_file, q.image_sha256, variant)
        if blob is not None:
            self._image_index[_digest(blob.base64)] = (qid, variant)
        self._indexed.add((qid, variant))

    def _image_tokens(self, qid: str | None, variant: Variant) -> int:
        if qid is None or variant == "none":
            return 0
        q = self._question(qid)
        w, h = capped_size(q.width, q.height)
        scale = 0.5 if variant == "half" else 1.0
        return math.ceil(w * scale / _IMAGE_TOKEN) * math.ceil(h * scale / _IMAGE_TOKEN)

    def _generators(
        self, parsed: Parsed, image: str | None, call: str | None
    ) -> tuple[str, random.Random, random.Random]:
        """The call's name, and generators for its answer and for what goes wrong with it.

        A call is named by the client's request id when it sends one (the runner sends one per
        attempt, the same on every retry and resend), else by its content and how often that
        content was seen before. The answer depends on the seed and the call only, so faults,
        retries and crashes never change what a call answers; the faults of each arrival are
        drawn apart from it.
        """
        content = hashlib.sha256(
            f"{parsed.model}\x00{parsed.prompt}\x00{parsed.thinking}\x00{parsed.temperature}"
            f"\x00{image or ''}".encode()
        ).hexdigest()
        if call is None:
            call = f"{content}:{self._occurrences[content]}"
            self._occurrences[content] += 1
        else:
            call = f"{content}:{call}"
        arrival = self._arrivals[call]
        self._arrivals[call] += 1
        seed = self.spec.seed
        return call, random.Random(f"{seed}:{call}"), random.Random(f"{seed}:{call}:{arrival}")

    def _fault(self, rng: random.Random) -> str | None:
        f = self.spec.faults
        draw = rng.random()
        for name, rate in (
            ("reset", f.reset),
            ("server_error", f.server_error),
            ("overloaded", f.overloaded),
            ("malformed", f.malformed),
            ("truncated", f.truncated),
            ("deep", f.deep),
        ):
            if draw < rate:
                self.stats.faults[name] += 1
                return name
            draw -= rate
        return None

    # -- the rate limit ------------------------------------------------------------------

    def _admit(self) -> Verdict | None:
        """The rate limits' verdict on a call arriving now (``None``: no limit is set)."""
        now = self.clock()
        verdict = self._limits.admit(now) if self._limits is not None else None
        if verdict is None or verdict.admitted:
            self.stats.admitted_at.append(now)
        else:
            self.stats.throttled_at.append(now)
        return verdict

    def _limit_headers(self, wire: WireFormat, verdict: Verdict | None) -> dict[str, str]:
        if not self.spec.faults.ratelimit_headers or verdict is None:
            return {}
        now = self._epoch + self.clock()
        return wire.limit_headers(verdict.limit, verdict.remaining, verdict.reset_s, now)

    def _throttle(self, wire: WireFormat, verdict: Verdict) -> web.Response:
        self.stats.faults["rate-limited"] += 1
        wait = verdict.wait_s
        headers = self._limit_headers(wire, verdict)
        style = self.spec.faults.retry_after
        if style == "ms":
            headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
        elif style == "seconds":
            headers["Retry-After"] = str(max(1, math.ceil(wait)))
        status, doc = wire.throttled(wait, tells_wait=style != "none")
        return self._send(status, json.dumps(doc).encode(), headers)

    def _quota(self, wire: WireFormat) -> web.Response:
        status, doc = wire.quota_spent()
        return self._send(status, json.dumps(doc).encode(), {})

    def _overloaded(self, wire: WireFormat, headers: dict[str, str]) -> web.Response:
        status, doc = wire.overloaded()
        return self._send(status, json.dumps(doc).encode(), headers)

    # -- writing -------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> web.Response:
        self.stats.statuses[status] += 1
        return web.Response(
            status=status, body=body, headers=headers, content_type="application/json"
        )

    def _error(
        self, wire: WireFormat, status: int, code: str, message: str, headers: dict[str, str]
    ) -> web.Response:
        return self._send(status, json.dumps(wire.error(status, code, message)).encode(), headers)

    async def _reset(self, request: web.Request) -> web.StreamResponse:
        self.stats.statuses[0] += 1
        if request.transport is not None:
            request.transport.abort()
        raise asyncio.CancelledError  # the connection is gone: nothing is written

    async def _truncated(
        self, request: web.Request, body: bytes, headers: dict[str, str]
    ) -> web.StreamResponse:
        self.stats.statuses[200] += 1
        response = web.StreamResponse(status=200, headers=headers)
        response.content_type = "application/json"
        response.content_length = len(body)
        await response.prepare(request)
        await response.write(body[: len(body) // 2])
        if request.transport is not None:
            request.transport.abort()
        return response


def _limits(faults: Faults) -> Limits | None:
    """The server's rate limits, of the kind the faults name (``None``: none)."""
    made = [
        make_limiter(faults.limiter, rate, span, faults.burst if span == 60.0 else None)
        for rate, span in ((faults.requests_per_minute, 60.0), (faults.requests_per_second, 1.0))
        if rate is not None
    ]
    return Limits(made) if made else None


# The runner's call id ends in its replicate and attempt (runner.backends.call_id:
# ``gb-<fingerprint>-r<replicate>-a<attempt>``); a call named by its content ends in how often
# that content was seen before, which is its attempt when a client retries as the runner does.
_RUNNER_CALL = re.compile(r"-r(\d+)-a(\d+)$")
_SEEN_BEFORE = re.compile(r":(\d+)$")


def replicate_and_attempt(call: str) -> tuple[int, int]:
    """The replicate and attempt a call's name says (0 and 0 when it says neither).

    >>> replicate_and_attempt("ab12:gb-0123456789abcdef01234567-r1-a2")
    (1, 2)
    >>> replicate_and_attempt("ab12:3")
    (0, 3)
    """
    if m := _RUNNER_CALL.search(call):
        return int(m[1]), int(m[2])
    if m := _SEEN_BEFORE.search(call):
        return 0, int(m[1])
    return 0, 0


def _truth(same: bool) -> Truth:
    return "true" if same else "wrong"


_SAMPLE = 4096


def _digest(b64: bytes) -> str:
    """A fingerprint of an image's base64 text: its length and three 4 KB samples.

    Hashing every byte of a 200 KB image cost the server a tenth of its time per request; the
    cohort's images and their variants already differ in length or in their first, middle or
    last 4 KB (JPEG headers carry the size; the entropy-coded data differs throughout).
    """
    if len(b64) <= 3 * _SAMPLE:
        sample = b64
    else:
        middle = len(b64) // 2
        sample = b64[:_SAMPLE] + b64[middle : middle + _SAMPLE] + b64[-_SAMPLE:]
    return hashlib.sha256(str(len(b64)).encode() + b":" + sample).hexdigest()


def _parse(wire: WireFormat, path: str, raw: bytes) -> Parsed:
    emptied, lifted = _lift_image(wire.image_marker, raw)
    if lifted is not None:
        parsed = _decode(wire, path, emptied)
        # What was cut out is the image only if the image is what came out empty (a prompt
        # may hold the marker too; the image comes before the text in every wire format).
        if parsed.image_b64 == b"":
            return replace(parsed, image_b64=lifted)
    return _decode(wire, path, raw)


def _decode(wire: WireFormat, path: str, raw: bytes) -> Parsed:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest("body is not a JSON object")
    try:
        return wire.parse(path, doc)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BadRequest(f"request is missing a field: {exc}") from None


def _lift_image(marker_text: bytes, raw: bytes) -> tuple[bytes, bytes | None]:
    """``raw`` with the base64 image string emptied, and the image; or ``raw`` unchanged.

    Decoding 200 KB of JSON cost the server more than anything else it does; the image is one
    escape-free string that a byte search finds. Anything unexpected falls back to the full
    decode.
    """
    marker = raw.find(marker_text)
    if marker < 0:
        return raw, None
    start = marker + len(marker_text)
    end = raw.find(b'"', start)
    if end < 0 or raw.find(b"\\", start, end) >= 0:
        return raw, None
    return raw[:start] + raw[end:], raw[start:end]


def _reply_doc(
    wire: WireFormat, parsed: Parsed, reply: Answer, serial: int, image_tokens: int, now: int
) -> Doc:
    usage = Usage(
        input=len(parsed.prompt) // 4 + image_tokens,
        output=max(1, len(reply.text) // 3),
        reasoning=len(reply.reasoning) // 4,
    )
    return wire.answer(parsed, reply, serial, usage, created=now)


@asynccontextmanager
async def serving(
    simulator: Simulator, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Run ``simulator`` on ``host`` (port 0: any free port); yields its base URL."""
    runner = web.AppRunner(simulator.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    server = site._server
    assert server is not None
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    try:
        yield f"http://{host}:{bound}"
    finally:
        await runner.cleanup()
