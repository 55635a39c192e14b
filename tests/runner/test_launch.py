"""The console script starts Ray early only where the run would start a local one itself."""

from __future__ import annotations

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
    args: list[str], address: str | None, early: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if address is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", address)
    assert _starts_its_own_ray(args) is early
