"""Reading a store back as overlays draw it: questions, every stored attempt, the image as
each condition sent it, and a missing or changed image named rather than raised."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conditions import BOX, Cohort, DataRoot
from runner.overlays import (
    OverlayError,
    Pictures,
    Selection,
    iter_questions,
    read_answers,
    read_question,
    recorded_images,
)
from runner.store import read_only
from scoring import BUDGETS
from tests.runner.overlays.stores import write_scored_store

Stored = tuple[Path, list[str]]


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort, small_root: DataRoot
) -> Stored:
    path = tmp_path_factory.mktemp("overlays") / "exp.duckdb"
    qids = write_scored_store(path, small_cohort, small_root.images)
    return path, qids


def test_a_question_carries_its_targets_part_and_distractors(
    store: Stored, small_cohort: Cohort
) -> None:
    path, qids = store
    with read_only(path) as con:
        q = read_question(con, qids[0])
    assert sorted(q.targets) == sorted(BUDGETS)
    assert all(len(q.targets[n]) == n for n in BUDGETS)
    assert q.targets[8] == tuple(small_cohort.target(qids[0], 8))
    expected = small_cohort.question(qids[0])
    assert (q.width, q.height, q.expression) == (
        expected.width,
        expected.height,
        expected.expression,
    )
    assert len(q.part) >= 3


def test_an_unknown_question_is_one_line_naming_it(store: Stored) -> None:
    path, _ = store
    with read_only(path) as con, pytest.raises(OverlayError, match="no question 'nope'") as err:
        read_question(con, "nope")
    assert "\n" not in str(err.value)


def test_every_stored_attempt_is_read_with_its_picture_hint_and_score(
    store: Stored, small_root: DataRoot
) -> None:
    path, qids = store
    with read_only(path) as con:
        assert recorded_images(con) == small_root.images.absolute()
        q = read_question(con, qids[1])
        answers = read_answers(con, q, Pictures(recorded_images(con)))
        stored = con.execute("SELECT count(*) FROM responses WHERE qid = ?", [q.qid]).fetchone()
        scores = dict(
            ((c, k, n, a), iou)
            for c, k, n, a, iou in con.execute(
                "SELECT configuration, condition, budget, attempt, iou FROM scores WHERE qid = ?",
                [q.qid],
            ).fetchall()
        )
    assert stored is not None and len(answers) == stored[0]
    by_condition = {a.condition: a for a in answers}
    assert by_condition["greyscale"].picture.variant == "grey"
    assert by_condition["greyscale"].picture.blob is not None
    assert by_condition["no-image"].picture.blob is None
    assert by_condition["no-image"].picture.problem is None
    assert by_condition["cue-spatial-wrong"].hint is not None
    assert by_condition["base"].hint is None
    for a in answers:
        if a.outcome != "answer":
            assert a.polygon is None and a.box is None and a.error
        elif a.budget == BOX:
            assert a.box is not None and a.polygon is None
        else:
            assert a.polygon is not None and a.score is not None
            assert a.score.iou == scores[(a.configuration, a.condition, a.budget, a.attempt)]


def test_a_selection_reads_only_what_it_names(store: Stored) -> None:
    path, qids = store
    with read_only(path) as con:
        q = read_question(con, qids[0])
        chosen = read_answers(con, q, Pictures(None), Selection("qwen", "greyscale", 16))
    assert chosen and {(a.configuration, a.condition, a.budget) for a in chosen} == {
        ("qwen", "greyscale", 16)
    }


def test_a_missing_or_changed_image_is_named_not_raised(
    store: Stored, small_root: DataRoot, tmp_path: Path
) -> None:
    path, qids = store
    with read_only(path) as con:
        q = read_question(con, qids[0])
        missing = Pictures(tmp_path / "nowhere").picture(q, "full")
        changed_dir = tmp_path / "changed"
        target = changed_dir / q.image_file
        target.parent.mkdir(parents=True)
        shutil.copy(small_root.images / q.image_file, target)
        target.write_bytes(target.read_bytes() + b"\0")
        changed = Pictures(changed_dir).picture(q, "grey")
        unrecorded = Pictures(None).picture(q, "full")
    assert missing.blob is None and missing.problem is not None
    assert q.image_file in missing.problem and "missing" in missing.problem
    assert changed.blob is None and changed.problem is not None and "changed" in changed.problem
    assert unrecorded.problem is not None and "--images" in unrecorded.problem


def test_reading_in_bulk_gives_every_question_and_every_attempt(store: Stored) -> None:
    path, qids = store
    with read_only(path) as con:
        read = list(iter_questions(con, Pictures(None)))
        total = con.execute("SELECT count(*) FROM responses").fetchone()
        one = read_answers(con, read_question(con, qids[2]), Pictures(None))
    assert total is not None and sum(len(a) for _, a in read) == total[0]
    assert [q.qid for q, _ in read] == sorted(q.qid for q, _ in read)
    bulk = dict((q.qid, a) for q, a in read)[qids[2]]
    assert [(a.configuration, a.condition, a.budget, a.attempt, a.text) for a in bulk] == [
        (a.configuration, a.condition, a.budget, a.attempt, a.text) for a in one
    ]


def test_the_bad_answers_are_drawn_and_say_what_is_not(store: Stored) -> None:
    path, _ = store
    with read_only(path) as con:
        answers = [a for _, all_ in iter_questions(con, Pictures(None)) for a in all_]
    texts = {a.text: a for a in answers if a.polygon is not None and a.text}
    many = next(a for t, a in texts.items() if len(t) > 100_000)
    assert many.polygon is not None and many.polygon.shape == "polyline"
    assert any("over 8,192 numbers" in n for n in many.polygon.notes)
    huge = next(a for t, a in texts.items() if t.startswith("[1e308"))
    assert huge.polygon is not None and huge.polygon.shape == "polygon"
    assert huge.score is not None and huge.score.defect == "non-integer"  # an exponent
