"""Scoring box-benchmark answers that were collected elsewhere, by the papers' own readers.

``groundbench boxes score`` takes a benchmark's released file and a JSON-lines file of answers
(one per question, configuration and reasoning setting: ``qid``, ``configuration``, ``answer``,
optional ``reasoning`` — ``direct`` or ``cot`` — and ``convention``), reads every answer as the
benchmark's released code does (PROTOCOL §10) and prints the paper's main table. Plain Python:
no Ray, no store.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from conditions import Benchmark, BoxQuestion, Reasoning, one_line
from runner._errors import ConfigError
from runner.reports import BoxRun
from scoring import BOX_READERS, Convention, JudgedQuestion, ReaderName, judge_box


class BoxAnswer(BaseModel):
    """One collected answer."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    qid: str
    configuration: str = Field(min_length=1)
    answer: str
    reasoning: Reasoning = "direct"
    convention: Convention | None = None  # default: the one given for the whole file
    sent_scale: float = Field(default=1.0, gt=0.0, le=1.0)  # of the image as sent


def load_box_answers(path: Path) -> list[BoxAnswer]:
    """Every answer of a JSON-lines file; a bad line is one error naming the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the answers: {exc}") from None
    answers = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            answers.append(BoxAnswer.model_validate(json.loads(line)))
        except ValueError as exc:  # JSON and pydantic errors alike
            raise ConfigError(f"{path}: line {number}: {one_line(exc)}") from None
        except RecursionError:  # json reads nesting by recursion
            raise ConfigError(f"{path}: line {number}: not JSON: nested too deep") from None
    return answers


def judge_answers(
    benchmark: Benchmark,
    questions: Sequence[BoxQuestion],
    answers: Sequence[BoxAnswer],
    convention: Convention | None,
    where: Path,
    reader: ReaderName | None = None,
) -> list[BoxRun]:
    """One run per configuration and reasoning setting, every question judged by the reader
    named ``reader`` (default: the benchmark's own).

    Raises
    ------
    ConfigError
        An answer to a question the benchmark file does not have, two answers to one
        question of one run, an answer with no convention, or a run that leaves questions
        unanswered (a missing answer is not an "absent").
    """
    reading = BOX_READERS[reader or benchmark]
    by_qid = {q.qid: q for q in questions}
    runs: dict[tuple[str, Reasoning], dict[str, JudgedQuestion]] = defaultdict(dict)
    for a in answers:
        question = by_qid.get(a.qid)
        if question is None:
            raise ConfigError(f"{where}: answer to {a.qid}, which {benchmark} does not have")
        run = runs[(a.configuration, a.reasoning)]
        if a.qid in run:
            raise ConfigError(
                f"{where}: two answers to {a.qid} in {a.configuration} ({a.reasoning})"
            )
        used = a.convention or convention
        if used is None:
            raise ConfigError(
                f"{where}: {a.configuration}: no coordinate convention (--convention)"
            )
        verdict = judge_box(
            a.answer, question.box, reading, used, question.width, question.height, a.sent_scale
        )
        run[a.qid] = JudgedQuestion(
            question.qid, question.dimension, question.subdimension, question.distractors,
            question.rejection, verdict,
        )  # fmt: skip
    out = []
    # As the papers list them: by configuration, without CoT before with it.
    order = sorted(runs.items(), key=lambda item: (item[0][0], item[0][1] != "direct"))
    for (configuration, reasoning), judged in order:
        missing = len(by_qid) - len(judged)
        if missing:
            raise ConfigError(
                f"{where}: {configuration} ({reasoning}) answers {len(judged)} of "
                f"{len(by_qid)} questions; {missing} have no answer"
            )
        out.append(BoxRun(configuration, reasoning, [judged[q.qid] for q in questions]))
    return out
