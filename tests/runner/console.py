"""The console script run in this process, as a user runs it (no subprocess to start)."""

from __future__ import annotations

import sys

import pytest

from runner.cli import main


def run_console(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[object, str]:
    """``groundbench ARGS`` in this process: its exit code and what it wrote to stderr."""
    monkeypatch.setattr(sys, "argv", ["groundbench", *args])
    capfd.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    return exited.value.code, capfd.readouterr().err
