"""The note a run leaves beside its store, without Ray: read back as written, removed only by
its own run, and a damaged one is one line that says what to do."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from runner._errors import ClusterError
from runner.distributed._address import (
    here,
    listening,
    note_path,
    read_note,
    remove_note,
    same_place,
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
