"""What every provider's batch API is to groundbench: upload a JSONL file of requests, create a
batch of it, poll it, read its results line by line, cancel it. A provider that takes a batch's
requests in the create request itself (Anthropic's Message Batches: ``inline``) uploads
nothing: its create sends the JSONL file's lines.

A provider's batch wire (:class:`BatchApi`) speaks its documented endpoints and nothing more:
the run's policy — splitting, recording each batch before going on, retries, resume — is
:mod:`runner.batch._runner`'s. Every request goes by the online calls' one HTTP exchange
(:mod:`runner.backends._exchange`: the key to the configured origin only, no redirect, a
capped read), and a failed one raises the online wire's :class:`~runner.backends.CallError`
class for it (a 429 throttle, spent quota, a 5xx, a refused key), classified by the same code
as an online call, so a batch endpoint's errors behave as an online call's. Nothing here
retries: the runner applies the online calls' one retry policy (:mod:`runner.backends._retry`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from conditions import Request
from runner.backends import CallError, Reply, Transient
from runner.backends._wire import Body

BatchState = Literal[
    "validating",  # created; the provider checks its file (Gemini: PENDING)
    "in_progress",  # running (Gemini: RUNNING)
    "finalizing",  # done running; results being written
    "completed",  # ended; every line has a result (some may be errors)
    "failed",  # ended without running (a bad file, a limit); nothing answered
    "expired",  # ended at the completion window; the lines it ran have results
    "cancelling",
    "cancelled",  # ended on request; the lines it ran have results
]
ENDED: frozenset[BatchState] = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True)
class BatchLimits:
    """What one batch may hold, by the provider's documentation."""

    max_requests: int  # lines per batch
    max_bytes: int  # bytes per input file (or per inline request)


@dataclass(frozen=True)
class RemoteBatch:
    """A batch as the provider last described it."""

    id: str  # the provider's name for it: "batch_abc" (OpenAI, DashScope), "batches/xyz" (Gemini)
    state: BatchState  # normalised
    provider_state: str  # as the provider spells it ("in_progress", "BATCH_STATE_RUNNING")
    tag: str | None = None  # groundbench's id for it, as the provider echoes it back (metadata)
    input_file: str | None = None
    output_file: str | None = None  # where its results are, once it has ended
    error_file: str | None = None  # OpenAI's file of the lines that failed
    total: int | None = None  # lines, as the provider counts them
    succeeded: int | None = None
    failed: int | None = None
    message: str | None = None  # why it failed, in the provider's words (redacted)

    @property
    def ended(self) -> bool:
        return self.state in ENDED


@dataclass(frozen=True)
class ResultLine:
    """One line of a batch's results, read.

    Exactly one of ``reply``, ``error`` and ``problem`` is set, unless the line says its request
    never ran (``ran`` False: expired or cancelled before its turn), when none need be.
    """

    where: str  # "file-abc line 12": the file (or "inline") and the 1-based line number
    custom_id: str | None  # the request's id (OpenAI's custom_id, Gemini's key); None: unreadable
    reply: Reply | None = None  # an answer, decoded as the online wire decodes one
    status: int | None = None  # the line's HTTP status, where it has one
    error: CallError | None = None  # the request failed: classified as the online wire does
    problem: str | None = None  # the line cannot be read (truncated JSON, no id): why
    ran: bool = True  # False: the provider says the request never ran (expired, cancelled)


@dataclass(frozen=True)
class Sought:
    """A batch whose create may have reached the provider though no answer to it was
    recorded (a timeout, a reset, a killed driver): what finds it among the account's batches.

    OpenAI and Gemini echo a batch's tag (metadata, display name), which names it for certain.
    Anthropic's batch object holds no field of the client's, so a batch there is known by its
    size, its time and, once it has ended, the ids in its results (:mod:`runner.batch._anthropic`).
    """

    tag: str  # groundbench's id for it
    input_file: str | None  # the uploaded file it was made of (None: inline, or not uploaded)
    requests: int  # the lines it holds
    since: datetime  # when it was recorded, before its create was sent (this machine's clock)
    custom_ids: frozenset[str]  # its lines' ids
    known: frozenset[str]  # the provider's ids of the other batches the ledger holds: not it


class Undecided(Transient):
    """A look for a batch (:meth:`BatchApi.find`) that cannot tell which of the account's
    batches is it, or whether one is: nothing is taken and nothing created; a later look
    tells (once they have ended, by their results). Retryable, as the look may pass later,
    but never retried within a create: the runner leaves its keys held for a later run."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="undecided")


Source = str | Path
"""What a batch is made of: the uploaded file's id, or (an ``inline`` provider's) the JSONL file
on disk whose lines the create request carries."""


def uploaded(source: Source, provider: str) -> str:
    """``source`` as an uploaded file's id, for a provider whose batches are made of one.

    Raises
    ------
    TypeError
        ``source`` is a path: the runner sends a path only to an ``inline`` provider.
    """
    if isinstance(source, Path):
        raise TypeError(f"{provider} makes a batch of an uploaded file, not of {source}")
    return source


class BatchApi(Protocol):
    """One provider's batch endpoints, for one model, account and endpoint.

    Made with an open :class:`aiohttp.ClientSession`, the provider, model, base URL and key;
    a method raises :class:`~runner.backends.CallError` when an exchange fails. No URL, message
    or error it makes holds the key.
    """

    limits: BatchLimits
    inline: bool  # True: the create request carries the requests; nothing is uploaded

    def line(self, custom_id: str, request: Request) -> Body:
        """``request`` as one line of the provider's JSONL input file, ``\\n`` included."""
        ...

    async def upload(self, path: Path, display_name: str) -> str:
        """Upload the JSONL file at ``path`` (streamed, never read whole); its file id. Never
        asked of an ``inline`` provider."""
        ...

    async def create(self, source: Source, tag: str) -> RemoteBatch:
        """Create a batch of ``source`` (the uploaded file's id; an ``inline`` provider's JSONL
        file, streamed in the request), tagged ``tag`` where the provider keeps a tag."""
        ...

    async def get(self, batch_id: str) -> RemoteBatch:
        """The batch's state now."""
        ...

    async def find(self, sought: Sought) -> RemoteBatch | None:
        """The batch ``sought`` among the account's recent batches, if one was created: how a
        driver killed between creating a batch and recording it finds it again. A provider
        that cannot tell raises :class:`Undecided`."""
        ...

    async def cancel(self, batch_id: str) -> RemoteBatch:
        """Ask the provider to cancel the batch; its state after the request."""
        ...

    def results(self, batch: RemoteBatch) -> AsyncIterator[ResultLine]:
        """Every line of an ended batch's results (its output file, then its error file, or
        its inline responses), read line by line: a line that cannot be read is yielded as a
        ``problem``, never raised. A failed exchange raises :class:`CallError`."""
        ...

    async def delete_file(self, file_id: str) -> None:
        """Delete an uploaded file (its results were read): storage is not billed for ever."""
        ...


__all__ = [
    "ENDED",
    "BatchApi",
    "BatchLimits",
    "BatchState",
    "RemoteBatch",
    "ResultLine",
    "Sought",
    "Source",
    "Undecided",
    "uploaded",
]
