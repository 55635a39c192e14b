"""`groundbench rescore`: stored answers scored against every reference, with no call.

A small real cohort's store with answers written by hand: some parseable, one unparseable
then parseable, an errored call, three unparseable answers, a box answer, and one answer
left unscored (as a killed run leaves it).
"""

from __future__ import annotations

import dataclasses
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conditions import (
    BOX,
    FILE_LOADERS,
    Cohort,
    DataFileError,
    box_set,
    generate_box_benchmark,
    write_box_set,
    write_cohort,
)
from runner.cli import app
from runner.distributed import Scorer
from runner.rescore import RescoreReport, rescore
from runner.store import GridRow, Registration, Store, StoreError, read_only
from scoring import REFERENCES, SCALE
from tests.runner.store.rows import attempt_row

Key = tuple[str, str, int, str, int]


def _traced(cohort: Cohort, qid: str, n: int, phase: int = 0) -> str:
    """``G_N`` of ``qid`` at ``phase`` as a model would answer it: 0–999 integer pairs."""
    q = cohort.question(qid)
    points = cohort.target(qid, n, phase)
    units = [(round(x * SCALE / q.width), round(y * SCALE / q.height)) for x, y in points]
    return "[" + ", ".join(f"[{x}, {y}]" for x, y in units) + "]"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort) -> tuple[Path, list[str]]:
    """The hand-made store (copied afresh for each test) and its four questions."""
    path = tmp_path_factory.mktemp("rescore") / "exp.duckdb"
    write_cohort(path, small_cohort)
    q = [small_cohort.questions[i].qid for i in range(4)]
    unparseable = {"parseable": False, "answer": "I cannot outline it."}
    with Store(path) as s:
        grid = [
            GridRow(configuration="cfg", condition="base", budget=n, qid=qid, attempts=3)
            for n in (8, 16, BOX)
            for qid in q
        ]
        s.register([Registration("cfg", "p" * 64, "qwen", "m", 3, "{}")], grid)
        s.write_responses(
            [attempt_row(q[0], answer=_traced(small_cohort, q[0], 8)),
             attempt_row(q[1], 0, **unparseable),  # type: ignore[arg-type]
             attempt_row(q[1], 1, answer=_traced(small_cohort, q[1], 8, phase=3)),
             attempt_row(q[2], outcome="transient"),
             *(attempt_row(q[3], a, **unparseable) for a in range(3)),  # type: ignore[arg-type]
             attempt_row(q[1], budget=BOX, answer="[100, 120, 600, 700]")]
        )  # fmt: skip
        jobs = s.score_queue.take(100)
        s.repository.write_scores(*Scorer(small_cohort).score(jobs))
        # An answer the run stored but never scored: re-scoring needs no score row.
        s.write_responses([attempt_row(q[0], budget=16, answer=_traced(small_cohort, q[0], 16))])
    return path, q


@pytest.fixture
def store(made: tuple[Path, list[str]], tmp_path: Path) -> Path:
    path = tmp_path / "exp.duckdb"
    shutil.copy(made[0], path)
    return path


def _table(path: Path) -> list[tuple[object, ...]]:
    with read_only(path) as con:
        return con.execute("SELECT * FROM reference_scores ORDER BY ALL").fetchall()


def _keys(path: Path) -> dict[Key, set[str]]:
    out: dict[Key, set[str]] = {}
    for *key, reference, _ in _table(path):
        out.setdefault(tuple(key), set()).add(str(reference))  # type: ignore[arg-type]
    return out


def test_every_parseable_polygon_answer_gets_one_row_per_reference(
    store: Path, made: tuple[Path, list[str]]
) -> None:
    q = made[1]
    done = rescore(store)
    assert done == RescoreReport(considered=3, rescored=3, rows=33, already=0)
    assert len(REFERENCES) == 11
    # Not q1's unparseable attempt 0, q2's error, q3's unparseable answers nor the box answer.
    assert _keys(store) == {
        ("cfg", "base", 8, q[0], 0): set(REFERENCES),
        ("cfg", "base", 8, q[1], 1): set(REFERENCES),
        ("cfg", "base", 16, q[0], 0): set(REFERENCES),
    }


def test_phase0_part_union_and_continuous_equal_the_runs_scores(store: Path) -> None:
    rescore(store)
    with read_only(store) as con:
        rows = con.execute(
            """
            SELECT r.reference, r.iou, s.iou, s.iou_part, s.iou_union, s.iou_cont
            FROM reference_scores r JOIN scores s
                 USING (configuration, condition, budget, qid, attempt)
            WHERE r.reference IN ('phase0', 'part', 'union', 'continuous')"""
        ).fetchall()
    assert len(rows) == 8  # two scored answers (q0/16 has no score row)
    column = {"phase0": 0, "part": 1, "union": 2, "continuous": 3}
    for reference, iou, *scored in rows:
        assert iou == scored[column[reference]], reference  # the same computation, exactly
    assert all(r[1] > 0.9 for r in rows if r[0] == "phase0")  # G_N traced on the lattice


