"""A cohort in the experiment's DuckDB file: tables ``cohort``, ``questions``, ``targets`` and
``instances`` (migration ``cohort`` 1 of the file's migrations table,
:mod:`conditions._migrations`), written in one transaction so a failure leaves nothing behind.

One experiment file holds one cohort. Writing the same cohort again is a no-op; writing a
different one is refused, so results made for one cohort can never sit beside another's. How
(shared with a box set's questions) is :mod:`conditions._task_file`'s; the tables are this
module's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from conditions._cohort import Cohort, CohortSpec, Instance, Question, SourceReport, TargetKey
from conditions._errors import ConditionsError, DataFileError
from conditions._metadata import Thresholds
from conditions._migrations import Migration
from conditions._requests import changed_fields
from conditions._task_file import (
    has_table,
    load_checked,
    migrate,
    quoted,
    rows_of,
    stored_hash,
    task_row,
    write_once,
)


class CohortMismatchError(ConditionsError):
    """The experiment file already holds a different cohort."""


_QUESTION_COLUMNS: dict[str, str] = {
    "qid": "VARCHAR PRIMARY KEY",
    "source": "VARCHAR",
    "split": "VARCHAR",
    "ref_id": "BIGINT",
    "ann_id": "BIGINT",
    "sent_id": "BIGINT",
    "expression": "VARCHAR",
    "image_id": "BIGINT",
    "image_file": "VARCHAR",
    "image_sha256": "VARCHAR",
    "width": "INTEGER",
    "height": "INTEGER",
    "category_id": "INTEGER",
    "category": "VARCHAR",
    "group": "VARCHAR",
    "box": "DOUBLE[4]",
    "phrase_length": "INTEGER",
    "d": "INTEGER",
    "q": "DOUBLE",
    "rs": "DOUBLE",
    "d_bin": "VARCHAR",
    "q_bin": "VARCHAR",
    "rs_bin": "VARCHAR",
    "difficulty": "VARCHAR",
    "matched": "BOOLEAN",
    "cell": "VARCHAR",
    "wrong_cell": "VARCHAR",
    "colour": "VARCHAR",
    "wrong_colour": "VARCHAR",
}
_DDL = (
    """CREATE TABLE cohort (
        hash VARCHAR PRIMARY KEY, spec JSON, thresholds JSON, fidelity JSON, reports JSON,
        built_at TIMESTAMP DEFAULT current_timestamp)""",
    "CREATE TABLE questions ("
    + ", ".join(f'"{k}" {v}' for k, v in _QUESTION_COLUMNS.items())
    + ")",
    """CREATE TABLE targets (
        qid VARCHAR, budget INTEGER, phase INTEGER, vertices DOUBLE[],
        PRIMARY KEY (qid, budget, phase))""",
    """CREATE TABLE instances (
        qid VARCHAR, ann_id BIGINT, role VARCHAR, parts DOUBLE[][], PRIMARY KEY (qid, ann_id))""",
)
# Append only, as every part's migrations (see conditions._migrations).
COHORT_MIGRATIONS: tuple[Migration, ...] = (
    Migration("cohort", 1, "cohort tables: cohort, questions, targets, instances", _DDL),
)


def stored_cohort_hash(path: Path | str) -> str | None:
    """The hash of the cohort in the experiment file at ``path``, or None if it has none."""
    return stored_hash(path, "cohort")


def write_cohort(path: Path | str, cohort: Cohort) -> bool:
    """Store ``cohort`` in the experiment file at ``path``; False if it was already there.

    Raises
    ------
    CohortMismatchError
        The file holds a different cohort.
    """

    def refusal(con: duckdb.DuckDBPyConnection, path: Path, stored: str | None) -> Exception | None:
        if stored is not None:
            return CohortMismatchError(
                f"{path}: already holds cohort {stored[:12]}; this one is {cohort.hash[:12]}"
                f"{_how_drawn_otherwise(con, cohort.spec)}. One experiment file holds one "
                "cohort: build this one into a new file, or draw it as the stored one was"
            )
        if has_table(con, "box_set"):
            return CohortMismatchError(
                f"{path}: holds a box benchmark's questions; a cohort needs a file of its own"
            )
        return None

    return write_once(
        path,
        table="cohort",
        questions=cohort,
        refusal=refusal,
        write=lambda con, where: _write(con, cohort, where),
    )


def _how_drawn_otherwise(con: duckdb.DuckDBPyConnection, spec: CohortSpec) -> str:
    """What differs between the stored cohort's draw and ``spec``: each field, old and new;
    the same draw from other data says so."""
    row = con.execute("SELECT spec FROM cohort").fetchone()
    held = CohortSpec.model_validate_json(row[0]) if row is not None else None
    if held is None:
        return ""
    changes = changed_fields(held.model_dump(mode="json"), spec.model_dump(mode="json"), "cohort")
    if not changes:
        return " (drawn alike, from other data)"
    return f" ({'; '.join(map(str, changes))})"


def _write(con: duckdb.DuckDBPyConnection, cohort: Cohort, where: Path) -> None:
    migrate(con, where, COHORT_MIGRATIONS)
    con.execute(
        "INSERT INTO cohort (hash, spec, thresholds, fidelity, reports) VALUES (?, ?, ?, ?, ?)",
        [
            cohort.hash,
            cohort.spec.model_dump_json(),
            cohort.thresholds.model_dump_json(),
            json.dumps({str(k): v for k, v in cohort.fidelity.items()}),
            json.dumps([r.model_dump(mode="json") for r in cohort.reports]),
        ],
    )
    # Bulk inserts scan a dict of numpy columns: two orders of magnitude faster than
    # executemany for the 60,000 target rows of a full cohort.
    dumps = [q.model_dump(mode="json") for q in cohort.questions]
    _insert(con, "questions", {k: [d[k] for d in dumps] for k in _QUESTION_COLUMNS})
    keys = sorted(cohort.targets)
    _insert(
        con,
        "targets",
        {
            "qid": [k[0] for k in keys],
            "budget": [k[1] for k in keys],
            "phase": [k[2] for k in keys],
            "vertices": [list(cohort.targets[k]) for k in keys],
        },
    )
    _insert(
        con,
        "instances",
        {
            "qid": [i.qid for i in cohort.instances],
            "ann_id": [i.ann_id for i in cohort.instances],
            "role": [i.role for i in cohort.instances],
            "parts": [[list(p) for p in i.parts] for i in cohort.instances],
        },
    )


def _insert(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, list[Any]]) -> None:
    if not next(iter(columns.values())):
        return
    frame = {k: _column(v) for k, v in columns.items()}
    con.register("_rows", frame)
    try:
        names = quoted(list(columns))
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _rows")
    finally:
        con.unregister("_rows")


def _column(values: list[Any]) -> np.ndarray:
    if isinstance(values[0], (list, tuple)):
        out = np.empty(len(values), dtype=object)
        out[:] = [list(v) for v in values]
        return out
    return np.asarray(values)


def load_cohort(path: Path | str) -> Cohort:
    """Read the cohort of an experiment file, and check it against its stored hash.

    Raises
    ------
    DataFileError
        The file is missing, is not a DuckDB file, holds no cohort, is damaged, or its cohort
        no longer matches its hash (edited after it was built).
    """
    return load_checked(path, _read_cohort, what="cohort", content="cohort content")


def require_current_targets(path: Path | str, cohort: Cohort) -> None:
    """Refuse a cohort whose stored targets this groundbench would not build (see
    :meth:`Cohort.stale_target`): scoring or re-scoring its answers would mix two rules.

    Raises
    ------
    DataFileError
        Naming the first such target and what to do.
    """
    stale = cohort.stale_target()
    if stale is not None:
        qid, n, phase = stale
        raise DataFileError(
            path,
            f"its cohort's target G_{n} of question {qid} (phase {phase}) was built by an "
            "earlier rule than this groundbench's (PROTOCOL §2.3 now pins the sampling "
            "origin), so its answers cannot be scored consistently; build the cohort again "
            "into a new experiment file and run the experiment there",
        )


def _read_cohort(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[str, Cohort]:
    """The stored hash and the cohort of an open experiment file."""
    stored, spec, thresholds, fidelity, reports = task_row(
        con,
        path,
        COHORT_MIGRATIONS,
        table="cohort",
        columns="hash, spec, thresholds, fidelity, reports",
        missing="holds no cohort (build one with `groundbench cohort build`)",
    )
    questions = tuple(
        Question.model_validate(row) for row in rows_of(con, "questions", list(_QUESTION_COLUMNS))
    )
    targets: dict[TargetKey, tuple[float, ...]] = {
        (q, b, ph): tuple(v)
        for q, b, ph, v in con.execute(
            "SELECT qid, budget, phase, vertices FROM targets"
        ).fetchall()
    }
    instances = tuple(
        Instance(qid=q, ann_id=a, role=role, parts=tuple(tuple(p) for p in parts))
        for q, a, role, parts in con.execute(
            "SELECT qid, ann_id, role, parts FROM instances ORDER BY rowid"
        ).fetchall()
    )
    cohort = Cohort(
        spec=CohortSpec.model_validate_json(spec),
        thresholds=Thresholds.model_validate_json(thresholds),
        questions=questions,
        instances=instances,
        targets=targets,
        fidelity={int(k): v for k, v in json.loads(fidelity).items()},
        reports=tuple(SourceReport.model_validate(r) for r in json.loads(reports)),
    )
    return str(stored), cohort
