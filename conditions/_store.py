"""A cohort in the experiment's DuckDB file: tables ``cohort``, ``questions``, ``targets`` and
``instances`` (migration ``cohort`` 1 of the file's ledger, :mod:`conditions._ledger`), written
in one transaction so a failure leaves nothing behind.

One experiment file holds one cohort. Writing the same cohort again is a no-op; writing a
different one is refused, so results made for one cohort can never sit beside another's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from conditions._cohort import Cohort, CohortSpec, Instance, Question, SourceReport, TargetKey
from conditions._errors import ConditionsError, DataFileError
from conditions._ledger import (
    Migration,
    apply_migration,
    check_known,
    ensure_ledger,
    pending_migrations,
)
from conditions._metadata import Thresholds
from conditions._requests import changed_fields
from conditions._wal import opening_repaired


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
# Append only, as every part's migrations (see conditions._ledger).
COHORT_MIGRATIONS: tuple[Migration, ...] = (
    Migration("cohort", 1, "cohort tables: cohort, questions, targets, instances", _DDL),
)


def stored_cohort_hash(path: Path | str) -> str | None:
    """The hash of the cohort in the experiment file at ``path``, or None if it has none."""
    path = Path(path)
    if not path.exists():
        return None
    with _connect(path, read_only=True) as con:
        return _stored_hash(con)


def write_cohort(path: Path | str, cohort: Cohort) -> bool:
    """Store ``cohort`` in the experiment file at ``path``; False if it was already there.

    Raises
    ------
    CohortMismatchError
        The file holds a different cohort.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _connect(path, read_only=False) as con:
        stored = _stored_hash(con)
        if stored == cohort.hash:
            return False
        if stored is not None:
            raise CohortMismatchError(
                f"{path}: already holds cohort {stored[:12]}; this one is {cohort.hash[:12]}"
                f"{_how_drawn_otherwise(con, cohort.spec)}. One experiment file holds one "
                "cohort: build this one into a new file, or draw it as the stored one was"
            )
        if has_table(con, "box_set"):
            raise CohortMismatchError(
                f"{path}: holds a box benchmark's questions; a cohort needs a file of its own"
            )
        in_transaction(con, lambda: _write(con, cohort, path))
    return True


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


def in_transaction(con: duckdb.DuckDBPyConnection, write: Callable[[], None]) -> None:
    """Run ``write`` in one transaction: all of it is kept, or none of it."""
    con.execute("BEGIN TRANSACTION")
    try:
        write()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _write(con: duckdb.DuckDBPyConnection, cohort: Cohort, where: Path) -> None:
    ensure_ledger(con)
    for migration in pending_migrations(con, str(where), COHORT_MIGRATIONS):
        apply_migration(con, migration)
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
        names = _quoted(list(columns))
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
    path = Path(path)
    if not path.exists():
        raise DataFileError(path, "no such experiment file")
    try:
        with _connect(path, read_only=True) as con:
            stored, cohort = _read_cohort(con, path)
    except DataFileError:
        raise
    except (duckdb.Error, ValueError, TypeError, KeyError) as exc:
        # A damaged file: DuckDB finds a bad checksum or a short read only when it gets to
        # the block, and damaged values fail their models (pydantic's errors are ValueErrors);
        # one line, whatever the cause.
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataFileError(path, f"cannot read its cohort (damaged?): {detail}") from None
    if cohort.hash != stored:
        raise DataFileError(path, f"cohort content no longer matches its hash {stored[:12]}")
    return cohort


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
    check_known(con, str(path), COHORT_MIGRATIONS)
    row = None
    if _stored_hash(con) is not None:
        row = con.execute("SELECT hash, spec, thresholds, fidelity, reports FROM cohort").fetchone()
    if row is None:
        raise DataFileError(path, "holds no cohort (build one with `groundbench cohort build`)")
    stored, spec, thresholds, fidelity, reports = row
    names = list(_QUESTION_COLUMNS)
    questions = tuple(
        Question.model_validate(dict(zip(names, r, strict=True)))
        for r in con.execute(f"SELECT {_quoted(names)} FROM questions ORDER BY rowid").fetchall()
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


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the open experiment file has a table called ``name``."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchone()
    return bool(exists and exists[0])


def _stored_hash(con: duckdb.DuckDBPyConnection) -> str | None:
    if not has_table(con, "cohort"):
        return None
    row = con.execute("SELECT hash FROM cohort").fetchone()
    return None if row is None else str(row[0])


def _connect(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return opening_repaired(path, lambda: duckdb.connect(str(path), read_only=read_only))
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():  # DuckDB lets one process at a time have a written file
            raise DataFileError(
                path, "in use by another process (a run still going?); try again once it ends"
            ) from None
        raise DataFileError(path, f"not a usable DuckDB file: {exc}") from None
    except duckdb.Error as exc:
        raise DataFileError(path, f"not a usable DuckDB file: {exc}") from None
