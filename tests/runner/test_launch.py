"""The console script starts Ray early only where the run would start a local one itself, and
not where the command is about to fail at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner._launch import _starts_its_own_ray


@pytest.mark.parametrize(
    ("args", "address", "early"),
    [
        (["run", "exp.toml"], None, True),
        (["run", "exp.toml", "--no-check", "--limit", "1"], None, True),
        (["run", "exp.toml"], "", True),  # set but empty: not given, as the run reads it
        (["run", "exp.toml", "--address", "10.0.0.1:6379"], None, False),
        (["run", "exp.toml", "--address=10.0.0.1:6379"], None, False),
        (["run", "exp.toml"], "ray://head:10001", False),
        (["run", "--help"], None, False),
        (["demo"], None, True),
        (["check", "exp.toml"], None, False),
        (["report", "exp.duckdb"], None, False),
        ([], None, False),
    ],
)
def test_ray_starts_early_only_for_a_run_on_a_ray_of_its_own(
    args: list[str],
    address: str | None,
    early: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "exp.toml").write_text('store = "exp.duckdb"\n')
    monkeypatch.chdir(tmp_path)
    if address is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", address)
    assert _starts_its_own_ray(args) is early


@pytest.mark.parametrize(
    "text", [None, "store = [unclosed", b"\xff\xfe not text"], ids=["missing", "bad", "binary"]
)
def test_no_early_ray_for_an_experiment_file_that_fails_at_once(
    text: str | bytes | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = tmp_path / "exp.toml"
    if isinstance(text, str):
        path.write_text(text)
    elif text is not None:
        path.write_bytes(text)
    assert not _starts_its_own_ray(["run", str(path)])


def test_no_early_ray_for_an_experiment_file_edited_since_its_store_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An edit may change a protocol, which the run refuses before Ray starts; an early Ray
    # would have started first. An unedited resume keeps its early start.
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = tmp_path / "exp.toml"
    path.write_text('store = "exp.duckdb"\n')
    store = tmp_path / "exp.duckdb"
    assert _starts_its_own_ray(["run", str(path)])  # a first run: no store yet
    store.write_bytes(b"")
    os.utime(path, (1_000, 1_000))
    os.utime(store, (2_000, 2_000))
    assert _starts_its_own_ray(["run", str(path)])  # the store written since the last edit
    os.utime(path, (3_000, 3_000))
    assert not _starts_its_own_ray(["run", str(path)])  # edited after it
    Path(f"{store}.wal").write_bytes(b"")
    os.utime(f"{store}.wal", (4_000, 4_000))
    assert _starts_its_own_ray(["run", str(path)])  # a run wrote its log since
