"""The calls a check made, noted beside the store for the run that follows (issue 38): read
back as they were written, the stale ones dropped, and a note that is not one ignored in one
line — it delays a run at most, never stops it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.backends import Account
from runner.calls_note import (
    KEEP_S,
    MAX_NOTE_BYTES,
    NotedTokens,
    note_path,
    read_calls,
    read_tokens,
    write_calls,
)

times = st.lists(st.floats(min_value=1e9, max_value=2e9), max_size=20)


@given(sent=times, refused=times)
def test_what_is_noted_is_read_back(tmp_path_factory: pytest.TempPathFactory, sent: list[float],
                                    refused: list[float]) -> None:  # fmt: skip
    store = tmp_path_factory.mktemp("note") / "exp.duckdb"
    account = Account(sent=tuple(sent), refused=tuple(refused), paused_until=1.5e9)
    write_calls(store, {"qwen": account})
    read, ignored = read_calls(store, now=0.0)  # nothing is stale at the epoch's start
    assert ignored is None
    assert read == {"qwen": account}


def test_calls_older_than_any_window_are_dropped(tmp_path: Path) -> None:
    store = tmp_path / "exp.duckdb"
    now = time.time()
    write_calls(store, {"old": Account(sent=(now - KEEP_S - 1,)), "new": Account(sent=(now,))})
    read, _ = read_calls(store, now=now)
    assert list(read) == ["new"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"[" * 300_000, "not a calls note"),  # nested past any reader's depth
        (b'{"backends": {"a": {"sent": [NaN]}}}', "not a calls note"),
        (b'{"backends": {"a": {"sent": "soon"}}}', "not a calls note"),
        (b'{"backends": {}, "key": "sk-0123456789abcdef"}', "not a calls note"),
        (b"\xff\xfe\x00", "not a calls note"),
        (b" " * (MAX_NOTE_BYTES + 1), "over 1,048,576 bytes"),
    ],
)
def test_a_note_that_is_not_one_is_ignored_in_one_line(
    tmp_path: Path, body: bytes, said: str
) -> None:
    store = tmp_path / "exp.duckdb"
    note_path(store).write_bytes(body)
    read, ignored = read_calls(store)
    assert read == {}
    assert ignored is not None and said in ignored and "\n" not in ignored
    assert "sk-" not in ignored


def test_no_note_is_nothing_to_say(tmp_path: Path) -> None:
    assert read_calls(tmp_path / "exp.duckdb") == ({}, None)


def test_a_note_is_replaced_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "exp.duckdb"
    write_calls(store, {"a": Account(sent=(time.time(),))})

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError):
        write_calls(store, {"b": Account(sent=(time.time(),))})
    monkeypatch.undo()
    read, _ = read_calls(store)
    assert list(read) == ["a"] and os.listdir(tmp_path) == [note_path(store).name]


def test_the_tokens_a_check_measured_are_read_back_however_old(tmp_path: Path) -> None:
    """Issue 39: a run estimates from the check's measured tokens, which no window ages."""
    store = tmp_path / "exp.duckdb"
    tokens = {"qwen-max": NotedTokens(protocol="ab12", calls=3, input_tokens=2100,
                                      output_tokens=390, rough_input=650.0)}  # fmt: skip
    write_calls(store, {"qwen": Account(sent=(1.0,))}, tokens)
    assert read_tokens(store) == tokens
    assert read_calls(store)[0] == {}  # its calls are long out of every window
    assert read_tokens(tmp_path / "none.duckdb") == {}
    note_path(store).write_text("not a note")
    assert read_tokens(store) == {}
