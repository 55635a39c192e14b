"""The attempts of one request (PROTOCOL §6): a parse failure triggers a fresh, stateless try.

Attempt 0 is the primary call. Only an answer that does not parse triggers the next attempt,
which sends the identical request again with no memory of the failed answer, up to attempt 2;
a configuration that authorises best-effort recovery gets one more, attempt 3, on the same
terms. An errored call ends the sequence: it is recorded as an error (never as an answer), and
the run's resume sends it again later. Every attempt is one :class:`AttemptRecord`, handed to
``sink`` the moment it exists, so a crash loses at most the call in flight.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from conditions import Request
from runner.backends._client import Client, Exchange
from runner.backends._errors import CallError
from runner.backends._records import AttemptRecord
from runner.backends._usage import Bill
from scoring import HEADLINE_VIEW, VIEW_ATTEMPTS, find_box, parse_answer, parse_box

# The windows of the views the attempts feed: attempts 0–2 (IoU2), plus attempt 3 where the
# configuration authorises best-effort recovery.
HEADLINE_ATTEMPTS = VIEW_ATTEMPTS[HEADLINE_VIEW]
BEST_EFFORT_ATTEMPTS = VIEW_ATTEMPTS["best_effort"]

# A sink may be a coroutine function: ask() then waits for it (the run waits until the record is
# stored, so at most the call in flight is lost to a crash).
Sink = Callable[[AttemptRecord], Awaitable[None] | None]


def parses(request: Request, answer: str) -> bool:
    """Whether ``answer`` holds the list the request asks for (PROTOCOL §4), or, for a box
    benchmark's question, a box its reader finds (§10; an all-zero or null box included)."""
    if request.parsing is not None:
        return find_box(answer, request.parsing) is not None
    if request.key.is_box:
        return parse_box(answer) is not None
    return parse_answer(answer, request.key.budget) is not None


def attempts_allowed(fixed: int | None, best_effort: bool) -> int:
    """How many attempts a request may make — the one rule (§6): ``fixed`` where its task
    sets a count (a box benchmark asks once), else the views' window, attempt 3 included
    where the configuration authorises best-effort recovery."""
    if fixed is not None:
        return fixed
    return BEST_EFFORT_ATTEMPTS if best_effort else HEADLINE_ATTEMPTS


def attempts_of(request: Request, best_effort: bool) -> int:
    """How many attempts ``request`` may make (:func:`attempts_allowed`)."""
    return attempts_allowed(request.attempts, best_effort)


async def ask(
    client: Client,
    request: Request,
    sink: Sink,
    *,
    first: int = 0,
    input_bound: int | None = None,
) -> list[AttemptRecord]:
    """Make the attempts of ``request`` and return their records (each also given to ``sink``).

    ``first`` is the attempt to start from: a resumed request whose attempts 0..first-1
    answered unparseable goes on where it stopped. ``input_bound``: the input the spending
    cap reserved per call (:func:`~runner.backends._client.worst_of`).

    Raises
    ------
    CallError
        A terminal error (``stops``: spent quota, a refused key or model) stopped the
        backend: the attempt that met it is recorded first (when it was sent at all); no
        further call is made.
    """
    limit = attempts_of(request, client.configuration.best_effort)
    records: list[AttemptRecord] = []
    for attempt in range(first, limit):
        started = datetime.now(UTC)
        try:
            exchange = await client.send(request, attempt, input_bound=input_bound)
        except CallError as exc:
            if exc.sent:
                record = error_record(Sender.of(client), request, attempt, exc, started)
                records.append(await _keep(sink, record))
            if exc.stops:
                raise
            break
        ok = parses(request, exchange.reply.answer)
        record = answer_record(Sender.of(client), request, attempt, exchange, ok)
        records.append(await _keep(sink, record))
        if ok:
            break
    return records


async def _keep(sink: Sink, record: AttemptRecord) -> AttemptRecord:
    kept = sink(record)
    if inspect.isawaitable(kept):
        await kept
    return record


@dataclass(frozen=True)
class Sender:
    """Who answered an attempt, as its record names it: the provider and the model asked."""

    provider: str
    model: str

    @classmethod
    def of(cls, client: Client) -> Sender:
        return cls(client.provider.name, client.configuration.model)


def _common(sender: Sender, request: Request, attempt: int) -> dict[str, object]:
    key = request.key
    return {
        "configuration": key.configuration,
        "condition": key.condition,
        "qid": key.qid,
        "budget": key.budget,
        "replicate": request.replicate,
        "attempt": attempt,
        "protocol": request.protocol,
        "fingerprint": request.fingerprint,
        "provider": sender.provider,
        "model": sender.model,
        "image_sha256": request.image.sha256 if request.image is not None else None,
    }


def answer_record(
    sender: Sender, request: Request, attempt: int, exchange: Exchange, parseable: bool
) -> AttemptRecord:
    """The record of an attempt that got a response."""
    reply = exchange.reply
    return AttemptRecord.model_validate(
        {
            **_common(sender, request, attempt),
            "outcome": "answer",
            "parseable": parseable,
            "answer": reply.answer,
            "reasoning": reply.reasoning or None,
            "finish_reason": reply.finish_reason,
            "http_status": exchange.status,
            **_billed(exchange.billed),
            "reasoning_tokens": reply.usage.reasoning_tokens,
            "latency_s": exchange.latency_s,
            "transport_retries": exchange.transport_retries,
            "started_at": exchange.started_at,
            "response_id": reply.response_id,
            "reported_model": reply.model,
        }
    )


def error_record(
    sender: Sender, request: Request, attempt: int, error: CallError, started: datetime
) -> AttemptRecord:
    """The record of an attempt whose call failed: the error, and no answer."""
    return AttemptRecord.model_validate(
        {
            **_common(sender, request, attempt),
            "outcome": error.kind,
            "http_status": error.status,
            "error_code": error.code,
            "error_message": error.message,
            **_billed(error.billed),
            "latency_s": error.latency_s,
            "transport_retries": error.transport_retries,
            "started_at": started,
        }
    )


def _billed(bill: Bill) -> dict[str, object]:
    """A record's token columns: what its billed calls are counted at (none: nothing was
    billed)."""
    if bill.calls == 0:
        return {}
    return {
        "input_tokens": bill.input_tokens,
        "output_tokens": bill.output_tokens,
        "usage_unknown": bill.unknown,
    }
