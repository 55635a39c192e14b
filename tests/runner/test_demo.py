"""`groundbench demo` end to end, in a subprocess as a user runs it, on a tiny cohort."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _demo(folder: Path, ray_address: str | None = None) -> subprocess.CompletedProcess[str]:
    """The demo as a user types it; with ``ray_address``, on that Ray (``RAY_ADDRESS``)."""
    joins = {"RAY_ADDRESS": ray_address} if ray_address is not None else {}
    return subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "demo",
         "--dir", str(folder), "--images", "40", "--per-source", "3"],
        capture_output=True, text=True, timeout=300, cwd=folder.parent,
        env={**os.environ, **joins},
    )  # fmt: skip


def test_the_demo_runs_the_grid_reports_and_resumes(tmp_path: Path, local_ray: str) -> None:
    folder = tmp_path / "demo"
    first = _demo(folder)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "requests complete" in first.stdout  # the progress view (no terminal: plain lines)
    sent = next(line for line in first.stdout.splitlines() if line.startswith("run ended"))
    assert " 0 HTTP calls sent" not in sent
    assert "…" not in first.stdout  # piped: the tables print whole (Table 1 has 14 columns)
    for name in ("table1.md", "table3.csv", "table5.tex", "iou_by_n.png", "iou_by_n.pdf",
                 "results.csv", "results.parquet"):  # fmt: skip
        assert (folder / "report" / name).stat().st_size > 0, name
    assert "qwen-max" in (folder / "report" / "table3.md").read_text()
    html = folder / "report" / "html"
    assert "<table" in (html / "index.html").read_text()
    assert len(list((html / "q").glob("*.html"))) == 9  # 3 questions a source, 3 sources
    # Where a browser is installed (CI installs one), the demo's page is photographed.
    shot = html / "screenshot.png"
    assert shot.exists() or "no screenshot of the HTML report" in first.stdout

    # A rerun resumes: nothing left to send. On the session's Ray: the first run tested the
    # start-up, a Ray of its own included.
    again = _demo(folder, local_ray)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "run ended after" in again.stdout and ": 0 HTTP calls sent" in again.stdout


def test_the_box_demo_runs_a_benchmark_reports_its_table_and_resumes(
    tmp_path: Path, local_ray: str
) -> None:
    folder = tmp_path / "demo"
    command = [sys.executable, "-c", "from runner.cli import main; main()", "demo",
               "--dir", str(folder), "--benchmark", "groundingme", "--questions", "12"]  # fmt: skip
    # On the session's Ray: the polygon demo tests the start-up, a Ray of its own included.
    on_session_ray = {**os.environ, "RAY_ADDRESS": local_ray}
    first = subprocess.run(
        command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=on_session_ray
    )
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    # The paper's four configurations, each without and with reasoning, 12 questions each.
    assert "run ended after" in first.stdout and ", 96 requests finished" in first.stdout
    table = (folder / "report-groundingme" / "box-groundingme.md").read_text()
    assert "| Discriminative | Spatial | Limited | Rejection | Total |" in table
    assert table.count("| qwen-max |") == 2
    again = subprocess.run(
        command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=on_session_ray
    )
    assert again.returncode == 0 and ": 0 HTTP calls sent" in again.stdout, again.stderr[-3000:]
