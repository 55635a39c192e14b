"""Where a run can be reached: its Ray cluster's address and namespace, noted beside its store.

During a run the DuckDB file is held by the run's store actor, and DuckDB lets no other
process open it, not even to read one row; so the note is a small JSON file beside the store
(:func:`note_path`), written when the run starts and removed when it ends. ``monitor`` and
``sql`` read it to join *that* cluster: ``ray.init(address="auto")`` takes whichever Ray it
finds first on the machine, and with a second instance there (another user's, a test's)
finds the wrong one.

The note says whether the cluster asks for a token, never the token: secrets are not
written to files the run leaves behind. A note is only a claim: anyone who can write beside
the store can write one, and following it hands the cluster this user's Ray token. So a note
is read only when it is the user's own file, mode 0600 (:func:`read_note`), and followed with
a token only to a Ray server of this user's on this machine while the run's driver lives
(:func:`unproven`); before Ray is let at an address, the server there must answer as a Ray
server does, within a bound (:func:`silence`). No Ray import here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import tempfile
import time
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
    # The experiment file the run was started from (absolute), for a command given the store
    # while the run holds it; None from a driver given none, or a note of an older version.
    experiment: str | None = None


def note_path(store: Path) -> Path:
    """``exp.duckdb`` → ``exp.ray.json``, beside ``exp.variants/``."""
    return Path(store).with_suffix(".ray.json")


def here(
    address: str, namespace: str, token_auth: bool, experiment: Path | None = None
) -> RunAddress:
    """The note of a run driven by this process, started from ``experiment``."""
    return RunAddress(
        address=address,
        namespace=namespace,
        token_auth=token_auth,
        host=socket.gethostname(),
        pid=os.getpid(),
        started=datetime.now(UTC),
        experiment=str(experiment.absolute()) if experiment is not None else None,
    )


def write_note(store: Path, note: RunAddress) -> None:
    """Write the note whole or not at all: a reader never sees half a file. Mode 0600 from its
    first byte (``mkstemp``'s, said again here): a reader follows no other."""
    path = note_path(store)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, PRIVATE)
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


PRIVATE = 0o600
NOTE_MAX_BYTES = 64 * 1024  # a note is ~300 bytes


