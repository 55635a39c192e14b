"""A run on a terminal (issue 39): the live view closes, then the summary prints below its last
frame, the last thing on screen; printed through the view it went above the frame and
scrolled off. The run itself is stood in for (its driver's part is tested with Ray elsewhere):
what is checked is the order of what reaches the terminal."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

import runner.cli._run
import runner.distributed
from runner.demo import experiment_text
from runner.distributed import RunOptions, RunReport, Tally
from runner.distributed._options import Echo, Show
from runner.experiment import Experiment, load_experiment
from runner.monitor import Sample, snapshot
from runner.store import Progress


def _fake_run(seen: dict[str, object]) -> Callable[..., RunReport]:
    def run_experiment(
        experiment: Experiment,
        options: RunOptions,
        echo: Echo,
        experiment_file: Path | None = None,
        show: Show | None = None,
        summarise: bool = True,
    ) -> RunReport:
        seen["summarise"] = summarise
        assert show is not None
        echo("attach from another terminal: groundbench monitor exp.toml")
        for complete in (10, 150, 200):
            now = [Progress("qwen-max", 4800, complete, 0, complete, complete, 0, 0, 0)]
            show(snapshot(Sample(1.0, now, [], {}), None, 0.0, {}))
        ended = (Progress("qwen-max", 4800, 200, 0, 200, 200, 200, 200_000, 20_000),)
        return RunReport(ended, (), 12.0, Tally(finished=200), 0, limit=2, limited_requests=200)

    return run_experiment


def test_the_summary_prints_below_the_live_views_last_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "exp.toml").write_text(experiment_text(2))
    experiment = load_experiment(tmp_path / "exp.toml")
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=100, height=30, color_system=None)
    monkeypatch.setattr(runner.cli._run, "console", terminal)
    seen: dict[str, object] = {}
    monkeypatch.setattr(runner.distributed, "run_experiment", _fake_run(seen))
    report = runner.cli._run.run_in_view(
        experiment, tmp_path / "exp.toml", RunOptions(limit=2, preflight=True)
    )
    assert report.limited_requests == 200 and seen["summarise"] is False
    text = out.getvalue()
    last_frame = text.rindex("Cells (IoU2, settled questions)")  # the frame's last table
    ended = text.index("run ended after 12.0 s")
    assert text.index("attach from another terminal") < ended  # the run's messages, above
    assert last_frame < ended  # the summary below the last frame, not above it
    # Everything of the summary comes after the frame, the command to go on last of all.
    lines = [line.strip() for line in text[ended:].splitlines() if line.strip()]
    assert any(line.startswith("--limit 2: the first 2 questions") for line in lines)
    assert any(line.startswith("store: ") for line in lines)
    # Wrapped at the terminal's spaces, never past its edge: the last message read whole.
    assert all(len(line) <= 100 for line in text[ended:].splitlines())
    said = " ".join(lines)
    assert said.endswith("without --limit to send exactly those")
    assert "4,600 requests left: run groundbench run" in said[-200:]
    assert "requests complete (" not in text[ended:]  # no frame drawn after it


def test_an_interrupted_runs_resume_line_keeps_its_limit_and_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Copied as it reads, a resume line without --max-spend would send the rest uncapped, and
    one without --limit a smoke run's whole grid."""
    import typer

    (tmp_path / "exp.toml").write_text(experiment_text(2))
    experiment = load_experiment(tmp_path / "exp.toml")

    def interrupted(*_: object, **__: object) -> RunReport:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.distributed, "run_experiment", interrupted)
    with pytest.raises(typer.Exit) as ended:
        runner.cli._run.run_in_view(
            experiment, Path("exp.toml"), RunOptions(limit=5, max_spend=200.0, preflight=True)
        )
    assert ended.value.exit_code == 130
    assert capsys.readouterr().err.strip() == (
        "groundbench: interrupted; everything stored is kept: run `groundbench run exp.toml "
        "--limit 5 --max-spend 200` again to resume"
    )
