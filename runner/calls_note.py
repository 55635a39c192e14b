"""The calls a ``groundbench check`` made, noted beside the store for the run that follows.

A check's calls land in its backends' rate windows like any other: a run started within a
minute of it, at the exact limit, would otherwise send a whole window's calls on top of them
and draw 429s. So ``check`` notes when each backend's calls left (``<store>.calls.json``:
Unix times, never a key), and a run's limiters start from them (:meth:`RateLimiter.inherit`),
its pre-flight's included.

The note also keeps the tokens the check's calls measured, per configuration and under its
protocol hash (:class:`NotedTokens`): a run right after estimates from them rather than from a
rough count, for any backend (a simulated one's calls are not counted in a window, but their
tokens are measured all the same); a configuration changed since is not estimated from them.

The note is a hint, read leniently: one that is missing, stale, unreadable or malformed is
ignored (said in one line when it is there but unreadable), and what it holds can only delay a
run's first calls, by a minute at most, never stop one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.backends import Account

_UNCOUNTED = "a check's calls are not counted in the backends' windows"
KEEP_S = 120.0  # calls older than this are out of every window a limiter keeps
MAX_NOTE_BYTES = 1 << 20
MAX_CALLS = 10_000  # per backend: a check makes a handful


class NotedCalls(BaseModel):
    """One backend's calls, as a check's limiter knew them."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    sent: list[float] = Field(default_factory=list, max_length=MAX_CALLS)
    refused: list[float] = Field(default_factory=list, max_length=MAX_CALLS)
    paused_until: float = 0.0


class NotedTokens(BaseModel):
    """The tokens one configuration's check calls reported, and the protocol they were made
    under (a configuration changed since is not measured by them)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    protocol: str = Field(max_length=200)
    calls: int = Field(ge=0, le=MAX_CALLS)
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    rough_input: float = Field(default=0.0, ge=0.0)  # the rough count's mean, of its requests


class CallsNote(BaseModel):
    """The note: each backend's calls, by backend name; each configuration's measured tokens,
    by configuration name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backends: dict[str, NotedCalls] = Field(default_factory=dict)
    tokens: dict[str, NotedTokens] = Field(default_factory=dict)


def note_path(store: Path) -> Path:
    return store.with_name(f"{store.name}.calls.json")


def write_calls(
    store: Path, accounts: Mapping[str, Account], tokens: Mapping[str, NotedTokens] | None = None
) -> None:
    """Note ``accounts`` (and the ``tokens`` measured, by configuration) beside ``store``
    (atomically: a reader sees the old note or the new).

    Raises
    ------
    OSError
        The note could not be written (the caller says so; nothing depends on it).
    """
    note = CallsNote(
        backends={
            name: NotedCalls(
                sent=list(a.sent), refused=list(a.refused), paused_until=a.paused_until
            )
            for name, a in accounts.items()
        },
        tokens=dict(tokens or {}),
    )
    path = note_path(store)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(note.model_dump_json())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_calls(store: Path, now: float | None = None) -> tuple[dict[str, Account], str | None]:
    """The accounts noted beside ``store`` (the last :data:`KEEP_S` of them), and a line
    saying why a note that is there was ignored (``None``: read, or none there)."""
    note, ignored = _read_note(store)
    if note is None:
        return {}, ignored
    since = (time.time() if now is None else now) - KEEP_S
    accounts = {
        name: Account(
            sent=tuple(t for t in calls.sent if t >= since),
            refused=tuple(t for t in calls.refused if t >= since),
            paused_until=calls.paused_until,
        )
        for name, calls in note.backends.items()
    }
    return {n: a for n, a in accounts.items() if a.sent or a.paused_until > since}, None


def read_tokens(store: Path) -> dict[str, NotedTokens]:
    """The tokens a check measured, by configuration (none where the note is missing or
    unreadable: :func:`read_calls` says why)."""
    note, _ = _read_note(store)
    return dict(note.tokens) if note is not None else {}


def _read_note(store: Path) -> tuple[CallsNote | None, str | None]:
    path = note_path(store)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_NOTE_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"ignored {path.name}: cannot read it ({exc.strerror})"
    if len(raw) > MAX_NOTE_BYTES:
        return None, f"ignored {path.name}: over {MAX_NOTE_BYTES:,} bytes; {_UNCOUNTED}"
    try:
        # pydantic's own JSON reader: bounded in depth, no NaN, no stray field.
        return CallsNote.model_validate_json(raw), None
    except ValidationError:
        return None, f"ignored {path.name}: not a calls note; {_UNCOUNTED}"
