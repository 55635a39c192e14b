"""The note a run leaves beside its store, without Ray: read back as written, removed only by
its own run, and a damaged one is one line that says what to do; a note not the user's own
0600 file is not read, one whose cluster is not a Ray server of the user's on this machine is
not followed, and a server that does not answer as Ray's is found out within a bound."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from runner._errors import ClusterError
from runner.distributed._address import (
    PREFACE,
    here,
    listening,
    note_path,
    read_note,
    remove_note,
    same_place,
    silence,
    unproven,
    write_note,
)


def test_a_note_reads_back_as_written_and_only_its_run_removes_it(tmp_path: Path) -> None:
    store = tmp_path / "exp.duckdb"
    assert note_path(store) == tmp_path / "exp.ray.json"
    assert read_note(store) is None
    mine = here("10.0.0.5:6379", "groundbench", token_auth=True)
    write_note(store, mine)
    assert read_note(store) == mine
    assert [p.name for p in tmp_path.iterdir()] == ["exp.ray.json"]  # no temporary left
    later = mine.model_copy(update={"pid": mine.pid + 1})
    write_note(store, later)  # a later run of the same store
    remove_note(store, mine)
    assert read_note(store) == later
    remove_note(store, later)
    assert not note_path(store).exists()


def test_a_damaged_note_is_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    store = tmp_path / "exp.duckdb"
    note_path(store).write_text('{"address": "10.0.0.5:6379"')
    note_path(store).chmod(0o600)  # the user's own, as a run writes it
    with pytest.raises(ClusterError) as raised:
        read_note(store)
    assert str(raised.value) == (
        f"{note_path(store)}: cannot read where the run is (not a note groundbench wrote); "
        "give its cluster with --address, or delete the file if no run of this experiment "
        "is going"
    )


@pytest.mark.parametrize("address", ["127.0.0.1:1", "no-port", "127.0.0.1:http"])
def test_an_address_nothing_answers_at_is_not_listening(address: str) -> None:
    assert not listening(address, timeout_s=1.0)


def test_an_address_something_listens_at_is_listening() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        assert listening(f"127.0.0.1:{server.getsockname()[1]}")


@pytest.mark.parametrize(
    ("given", "same"),
    [
        ("10.0.0.5:6379", True),
        ("127.0.0.1:6379", True),  # the noted cluster, as `ss` shows it on its machine
        ("localhost:6379", True),
        ("127.0.0.1:6380", False),
        ("10.0.0.6:6379", False),  # another machine's cluster on Ray's default port
    ],
)
def test_a_typed_address_is_the_noted_one_only_on_its_port_here(given: str, same: bool) -> None:
    assert same_place(given, "10.0.0.5:6379") is same


# -- whose note, and whose cluster ---------------------------------------------------------------


def test_a_note_is_written_for_its_owner_alone(tmp_path: Path) -> None:
    store = tmp_path / "exp.duckdb"
    write_note(store, here("10.0.0.5:6379", "groundbench", token_auth=True))
    assert stat.S_IMODE(note_path(store).stat().st_mode) == 0o600


NOT_FOLLOWED = (
    "a run writes its note 0600, owned by whoever runs it; give the run's cluster with "
    "--address, or delete the file if no run of this experiment is going"
)


def test_a_note_others_may_write_or_read_is_not_read(tmp_path: Path) -> None:
    store = tmp_path / "exp.duckdb"
    write_note(store, here("127.0.0.1:6379", "groundbench", token_auth=True))
    note_path(store).chmod(0o644)
    with pytest.raises(ClusterError) as raised:
        read_note(store)
    assert str(raised.value) == (
        f"{note_path(store)}: not followed: its mode is 0644, open to others, and {NOT_FOLLOWED}"
    )


def test_another_users_note_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "exp.duckdb"
    write_note(store, here("127.0.0.1:6379", "groundbench", token_auth=True))
    owner = note_path(store).stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)  # read as the next user would
    with pytest.raises(ClusterError) as raised:
        read_note(store)
    assert str(raised.value) == (
        f"{note_path(store)}: not followed: it belongs to uid {owner}, not to you "
        f"(uid {owner + 1}), and {NOT_FOLLOWED}"
    )


def test_a_note_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    store = tmp_path / "exp.duckdb"
    write_note(tmp_path / "elsewhere.duckdb", here("127.0.0.1:6379", "gb", token_auth=True))
    note_path(store).symlink_to(note_path(tmp_path / "elsewhere.duckdb"))
    with pytest.raises(ClusterError) as raised:
        read_note(store)
    assert "(a symbolic link)" in str(raised.value)


@contextmanager
def _server(answer: bytes | None) -> Iterator[tuple[str, list[bytes]]]:
    """A loopback server for one connection: it reads what the client sends, then writes
    ``answer`` back and holds the connection open (None: says nothing; empty: closes it).
    Yields its address and what it received."""
    received: list[bytes] = []
    done = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as server:

        def serve() -> None:
            conn, _ = server.accept()
            with conn:
                received.append(conn.recv(len(PREFACE)))
                if answer == b"":
                    return
                if answer is not None:
                    conn.sendall(answer)
                done.wait(30)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        try:
            yield f"127.0.0.1:{server.getsockname()[1]}", received
        finally:
            done.set()
            thread.join(30)


def test_a_server_that_says_nothing_is_found_out_within_the_bound() -> None:
    with _server(None) as (address, received):
        said = silence(address, timeout_s=0.5)
    assert said == "accepted a connection but did not answer within 0.5 s"
    assert received == [PREFACE]  # an HTTP/2 opening, nothing of the client's


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"\x00\x00\x00\x04\x00\x00\x00\x00\x00", None),  # a gRPC server's SETTINGS
        (b"HTTP/1.1 400 Bad Request\r\n\r\n",
         "answered, but not as a Ray cluster does (gRPC over HTTP/2)"),
        (b"", "closed the connection without answering"),
    ],
)  # fmt: skip
def test_a_server_answers_as_a_ray_cluster_or_says_what_it_did(
    answer: bytes, said: str | None
) -> None:
    with _server(answer) as (address, _):
        assert silence(address, timeout_s=30) == said


def test_a_note_is_followed_only_to_a_ray_server_of_the_users_on_this_machine() -> None:
    """The note's driver must be a live process of this user's here, and the port a Ray
    server's of this user's: a listener of the test's own (a forged note aimed at it) is not."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        forged = here(f"127.0.0.1:{port}", "groundbench", token_auth=True)
        held = unproven(forged)
        assert held is not None and held.startswith(f"port {port} is held by ")
        assert held.endswith(f"(pid {os.getpid()}), not by Ray's gcs_server")
        elsewhere = forged.model_copy(update={"host": "another-machine"})
        assert unproven(elsewhere) == (
            "the note says its driver ran on another-machine, not on this machine"
        )
        gone = forged.model_copy(update={"pid": 0})
        assert unproven(gone) == "its driver, pid 0, is not a process of yours on this machine"
        remote = forged.model_copy(update={"address": f"203.0.113.7:{port}"})
        assert unproven(remote) == "203.0.113.7 is not an address of this machine"
    nobody = unproven(forged)  # the listener closed
    assert nobody == f"nothing on this machine listens on port {port}"
