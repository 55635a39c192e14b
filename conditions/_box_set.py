"""A box benchmark's questions as one experiment asks them, kept in the experiment's DuckDB file.

A :class:`BoxSet` is the box benchmarks' counterpart of a :class:`Cohort`: the questions of one
benchmark, each bound to its image's content hash, with a hash of the whole. It is written to
tables ``box_set`` and ``box_questions`` (migration ``boxes`` 1 of the file's migrations table)
in one transaction. One experiment file holds one task: a cohort or one box set, never both, so
results of one can never sit beside another's (stored as a cohort is:
:mod:`conditions._task_file`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from conditions._boxsets import Benchmark, BoxQuestion
from conditions._cohort import canonical, canonical_hash
from conditions._errors import DataFileError
from conditions._images import capped_size
from conditions._migrations import Migration
from conditions._store import CohortMismatchError
from conditions._task_file import (
    load_checked,
    migrate,
    read_checked,
    rows_of,
    stored_hash,
    table_hash,
    task_row,
    write_once,
)

BOX_SET_VERSION = 1

_COLUMNS = pa.schema(
    [
        ("qid", pa.string()),
        ("benchmark", pa.string()),
        ("image_file", pa.string()),
        ("image_sha256", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("expression", pa.string()),
        ("box", pa.list_(pa.float64())),
        ("dimension", pa.string()),
        ("subdimension", pa.string()),
        ("distractors", pa.int32()),
        ("negation", pa.bool_()),
    ]
)
_DDL = (
    """CREATE TABLE box_set (
        hash VARCHAR PRIMARY KEY, benchmark VARCHAR NOT NULL, source VARCHAR,
        questions INTEGER, built_at TIMESTAMPTZ DEFAULT current_timestamp)""",
    """CREATE TABLE box_questions (
        qid VARCHAR PRIMARY KEY, benchmark VARCHAR, image_file VARCHAR, image_sha256 VARCHAR,
        width INTEGER, height INTEGER, expression VARCHAR, box DOUBLE[], dimension VARCHAR,
        subdimension VARCHAR, distractors INTEGER, negation BOOLEAN)""",
)
# Append only, as every part's migrations (see conditions._migrations).
BOX_SET_MIGRATIONS: tuple[Migration, ...] = (
    Migration("boxes", 1, "box benchmark tables: box_set, box_questions", _DDL),
)


class BoxSetMismatchError(CohortMismatchError):
    """The experiment file already holds another box set, or a cohort."""


@dataclass(frozen=True)
class BoxSet:
    """The questions of one box benchmark, every image bound to its content hash."""

    benchmark: Benchmark
    questions: tuple[BoxQuestion, ...]
    source: str = ""  # the released file's name, for people reading the store
    _by_qid: dict[str, BoxQuestion] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for q in self.questions:
            if q.image_sha256 is None:
                raise ValueError(f"question {q.qid} has no image hash (use box_set())")
            if q.benchmark != self.benchmark:
                raise ValueError(f"question {q.qid} is {q.benchmark}'s, not {self.benchmark}'s")
        self._by_qid.update((q.qid, q) for q in self.questions)
        if len(self._by_qid) != len(self.questions):
            raise ValueError("a question id appears twice")

    @cached_property
    def hash(self) -> str:
        """sha256 of the benchmark and every question (images by content), in order."""
        return canonical_hash(self._canonical_lines())

    def _canonical_lines(self) -> Iterator[str]:
        yield canonical({"box_set_version": BOX_SET_VERSION, "benchmark": self.benchmark})
        for q in self.questions:
            yield canonical(q.model_dump(mode="json"))

    def question(self, qid: str) -> BoxQuestion:
        return self._by_qid[qid]

    def for_asking(self) -> BoxSet:
        """What a backend needs to ask: all of it (a box set is small)."""
        return self


def sent_scale(question: BoxQuestion) -> float:
    """The size of the image as sent (its longest side capped, §9's ``full``) relative to the
    original: what a model that answers in the pixels it saw must be scaled back by."""
    width, _ = capped_size(question.width, question.height)
    return width / question.width


def box_set(
    benchmark: Benchmark, questions: Iterable[BoxQuestion], images: Path | str, source: str = ""
) -> BoxSet:
    """``questions`` bound to the content of their images in ``images`` (each read once).

    Raises
    ------
    DataFileError
        An image is missing or unreadable.
    """
    images = Path(images)
    hashes: dict[str, str] = {}
    bound = []
    for q in questions:
        sha = hashes.get(q.image_file)
        if sha is None:
            path = images / q.image_file
            try:
                sha = hashes[q.image_file] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError as exc:
                raise DataFileError(path, f"cannot read image: {exc.strerror}") from None
        bound.append(q.model_copy(update={"image_sha256": sha}))
    return BoxSet(benchmark, tuple(bound), source)


def stored_box_set_hash(path: Path | str) -> str | None:
    """The hash of the box set in the experiment file at ``path``, or None if it has none."""
    return stored_hash(path, "box_set")


def write_box_set(path: Path | str, questions: BoxSet) -> bool:
    """Store ``questions`` in the experiment file at ``path``; False if they were already there.

    Raises
    ------
    BoxSetMismatchError
        The file holds another box set, or a cohort.
    """

    def refusal(con: duckdb.DuckDBPyConnection, path: Path, stored: str | None) -> Exception | None:
        if stored is not None:
            return BoxSetMismatchError(
                f"{path}: already holds box set {stored[:12]}; this one is "
                f"{questions.hash[:12]}. One experiment file holds one box set: use a new file"
            )
        if table_hash(con, "cohort") is not None:
            return BoxSetMismatchError(
                f"{path}: holds a GroundBench cohort; a box benchmark needs a file of its own"
            )
        return None

    return write_once(
        path,
        table="box_set",
        questions=questions,
        refusal=refusal,
        write=lambda con, where: _write(con, questions, where),
    )


def _write(con: duckdb.DuckDBPyConnection, questions: BoxSet, where: Path) -> None:
    migrate(con, where, BOX_SET_MIGRATIONS)
    con.execute(
        "INSERT INTO box_set (hash, benchmark, source, questions) VALUES (?, ?, ?, ?)",
        [questions.hash, questions.benchmark, questions.source, len(questions.questions)],
    )
    table = pa.Table.from_pylist([q.model_dump() for q in questions.questions], schema=_COLUMNS)
    con.register("box_batch", table)
    try:
        con.execute("INSERT INTO box_questions SELECT * FROM box_batch")
    finally:
        con.unregister("box_batch")


def load_box_set(path: Path | str) -> BoxSet:
    """Read the box set of an experiment file, and check it against its stored hash.

    Raises
    ------
    DataFileError
        The file is missing, holds no box set, is damaged, or its questions no longer match
        their hash (edited after they were stored).
    """
    return load_checked(path, _read, what="box set", content="box set")


def read_box_set(con: duckdb.DuckDBPyConnection, where: Path | str) -> BoxSet:
    """The box set of an open experiment file (``where`` names it in errors); see
    :func:`load_box_set`."""
    return read_checked(con, where, _read, what="box set", content="box set")


def holds_box_set(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the open experiment file holds a box benchmark's questions."""
    return table_hash(con, "box_set") is not None


def _read(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[str, BoxSet]:
    stored, benchmark, source = task_row(
        con,
        path,
        BOX_SET_MIGRATIONS,
        table="box_set",
        columns="hash, benchmark, source",
        missing="holds no box set",
    )
    questions = tuple(
        BoxQuestion.model_validate(_question(row))
        for row in rows_of(con, "box_questions", _COLUMNS.names)
    )
    return str(stored), BoxSet(benchmark, questions, source or "")


def _question(row: dict[str, Any]) -> dict[str, Any]:
    row["box"] = None if row["box"] is None else tuple(row["box"])
    return row