def test_the_phases_are_different_targets(store: Path, made: tuple[Path, list[str]]) -> None:
    rescore(store)
    with read_only(store) as con:
        by_phase = dict(
            con.execute(
                "SELECT reference, iou FROM reference_scores WHERE qid = ? AND budget = 8 "
                "AND reference LIKE 'phase%'",
                [made[1][1]],
            ).fetchall()
        )
    # q1's answer traces G_8 at phase 3: it fits that target best.
    assert max(by_phase, key=by_phase.__getitem__) == "phase3"
    assert by_phase["phase3"] > by_phase["phase0"]


def test_re_scoring_twice_changes_nothing(store: Path) -> None:
    rescore(store)
    before = _table(store)
    again = rescore(store)
    assert again == RescoreReport(considered=3, rescored=0, rows=0, already=3)
    assert _table(store) == before  # every row, every value, exactly


def test_an_answer_missing_some_rows_gets_only_those(store: Path) -> None:
    rescore(store)
    before = _table(store)
    with duckdb.connect(str(store)) as con:  # as if a crash had cut one answer's rows short
        con.execute(
            "DELETE FROM reference_scores WHERE budget = 16 AND reference IN ('phase5', 'union')"
        )
    again = rescore(store)
    assert again == RescoreReport(considered=3, rescored=1, rows=2, already=2)
    assert _table(store) == before


def test_batches_and_progress(store: Path, tmp_path: Path, made: tuple[Path, list[str]]) -> None:
    told: list[tuple[int, int]] = []
    done = rescore(store, batch=2, progress=lambda k, total: told.append((k, total)))
    assert told == [(2, 3), (3, 3)] and done.rows == 33
    whole = tmp_path / "whole.duckdb"
    shutil.copy(made[0], whole)
    rescore(whole, batch=1000)
    assert _table(store) == _table(whole)  # batching changes no row


def test_it_sends_nothing(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("re-scoring opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert rescore(store).rows == 33


def test_a_store_another_process_holds_is_one_clear_line(store: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from runner.store import Store; "
         f"s = Store({str(store)!r}); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError) as caught:
            rescore(store, lock_wait_s=0.3)
        assert str(caught.value) == (
            f"{store}: a run holds the file; re-score it once the run has ended"
        )
    finally:
        holder.kill()
        holder.wait()


def test_stores_without_polygon_run_results_are_refused_by_name(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    missing = tmp_path / "nowhere.duckdb"
    with pytest.raises(StoreError, match=r"nowhere\.duckdb: no such experiment file"):
        rescore(missing)
    assert not missing.exists()  # nothing made
    cohort_only = tmp_path / "cohort.duckdb"
    write_cohort(cohort_only, small_cohort)
    with pytest.raises(StoreError, match="no run results to re-score; run the experiment first"):
        rescore(cohort_only)
    run_only = tmp_path / "run.duckdb"
    Store(run_only).close()
    with pytest.raises(StoreError, match="holds no cohort, so no answers to re-score"):
        rescore(run_only)


def test_a_box_benchmark_store_is_refused(tmp_path: Path) -> None:
    file, images = generate_box_benchmark("groundingme", tmp_path / "data", questions=6)
    path = tmp_path / "boxes.duckdb"
    write_box_set(path, box_set("groundingme", FILE_LOADERS["groundingme"](file, images), images))
    with pytest.raises(StoreError) as caught:
        rescore(path)
    assert str(caught.value) == (
        f"{path}: holds a box benchmark's questions; only GroundBench's polygon answers are "
        "re-scored against other references"
    )


def test_the_command_re_scores_then_finds_everything_done(store: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["rescore", str(store)])
    assert first.exit_code == 0, first.output
    assert first.output.strip() == (
        "re-scored 3 answers against 11 references (33 rows); 0 already done"
    )
    again = runner.invoke(app, ["rescore", str(store)])
    assert again.output.strip() == (
        "re-scored 0 answers against 11 references (0 rows); 3 already done"
    )


def test_a_bad_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "missing.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "rescore", str(bad)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"groundbench: {bad}: no such file; give the experiment file (TOML) or its store "
        "(DuckDB file)"
    )
    assert not bad.exists()


def test_a_cohort_built_under_an_earlier_target_rule_is_refused(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    # A cohort whose stored G_8 of one question is not what this groundbench builds (as one
    # built before the origin was pinned): its hash covers what it stores, so it loads, but
    # re-scoring it against rebuilt targets would mix two rules.
    qid = small_cohort.questions[0].qid
    old = small_cohort.targets[(qid, 8, 0)]
    stale = dataclasses.replace(
        small_cohort, targets={**small_cohort.targets, (qid, 8, 0): old[2:] + old[:2]}
    )
    assert stale.stale_target() == (qid, 8, 0) and small_cohort.stale_target() is None
    path = tmp_path / "exp.duckdb"
    write_cohort(path, stale)
    with Store(path) as s:
        s.register([Registration("cfg", "p" * 64, "qwen", "m", 3, "{}")], [])
    with pytest.raises(DataFileError, match=rf"target G_8 of question {qid} \(phase 0\)"):
        rescore(path)
    with read_only(path) as con:  # nothing written
        assert con.execute("SELECT count(*) FROM reference_scores").fetchone() == (0,)
