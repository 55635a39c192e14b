"""The groundbench command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from runner.cli import app

runner = CliRunner()


def test_fidelity_prints_c_n_per_budget(shared_data: Path) -> None:
    result = runner.invoke(
        app, ["fidelity", str(shared_data / "coco-000000039769" / "instances.json")]
    )
    assert result.exit_code == 0, result.output
    assert "4 eligible referents in" in result.output
    for n in ("8", "16", "24", "32", "64"):
        assert f"│ {n:>2} │" in result.output


def test_a_bad_file_is_one_readable_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{")
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "fidelity", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"groundbench: {bad}: not JSON")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("groundbench ")
