"""A box benchmark on the distributed runner: the built-in simulator, one attempt per question
and reasoning setting, live scores by the benchmark's reader, resume that sends nothing, a
corrected convention that re-scores without calling again, and the paper's table."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conditions import BoxSet, generate_box_benchmark, load_box_set
from runner.cli import app
from runner.distributed import BoxScorer, RunOptions
from runner.reports import load_box_report
from runner.store import ScoreJob, read_only
from tests.runner.distributed.runs import assert_every_key_once, query, run_once

pytestmark = pytest.mark.slow

FAST = 'base_url = "simulator"\nrequests_per_minute = 60000\nmax_concurrency = 8'


def _experiment(tmp: Path, wrong_convention: str = "pixels") -> Path:
    file, images = generate_box_benchmark("refbench-pro", tmp / "data", questions=24, seed=5)
    path = tmp / "refbench.toml"
    path.write_text(
        f'store = "refbench.duckdb"\nimages = "{images}"\nscorers = 1\n'
        f'[boxes]\nbenchmark = "refbench-pro"\nfile = "{file}"\n'
        f'[backends.qwen]\nprovider = "qwen"\nmodel = "qwen3-vl-plus"\n{FAST}\n'
        # The simulated model writes 0–1000 (its default): one configuration reads it so, the
        # other as pixels, as a user who named the wrong convention would.
        '[[configurations]]\nname = "right"\nbackend = "qwen"\nconvention = "norm1000"\n'
        f'[[configurations]]\nname = "wrong"\nbackend = "qwen"\nconvention = "{wrong_convention}"\n'
    )
    return path


def _accuracy(store: Path) -> dict[str, float]:
    rows = query(
        store,
        "SELECT configuration, avg((box_iou >= 0.5)::INTEGER) FROM scores "
        "WHERE box_iou IS NOT NULL GROUP BY ALL",
    )
    return {name: float(value) for name, value in rows}


def test_a_box_benchmark_runs_resumes_and_rescores_without_calling_again(
    local_ray: str, tmp_path: Path
) -> None:
    path = _experiment(tmp_path)
    store = tmp_path / "refbench.duckdb"
    report = run_once(path, options=RunOptions(address=local_ray, progress_every_s=0.5))
    assert report.complete and report.unscored == 0
    questions = load_box_set(store)
    assert questions.benchmark == "refbench-pro" and len(questions.questions) == 24
    assert_every_key_once(store)
    # One attempt per configuration, reasoning setting and question: 2 × 2 × 24.
    assert query(store, "SELECT count(*), max(attempt) FROM responses") == [(96, 0)]
    assert report.simulator_calls == 96
    assert query(store, "SELECT count(*) FROM scores") == [(96,)]
    _assert_live_scores_equal_offline(store, questions, {"right": "norm1000", "wrong": "pixels"})
    accuracy = _accuracy(store)
    assert accuracy["right"] > 0.5 > accuracy["wrong"]  # the convention decides the reading

    again = run_once(path, options=RunOptions(address=local_ray, progress_every_s=0.5))
    assert again.complete and again.tally.finished == 0 and again.simulator_calls == 0

    # The user corrects the convention: the same answers are read again, nothing is sent.
    _experiment(tmp_path, wrong_convention="norm1000")
    lines: list[str] = []
    fixed = run_once(path, lines, RunOptions(address=local_ray, progress_every_s=0.5))
    assert fixed.tally.finished == 0 and fixed.simulator_calls == 0 and fixed.unscored == 0
    assert any(
        "wrong: its answers are read by refbench-pro reader r2, norm1000 now "
        "(were refbench-pro reader r2, pixels): 48 scores made again" in line
        for line in lines
    ), lines
    assert query(store, "SELECT reading FROM configurations ORDER BY name") == [
        ("refbench-pro reader r2, norm1000",),
        ("refbench-pro reader r2, norm1000",),
    ]
    accuracy = _accuracy(store)
    # Same model, same requests: the simulator answers both configurations alike.
    assert accuracy["wrong"] == accuracy["right"]

    with read_only(store) as con:
        box_report = load_box_report(con, store)
    assert [(r.configuration, r.reasoning) for r in box_report.runs] == [
        ("right", "direct"), ("right", "cot"), ("wrong", "direct"), ("wrong", "cot"),
    ]  # fmt: skip
    assert box_report.incomplete == ()
    result = CliRunner().invoke(app, ["report", str(store), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "RefBench-PRO" in result.output
    markdown = (tmp_path / "out" / "box-refbench-pro.md").read_text()
    assert "Acc_RC" in markdown and markdown.count("| right |") == 2
    assert "right: refbench-pro reader r2, norm1000" in markdown
    assert "earlier revision" not in markdown

    # Read by GroundingME's code instead: every stored answer is scored again as that reader
    # scores it, nothing sent; an answer with no box says "absent" under both.
    absent = query(store, "SELECT count(*) FROM scores WHERE says_absent")
    path.write_text(path.read_text().replace("[boxes]\n", '[boxes]\nreader = "groundingme"\n'))
    other = run_once(path, lines, RunOptions(address=local_ray, progress_every_s=0.5))
    assert other.tally.finished == 0 and other.unscored == 0
    assert query(store, "SELECT DISTINCT reading FROM configurations") == [
        ("groundingme reader r2, norm1000",)
    ]
    _assert_live_scores_equal_offline(
        store, questions, {"right": "norm1000", "wrong": "norm1000"}, "groundingme"
    )
    assert query(store, "SELECT count(*) FROM scores WHERE says_absent") == absent


def _assert_live_scores_equal_offline(
    store: Path, questions: BoxSet, conventions: dict[str, str], reader: str | None = None
) -> None:
    answers = query(
        store,
        "SELECT configuration, condition, budget, qid, attempt, answer FROM responses "
        "WHERE outcome = 'answer' ORDER BY ALL",
    )
    offline, _ = BoxScorer(questions, conventions, reader).score(ScoreJob._make(a) for a in answers)  # type: ignore[arg-type]
    live = query(store, "SELECT * FROM scores ORDER BY configuration, condition, budget, qid")
    assert [tuple(row) for row in live] == sorted(offline)
