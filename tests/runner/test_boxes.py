"""Scoring collected box-benchmark answers from the command line (``groundbench boxes``)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from conditions import read_refbench_pro
from runner._errors import ConfigError
from runner.boxes import BoxAnswer, judge_answers, load_box_answers
from runner.cli import app

runner = CliRunner()
QUESTIONS = [
    {"id": 1, "image_path": "a.jpg", "expression": "the red lamp", "bbox": [10, 10, 50, 40],
     "task_type": "attribute", "width": 100, "height": 80},
    {"id": 2, "image_path": "a.jpg", "expression": "the blue dog", "bbox": [0, 0, 0, 0],
     "task_type": "reject", "width": 100, "height": 80},
]  # fmt: skip


def _benchmark(tmp_path: Path) -> Path:
    (tmp_path / "images").mkdir()
    out = io.BytesIO()
    Image.new("RGB", (100, 80)).save(out, format="JPEG")
    (tmp_path / "images" / "a.jpg").write_bytes(out.getvalue())
    path = tmp_path / "annotations.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS))
    return path


def _answers(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_answers_are_scored_into_the_papers_table(tmp_path: Path) -> None:
    bench = _benchmark(tmp_path)
    answers = _answers(tmp_path, [
        {"qid": "refbench-pro:1", "configuration": "m", "answer": "[100, 125, 500, 500]"},
        {"qid": "refbench-pro:2", "configuration": "m", "answer": "No such dog."},
        {"qid": "refbench-pro:1", "configuration": "m", "reasoning": "cot",
         "answer": "[0, 0, 999, 999]"},
        {"qid": "refbench-pro:2", "configuration": "m", "reasoning": "cot",
         "answer": "[1, 1, 10, 10]"},
    ])  # fmt: skip
    result = runner.invoke(app, [
        "boxes", "score", "refbench-pro", str(bench), str(answers),
        "--images", str(tmp_path / "images"), "--convention", "norm1000", "--format", "csv",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    header, direct, cot = result.output.strip().splitlines()
    assert header.startswith("Model,CoT?,Acc_p,Acc_o,Attribute")
    cells = dict(zip(header.split(","), direct.split(","), strict=True))
    assert cells["CoT?"] == "✗" and cells["Attribute"] == "100.0" and cells["Reject"] == "100.0"
    cells = dict(zip(header.split(","), cot.split(","), strict=True))
    assert cells["Reject"] == "0.0" and float(cells["Attribute"]) < 100.0


def test_another_benchmarks_reader_can_be_chosen(tmp_path: Path) -> None:
    bench = _benchmark(tmp_path)
    answers = _answers(tmp_path, [
        {"qid": "refbench-pro:1", "configuration": "m", "answer": "It is (100, 125, 500, 500)."},
        {"qid": "refbench-pro:2", "configuration": "m", "answer": "No such dog."},
    ])  # fmt: skip

    def attribute(*reader: str) -> str:
        result = runner.invoke(app, [
            "boxes", "score", "refbench-pro", str(bench), str(answers), "--images",
            str(tmp_path / "images"), "--convention", "norm1000", "--format", "csv", *reader,
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        header, row = result.output.strip().splitlines()
        return dict(zip(header.split(","), row.split(","), strict=True))["Attribute"]

    # RefBench-PRO's code wants a bracketed list; GroundingME's takes the last four numbers, as
    # does the lenient groundbench reading (in the 0–1000 convention given).
    assert attribute() == "0.0"
    assert attribute("--reader", "groundingme") == "100.0"
    assert attribute("--reader", "groundbench") == "100.0"


def test_check_counts_questions_and_rejections(tmp_path: Path) -> None:
    result = runner.invoke(app, ["boxes", "check", "refbench-pro", str(_benchmark(tmp_path)),
                                 "--images", str(tmp_path / "images")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 questions" in result.output and "reject" in result.output


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"qid": "refbench-pro:1", "configuration": "m", "answer": "[1, 2, 3, 4]"}],
         "m (direct) answers 1 of 2 questions; 1 have no answer"),
        ([{"qid": "refbench-pro:9", "configuration": "m", "answer": ""}],
         "answer to refbench-pro:9, which refbench-pro does not have"),
        ([{"qid": "refbench-pro:1", "configuration": "m", "answer": "x"}] * 2,
         "two answers to refbench-pro:1 in m (direct)"),
    ],
)  # fmt: skip
def test_a_missing_answer_is_an_error_not_an_absent(
    tmp_path: Path, rows: list[dict[str, Any]], message: str
) -> None:
    questions = read_refbench_pro(_benchmark(tmp_path), tmp_path / "images")
    answers = [BoxAnswer.model_validate(r) for r in rows]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        judge_answers("refbench-pro", questions, answers, "norm1000", tmp_path / "a.jsonl")


def test_a_bad_answers_line_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bench = _benchmark(tmp_path)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"qid": "refbench-pro:1", "configuration": "m", "answer": "x"}\n{"qid":')
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "boxes", "score",
         "refbench-pro", str(bench), str(answers), "--images", str(tmp_path / "images")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith(f"groundbench: {answers}: line 2: ")
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_answers_line_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("[" * 100_000 + "]" * 100_000 + "\n")  # json reads nesting by recursion
    with pytest.raises(ConfigError, match=r": line 1: not JSON: nested too deep$"):
        load_box_answers(answers)
