"""Refs pickles: read as plain data, never as code."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from conditions import DataFileError, _refs, load_plain_pickle, load_refs

from .conftest import FIXTURE


class _Exploit:
    """Unpickling this calls os.system: a refs file must never get that far."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_the_real_refs_file_reads(shared_data: Path) -> None:
    refs = load_refs(shared_data / FIXTURE / "refs(unc).p")
    assert [r.ann_id for r in refs] == [2190839, 2190842, 1110067, 1108446]
    assert refs[0].sentences[0].sent == "cat on the left"
    assert {r.split for r in refs} <= {"val", "testA", "testB"}


def test_a_malicious_pickle_runs_no_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "refs(unc).p"
    path.write_bytes(pickle.dumps([{"ref_id": 1, "payload": _Exploit(marker)}], protocol=2))
    with pytest.raises(DataFileError, match=r"refs\(unc\)\.p: unsafe .*refuses global") as err:
        load_refs(path)
    assert "system" in str(err.value)
    assert not marker.exists()


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_data_reads_in_every_pickle_protocol(tmp_path: Path, protocol: int) -> None:
    data = [{"a": [1, 2.5, None, True], "b": ("x", b"y"), "c": {"d": -3}, "e": {1, 2}}]
    path = tmp_path / "p.p"
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    assert load_plain_pickle(path) == data


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            pickle.dumps([{"ref_id": 7, "image_id": 1}]),
            r"ref_id 7 \(record 0.ann_id\): Field required",
        ),
        (pickle.dumps({"not": "a list"}), "Input should be a valid list"),
        (
            pickle.dumps([{"ref_id": 1, "ann_id": "x"}])[:-3],
            "malformed pickle: pickle data was truncated",
        ),
        (b"not a pickle at all", "pickle"),
        (pickle.dumps([print]), "refuses global builtins.print"),
    ],
    ids=["missing-field", "not-a-list", "truncated", "garbage", "a-function"],
)
def test_bad_refs_files_name_the_file_and_the_record(
    tmp_path: Path, payload: bytes, message: str
) -> None:
    path = tmp_path / "refs(umd).p"
    path.write_bytes(payload)
    with pytest.raises(DataFileError, match=message) as err:
        load_refs(path)
    assert str(err.value).startswith(str(path))


def test_a_missing_refs_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"refs\(unc\)\.p: cannot read"):
        load_refs(tmp_path / "refs(unc).p")


# --- integers that share a hash --------------------------------------------------------------

_MODULUS = 2**61 - 1  # Python hashes an integer by its value modulo this


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_colliding_integer_keys_are_refused_before_loading(
    tmp_path: Path, protocol: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counted, not timed: the unpickler is never started. (5,000 keys of one hash take a
    # quarter of a second to build; the 160,000 of a 1.8 MB file took minutes.)
    colliding = dict.fromkeys((k * _MODULUS for k in range(1, 5_001)), 0)
    path = tmp_path / "refs(unc).p"
    path.write_bytes(pickle.dumps([{"ref_id": 1, "sentences": colliding}], protocol=protocol))
    loads: list[int] = []
    monkeypatch.setattr(_refs._PlainUnpickler, "load", lambda self: loads.append(1))
    with pytest.raises(DataFileError, match=r"refs\(unc\)\.p: an integer of 61 bits at byte \d+"):
        load_refs(path)
    assert loads == []


def test_bytes_that_only_look_like_long_integers_are_read(tmp_path: Path) -> None:
    # "ъ" is d1 8a in UTF-8, and 8a begins LONG1: thousands of them make the refs file be
    # walked opcode by opcode, which finds no long integer and lets it load.
    records = [
        {"ref_id": i, "ann_id": i, "image_id": 1, "category_id": 1, "split": "val",
         "sentences": [{"sent_id": i, "sent": "ъъ"}]}
        for i in range(5_000)
    ]  # fmt: skip
    path = tmp_path / "refs(unc).p"
    path.write_bytes(pickle.dumps(records, protocol=2))
    assert len(load_refs(path)) == 5_000
