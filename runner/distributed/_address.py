"""Where a run can be reached: its Ray cluster's address and namespace, noted beside its store.

During a run the DuckDB file is held by the run's store actor, and DuckDB lets no other
process open it, not even to read one row; so the note is a small JSON file beside the store
(:func:`note_path`), written when the run starts and removed when it ends. ``monitor`` and
``sql`` read it to join *that* cluster: ``ray.init(address="auto")`` takes whichever Ray it
finds first on the machine, and with a second instance there (another user's, a test's)
finds the wrong one.

The note says whether the cluster asks for a token, never the token: secrets are not
written to files the run leaves behind. No Ray import here.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from runner._errors import ClusterError


class RunAddress(BaseModel):
    """Where the run of one store is reached, as its driver saw it on starting."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str  # the cluster's GCS address, host:port, as `ray.init(address=...)` takes it
    namespace: str  # the Ray namespace of the run's named actors
    token_auth: bool  # the cluster asks every client for a token (RAY_AUTH_MODE=token)
    host: str  # the machine the driver ran on
    pid: int  # the driver's process
    started: datetime


def note_path(store: Path) -> Path:
    """``exp.duckdb`` → ``exp.ray.json``, beside ``exp.variants/``."""
    return Path(store).with_suffix(".ray.json")


def here(address: str, namespace: str, token_auth: bool) -> RunAddress:
    """The note of a run driven by this process."""
    return RunAddress(
        address=address,
        namespace=namespace,
        token_auth=token_auth,
        host=socket.gethostname(),
        pid=os.getpid(),
        started=datetime.now(UTC),
    )


def write_note(store: Path, note: RunAddress) -> None:
    """Write the note whole or not at all: a reader never sees half a file."""
    path = note_path(store)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(note.model_dump_json(indent=2) + "\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_note(store: Path, note: RunAddress) -> None:
    """Remove the note if it is still this run's (a later run's stays)."""
    with contextlib.suppress(ClusterError, OSError):
        if read_note(store) == note:
            note_path(store).unlink()


def read_note(store: Path) -> RunAddress | None:
    """The note of the run of ``store``, or None when no run has left one.

    Raises
    ------
    ClusterError
        The note is there but unreadable.
    """
    path = note_path(store)
    try:
        return RunAddress.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not a note groundbench wrote"
        raise ClusterError(
            f"{path}: cannot read where the run is ({why}); give its cluster with --address, "
            "or delete the file if no run of this experiment is going"
        ) from None


def listening(address: str, timeout_s: float = 3.0) -> bool:
    """Whether anything accepts a connection at ``host:port``. Ray's client retries a
    silent address for many minutes before it gives up (seen: over ten)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def same_place(given: str, noted: str) -> bool:
    """Whether an address typed by a user is the noted one: the same, or the same port on
    this machine's loopback (the cluster notes its node's IP; a user reads 127.0.0.1 in
    ``ss``)."""
    host, _, port = given.rpartition(":")
    return given == noted or (host.strip("[]") in LOOPBACK and port == noted.rpartition(":")[2])


def described(note: RunAddress) -> str:
    """The note as a user reads it: where, and since when."""
    auth = ", token authentication" if note.token_auth else ""
    return (
        f"Ray at {note.address}, namespace {note.namespace}{auth}; driver pid {note.pid} on "
        f"{note.host}, started {note.started:%Y-%m-%d %H:%M:%S} UTC"
    )