def read_note(store: Path) -> RunAddress | None:
    """The note of the run of ``store``, or None when no run has left one.

    Raises
    ------
    ClusterError
        The note is there but unreadable, or not one this user's run wrote: a link, another
        user's file, or one others may read or write.
    """
    path = note_path(store)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise _unreadable(path, why) from None
    with os.fdopen(fd, "rb") as file:
        refused = _not_private(os.fstat(file.fileno()))
        if refused is not None:
            raise ClusterError(
                f"{path}: not followed: {refused}, and a run writes its note 0600, owned by "
                "whoever runs it; give the run's cluster with --address, or delete the file if "
                "no run of this experiment is going"
            )
        try:
            return RunAddress.model_validate_json(file.read(NOTE_MAX_BYTES + 1))
        except (OSError, ValidationError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not a note groundbench wrote"
            raise _unreadable(path, why) from None


def _not_private(info: os.stat_result) -> str | None:
    """Why a file is not a note of this user's run, or None."""
    if not stat.S_ISREG(info.st_mode):
        return "it is not a plain file"
    if info.st_uid != os.geteuid():
        return f"it belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})"
    if info.st_mode & 0o077:
        return f"its mode is {stat.S_IMODE(info.st_mode):04o}, open to others"
    return None


def _unreadable(path: Path, why: str | None) -> ClusterError:
    return ClusterError(
        f"{path}: cannot read where the run is ({why}); give its cluster with --address, "
        "or delete the file if no run of this experiment is going"
    )


def listening(address: str, timeout_s: float = 3.0) -> bool:
    """Whether anything accepts a connection at ``host:port``. Ray's client retries a
    silent address for many minutes before it gives up (seen: over ten)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


# An HTTP/2 client's opening (RFC 9113 §3.4): the preface, then an empty SETTINGS frame.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS = 0x4  # the frame type a server's own preface starts with
FRAME_HEADER = 9


def silence(address: str, timeout_s: float) -> str | None:
    """What keeps the server at ``host:port`` from being a Ray cluster's, or None when it
    answers as one does. Ray's GCS is a gRPC server: it answers an HTTP/2 opening with its
    SETTINGS frame at once, before any request, so nothing of this client's (no token) is sent
    to learn it. Ray's own client gives a server that accepts and says nothing 41 s a try, ten
    tries (seen: 411 s); this gives it ``timeout_s`` in all. Under Ray's TLS
    (``RAY_USE_TLS``) the exchange starts otherwise, and Ray's own wait stands."""
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return None
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as conn:
            conn.sendall(PREFACE)
            head = _received(conn, FRAME_HEADER, deadline)
    except TimeoutError:
        return f"accepted a connection but did not answer within {timeout_s:g} s"
    except (OSError, ValueError) as exc:
        return f"could not be spoken to ({exc.strerror if isinstance(exc, OSError) else exc})"
    if len(head) < FRAME_HEADER:
        return "closed the connection without answering"
    if head[3] != SETTINGS:
        return "answered, but not as a Ray cluster does (gRPC over HTTP/2)"
    return None


def _received(conn: socket.socket, size: int, deadline: float) -> bytes:
    """Up to ``size`` bytes from ``conn``, fewer if it closes; TimeoutError at ``deadline``."""
    got = b""
    while len(got) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.settimeout(left)
        chunk = conn.recv(size - len(got))
        if not chunk:
            break
        got += chunk
    return got


# -- whether a note's cluster is the run's --------------------------------------------------------

GCS_PROCESS = "gcs_server"  # Ray's cluster server, the process that listens at its address
LISTEN = "0A"  # TCP_LISTEN, as /proc/net/tcp writes a socket's state


def unproven(note: RunAddress) -> str | None:
    """Why the cluster at the note's address cannot be shown to be the run's, or None when it
    can: the note's driver is a live process of this user's on this machine, and the note's
    address is this machine's, where every socket listening on its port is held by this user's
    processes, one of them Ray's cluster server. Another user's listener (or cluster) fails,
    and so does a listener of this user's that is not Ray (a forged note aimed at a port).
    Linux: the owners of sockets are read from /proc."""
    if note.host != socket.gethostname():
        return f"the note says its driver ran on {note.host}, not on this machine"
    if not _mine(note.pid):
        return f"its driver, pid {note.pid}, is not a process of yours on this machine"
    host, _, port = note.address.rpartition(":")
    if not _this_machines(host.strip("[]")):
        return f"{host} is not an address of this machine"
    if not Path("/proc/net/tcp").exists():
        return "this system has no /proc/net/tcp to tell which process listens on the port"
    inodes = _listening_inodes(int(port))
    if not inodes:
        return f"nothing on this machine listens on port {port}"
    holders = _holders(inodes)
    if any(not holders[inode] for inode in inodes):
        return f"port {port} is held by a process that is not yours"
    names = {pid: _process_name(pid) for pids in holders.values() for pid in pids}
    if GCS_PROCESS not in names.values():
        pid, name = next(iter(names.items()))
        return f"port {port} is held by {name} (pid {pid}), not by Ray's {GCS_PROCESS}"
    return None


def _mine(pid: int) -> bool:
    try:
        return pid > 0 and os.stat(f"/proc/{pid}").st_uid == os.geteuid()
    except OSError:
        return False


def _this_machines(ip: str) -> bool:
    """Whether ``ip`` is an address of this machine: only such an address can be bound."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((ip, 0))
            return True
    except OSError:  # EADDRNOTAVAIL, or not an IP address at all
        return False


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets listening on ``port``, any address, IPv4 or IPv6."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()  # sl local rem st tx:rx tr:when retr uid timeout inode
                local, state, inode = fields[1], fields[3], fields[9]
                if state == LISTEN and int(local.rpartition(":")[2], 16) == port:
                    inodes.add(inode)
    return inodes


def _holders(inodes: set[str]) -> dict[str, list[int]]:
    """For each socket inode, the processes of this user's that hold it open."""
    held: dict[str, list[int]] = {inode: [] for inode in inodes}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _mine(int(entry.name)):
            continue
        with contextlib.suppress(OSError):  # a process that ends as it is read
            for fd in (entry / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in held:
                    held[link[8:-1]].append(int(entry.name))
    return held


def _process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "a process that has ended"


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
