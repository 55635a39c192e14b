"""The repository: one experiment file, one writer, batched idempotent writes.

Everything a run keeps is written and read here: the migrations, the configurations and their
protocol hashes, the grid, every attempt's raw response (or error), and the scores. Writes come in
batches, inserted from an Arrow table in one statement (DuckDB's ``executemany`` inserts row by
row). A key written twice keeps its first answer; an error only holds its key until an answer
(or a later error) replaces it, because the run sends errored attempts again. Each batch is its
own transaction, so a crash leaves whole batches or nothing; after each, a note beside the file
says what it has written (``_written``), so a store whose log was cut short says what it lost.

What the repository does not do: hand answers to scorers (:mod:`runner.store._score_queue`) or
serve users' queries while it writes (:mod:`runner.store._queries`); :class:`runner.store.Store`
puts the three together for a run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from conditions import (
    BOX,
    AttemptKey,
    SchemaTooNewError,
    applied_version,
    apply_migration,
    ensure_migrations,
    opening_repaired,
    pending_migrations,
    protocol_mismatch,
)
from runner.store._batches import (
    BATCH_COLUMNS,
    BATCH_KEY_SCHEMA,
    BATCH_PROBLEM_SCHEMA,
    CHANGEABLE,
    OPEN_PHASES,
    BatchKey,
    BatchProblem,
    BatchRecord,
    batch_records,
)
from runner.store._billed import UNWRITABLE, Billed, carried, settle, writable
from runner.store._errors import StoreError, first_line
from runner.store._rows import (
    CellProgress,
    ControlRow,
    ErrorCount,
    GridRow,
    Pending,
    Progress,
    ReferenceRow,
    Registration,
    ResponseRow,
    ScoreJob,
    ScoreRow,
)
from runner.store._schema import (
    CONTROL_SCHEMA,
    GRID_SCHEMA,
    KEY,
    MIGRATIONS,
    REFERENCE_SCHEMA,
    REQUEST,
    RESPONSE_COLUMNS,
    RESPONSE_SCHEMA,
    SCORE_SCHEMA,
)
from runner.store._sql import lock_down
from runner.store._written import Note, Written, held, loss, noted

log = logging.getLogger("groundbench.store")
_R = TypeVar("_R")

_OPEN = f"({', '.join(repr(p) for p in OPEN_PHASES)})"
KEY_SCHEMA = pa.schema([RESPONSE_SCHEMA.field(c) for c in KEY])
_SCORE_JOB = ", ".join(f"r.{c}" for c in ScoreJob._fields)  # a job's columns of responses r
# The answers re-scoring reads: parseable answers to GroundBench's polygon questions.
_POLYGON_ANSWERS = f"r.outcome = 'answer' AND r.parseable AND r.budget <> {BOX}"


# The store checkpoints (writes its log into the file) this often during a run, and at its end.
CHECKPOINT_ROWS = 5000
CHECKPOINT_S = 120.0


class Repository:
    """The run tables of one experiment file, open for writing by this process alone.

    Raises
    ------
    StoreError
        The file is locked by another process past ``lock_wait_s`` (a run still going), is not
        a DuckDB file, or was written by a newer groundbench.
    """

    def __init__(self, path: Path | str, *, lock_wait_s: float = 15.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists()  # a note beside a file made anew speaks of another
        self._con = _connect(self.path, lock_wait_s)
        try:
            # Read once the file is ours (no other writer), before anything is written to it.
            self._check_written(noted(self.path) if existed else None)
            self._migrate()
            lock_down(self._con)  # users' queries run on this database during a run
            self._seq = self._scalar("SELECT coalesce(max(seq), 0) FROM responses") + 1
            # This process is the file's only writer, so it can know which keys hold an answer
            # and which an error, and insert without asking DuckDB to resolve conflicts (an
            # upsert costs several times a plain insert of a small batch).
            self._answered: set[AttemptKey] = set()
            self._errored: set[AttemptKey] = set()
            for *key, outcome in self._con.execute(
                f"SELECT {', '.join(KEY)}, outcome FROM responses"
            ).fetchall():
                held = self._answered if outcome == "answer" else self._errored
                held.add(AttemptKey._make(key))
            self._scored: set[AttemptKey] = {
                AttemptKey._make(k)
                for k in self._con.execute(f"SELECT {', '.join(KEY)} FROM scores").fetchall()
            }
            self._batches = self._scalar("SELECT count(*) FROM batches")
            self._note = Note(self.path)
        except BaseException:
            self._con.close()
            raise
        self._note.write(self._written())  # what it holds now: a loss is said once
        self._unsaved = 0  # rows written since the last checkpoint
        self._saved_at = time.monotonic()

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The file's connection, for the query service: it runs users' queries on cursors of
        its own, beside the writes."""
        return self._con

    def close(self) -> None:
        # The file alone then holds the run, no log to replay; a store that cannot checkpoint
        # keeps its log, which DuckDB replays on the next open.
        with contextlib.suppress(duckdb.Error):
            self._con.execute("CHECKPOINT")
        self._con.close()
        self._note.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema ---------------------------------------------------------------------------

    def version(self) -> int:
        """The file's version of the run tables (:data:`SCHEMA_VERSION` once open)."""
        return applied_version(self._con, "run")

    def _migrate(self) -> None:
        with self._transaction():
            ensure_migrations(self._con)
        try:
            pending = pending_migrations(self._con, str(self.path), MIGRATIONS)
        except SchemaTooNewError as exc:
            raise StoreError(str(exc)) from None
        for migration in pending:
            with self._transaction():
                apply_migration(self._con, migration)

    # -- the run's grid ---------------------------------------------------------------------

    def register(
        self,
        configurations: Sequence[Registration],
        grid: Iterable[GridRow] | pa.Table,
        images: Path | None = None,
        experiment: Path | None = None,
    ) -> list[tuple[str, str | None, int]]:
        """Record this run's configurations and make ``grid`` (rows, or :func:`grid_table`'s
        columns) the grid pending is counted on; record ``images``, the folder the questions'
        image files are in, and ``experiment``, the file the run was started from, for what
        reads the store later (a command given the store finds its experiment file).

        A configuration whose reading (coordinate convention) changed since its answers were
        scored has those scores dropped, so that its answers are scored again: no call is
        made twice for a reading. Returns (configuration, the reading it had, answers to
        score again) for each.

        Raises
        ------
        ProtocolMismatchError
            A configuration of the same name was run under another protocol hash.
        """
        self._note.write(self._written().lowered(scores=0))  # its transaction may drop some
        with self._transaction():
            reread = self._register_configurations(configurations)
            for name, path in (("images", images), ("experiment", experiment)):
                if path is not None:
                    self._con.execute(
                        "INSERT OR REPLACE INTO run_paths (name, path) VALUES (?, ?)",
                        [name, str(Path(path).absolute())],
                    )
            self._con.register("grid_batch", grid_table(grid))
            try:
                self._replace_grid()
            finally:
                self._con.unregister("grid_batch")
        if reread:  # committed: the scores are gone, so their answers wait for scoring again
            names = {name for name, *_ in reread}
            self._scored = {k for k in self._scored if k.configuration not in names}
        self._note.write(self._written())
        return reread

    def _register_configurations(
        self, configurations: Sequence[Registration]
    ) -> list[tuple[str, str | None, int]]:
        """Record each configuration (inside the caller's transaction): a new one is added, a
        known one must keep its protocol, and one read otherwise now has its scores dropped."""
        reread: list[tuple[str, str | None, int]] = []
        for c in configurations:
            # Every row fetched: DuckDB takes no Arrow table (the grid's, next) on a connection
            # that a statement's unfinished result holds.
            rows = self._con.execute(
                "SELECT protocol, reading, protocol_fields, settings FROM configurations "
                "WHERE name = ?",
                [c.name],
            ).fetchall()
            row = rows[0] if rows else None
            if row is None:
                self._con.execute(
                    "INSERT INTO configurations (name, protocol, provider, model, attempts, "
                    "settings, reading, protocol_fields) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        *(c.name, c.protocol, c.provider, c.model, c.attempts, c.settings),
                        *(c.reading, c.fields),
                    ],
                )
                continue
            if row[0] != c.protocol:
                new = json.loads(c.fields) if c.fields is not None else None
                where = f"{self.path}, configuration {c.name}"
                raise protocol_mismatch(where, c.protocol, row[0], new, row[2], row[3])
            if row[2] is None and c.fields is not None:  # registered before fields were kept
                self._con.execute(
                    "UPDATE configurations SET protocol_fields = ? WHERE name = ?",
                    [c.fields, c.name],
                )
            if row[1] != c.reading:
                reread.append((c.name, row[1], self._forget_scores(c.name)))
                self._con.execute(
                    "UPDATE configurations SET reading = ? WHERE name = ?", [c.reading, c.name]
                )
        return reread

    def _replace_grid(self) -> None:
        """Make ``grid`` the registered ``grid_batch`` (inside the caller's transaction) by
        what differs: a resume registers the grid it ran last, and rewriting 1.2 M rows and
        their key index takes seconds where comparing them takes a fraction of one."""
        same = " AND ".join(f"b.{c} = g.{c}" for c in GRID_SCHEMA.names)
        self._con.execute(
            f"DELETE FROM grid g WHERE NOT EXISTS (SELECT 1 FROM grid_batch b WHERE {same})"
        )
        self._con.execute(
            f"INSERT INTO grid SELECT * FROM grid_batch "
            f"ANTI JOIN grid USING ({', '.join(GRID_SCHEMA.names)})"
        )

    def _forget_scores(self, configuration: str) -> int:
        """Drop ``configuration``'s scores (inside the caller's transaction); how many."""
        dropped = self._scalar_of(
            "SELECT count(*) FROM scores WHERE configuration = ?", [configuration]
        )
        for table in ("scores", "controls"):
            self._con.execute(f"DELETE FROM {table} WHERE configuration = ?", [configuration])
        return dropped

    def pending(self, configurations: Sequence[str] | None = None) -> list[Pending]:
        """Every request of the grid not yet complete, question by question.

        Ordered by configuration, question, condition and budget: a backend sends one image's
        requests together, so each image variant is read and encoded once.
        """
        return pending_rows(self.pending_table(configurations))

    def pending_table(self, configurations: Sequence[str] | None = None) -> pa.Table:
        """:meth:`pending` as columns, the names dictionary-encoded: what the store actor ships
        to the driver. A resume of a 1.2 M grid has 600,000 requests left; as a few buffers
        they cross in milliseconds, as named tuples in seconds each way."""
        where = ""
        params: list[object] = []
        if configurations is not None:
            # Not `IN (SELECT unnest(?))`: that semi-join takes twice as long on a large grid.
            where = "AND list_contains(?::VARCHAR[], configuration)"
            params = [list(configurations)]
        if self._scalar(f"SELECT count(*) FROM batches WHERE phase IN {_OPEN}"):
            # A request an open batch holds is collected from it, never sent again.
            where += f" AND ({', '.join(REQUEST)}) NOT IN (SELECT * FROM held_requests)"
        # On a cursor of its own: DuckDB reads a relation into Arrow without an extra copy, but
        # not on a connection that another statement's unfinished result holds.
        with self._con.cursor() as cursor:
            relation = cursor.sql(
                f"SELECT {', '.join(Pending._fields)} FROM request_status "
                f"WHERE status <> 'complete' {where} "
                "ORDER BY configuration, qid, condition, budget",
                params=params,
            )
            # DuckDB 2 names it to_arrow_table, 1.x fetch_arrow_table.
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            table: pa.Table = fetch()
        return pa.table(
            [pc.dictionary_encode(c) if c.type == pa.string() else c for c in table.columns],
            names=table.column_names,
        )

    # -- batches ----------------------------------------------------------------------------

    def record_batch(self, batch: BatchRecord, keys: Sequence[BatchKey]) -> None:
        """Record a batch and the attempts it holds, together, before anything is sent for it."""
        with self._transaction():
            self._con.execute(
                f"INSERT INTO batches ({', '.join(BATCH_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(BATCH_COLUMNS))})",
                list(batch.model_dump().values()),
            )
            self._con.register("batch_keys", _arrow(keys, BATCH_KEY_SCHEMA))
            try:
                self._con.execute("INSERT INTO batch_requests SELECT * FROM batch_keys")
            finally:
                self._con.unregister("batch_keys")
        self._batches += 1
        self._note.write(self._written())

    def update_batch(self, batch: str, **changes: object) -> BatchRecord:
        """Record a step of ``batch`` (its phase, the provider's ids and counts); the batch as
        recorded now.

        Raises
        ------
        StoreError
            No such batch, or a field a step cannot change.
        """
        wrong = sorted(set(changes) - CHANGEABLE)
        if wrong:
            raise StoreError(f"batch {batch}: cannot change {', '.join(wrong)}")
        if changes:
            sets = ", ".join(f"{name} = ?" for name in changes)
            self._con.execute(
                f"UPDATE batches SET {sets}, updated_at = current_timestamp WHERE id = ?",
                [*changes.values(), batch],
            )
        found = self.batches(ids=[batch])
        if not found:
            raise StoreError(f"no batch {batch} in {self.path}")
        return found[0]

    def batches(
        self,
        backend: str | None = None,
        *,
        open_only: bool = False,
        ids: Sequence[str] | None = None,
    ) -> list[BatchRecord]:
        """The batches recorded (of ``backend``; only those still open; only ``ids``),
        oldest first."""
        where: list[str] = ["true"]
        params: list[object] = []
        if backend is not None:
            where.append("backend = ?")
            params.append(backend)
        if open_only:
            where.append(f"phase IN {_OPEN}")
        if ids is not None:
            where.append("list_contains(?::VARCHAR[], id)")
            params.append(list(ids))
        return batch_records(self._con, " AND ".join(where), params)

    def held(self) -> int:
        """Requests an open batch holds: collected from it, never sent again meanwhile."""
        return self._scalar("SELECT count(*) FROM held_requests")

    def batch_keys(self, batch: str) -> list[BatchKey]:
        """The attempts ``batch`` holds, under the ids its lines carry."""
        rows = self._con.execute(
            f"SELECT {', '.join(BatchKey._fields)} FROM batch_requests WHERE batch = ? "
            "ORDER BY custom_id",
            [batch],
        ).fetchall()
        return list(map(BatchKey._make, rows))

    def remote_ids(self, provider: str) -> set[str]:
        """The provider's ids of every batch recorded for ``provider``: those a batch sought
        again cannot be (:class:`runner.batch.Sought`)."""
        rows = self._con.execute(
            "SELECT remote_id FROM batches WHERE provider = ? AND remote_id IS NOT NULL",
            [provider],
        ).fetchall()
        return {r[0] for r in rows}

    def record_problems(self, problems: Sequence[BatchProblem]) -> int:
        """Keep result lines that could not be read (once each, however often they are read);
        how many were new."""
        if not problems:
            return 0
        before = self._scalar("SELECT count(*) FROM batch_problems")
        self._con.register("problem_rows", _arrow(problems, BATCH_PROBLEM_SCHEMA))
        try:
            self._con.execute(
                "INSERT OR IGNORE INTO batch_problems (batch, line, custom_id, message) "
                "SELECT batch, line, custom_id, message FROM problem_rows"
            )
        finally:
            self._con.unregister("problem_rows")
        return self._scalar("SELECT count(*) FROM batch_problems") - before

    # -- responses --------------------------------------------------------------------------

    def write_responses(self, rows: Sequence[ResponseRow]) -> list[ResponseRow]:
        """Store a batch of attempt rows; returns the rows that set or replaced a key, in the
        order they were stored.

        Within the batch and against the table, an answer is kept over anything later, and an
        error gives way to whatever comes after it.
        """
        fresh = [r for r in settle(rows) if r.key not in self._answered]
        if not fresh:
            return []
        replaced = [r.key for r in fresh if r.key in self._errored]
        if replaced:
            bills = self._bills(replaced)  # each carried on by the row that replaces it
            fresh = [carried(r, bills.get(r.key)) for r in fresh]
        try:
            table = _arrow(fresh, RESPONSE_SCHEMA)
        except UNWRITABLE:  # one row Arrow cannot hold: it alone becomes a problem
            fresh = [writable(r, RESPONSE_SCHEMA) for r in fresh]
            table = _arrow(fresh, RESPONSE_SCHEMA)
        seqs = pa.array(range(self._seq, self._seq + len(fresh)), pa.int64())
        table = table.append_column("seq", seqs)
        columns = ", ".join(f'"{c}"' for c in (*RESPONSE_COLUMNS, "seq"))
        self._con.register("response_batch", table)
        try:
            with self._transaction():
                if replaced:
                    self._con.register("replaced_keys", _arrow(replaced, KEY_SCHEMA))
                    self._con.execute(
                        f"DELETE FROM responses WHERE ({', '.join(KEY)}) IN "
                        f"(SELECT ({', '.join(KEY)}) FROM replaced_keys)"
                    )
                self._con.execute(
                    f"INSERT INTO responses ({columns}) SELECT {columns} FROM response_batch"
                )
        finally:
            self._con.unregister("response_batch")
            if replaced:
                self._con.unregister("replaced_keys")
        self._seq += len(fresh)
        self._wrote(len(fresh))
        for row in fresh:  # committed: now the sets may say so
            key = row.key
            if row.outcome == "answer":
                self._answered.add(key)
                self._errored.discard(key)
            else:
                self._errored.add(key)
        return fresh

    def _bills(self, keys: Sequence[AttemptKey]) -> dict[AttemptKey, Billed]:
        """The bills of the stored error rows of ``keys`` (those that have one)."""
        self._con.register("billed_keys", _arrow(keys, KEY_SCHEMA))
        try:
            rows = self._con.execute(
                f"SELECT {', '.join(KEY)}, input_tokens, output_tokens, usage_unknown, "
                "started_at "
                f"FROM responses WHERE ({', '.join(KEY)}) IN "
                f"(SELECT ({', '.join(KEY)}) FROM billed_keys) "
                "AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL)"
            ).fetchall()
        finally:
            self._con.unregister("billed_keys")
        n = len(KEY)
        return {
            AttemptKey(*r[:n]): Billed(r[n] or 0, r[n + 1] or 0, r[n + 2] or 0, r[n + 3])
            for r in rows
        }

    # -- scores -----------------------------------------------------------------------------

    def write_scores(self, scores: Sequence[ScoreRow], controls: Sequence[ControlRow]) -> None:
        """Store score rows (and a box answer's control rows); a key scored twice keeps the
        first, which is the same score: scoring is deterministic."""
        fresh: dict[AttemptKey, ScoreRow] = {}
        for row in scores:
            if row.key not in self._scored:
                fresh.setdefault(row.key, row)
        if not fresh:
            return
        # A box answer's controls are keyed by its own key and n: keep those of fresh keys.
        kept_controls = [c for c in controls if c.answer_key(BOX) in fresh]
        with self._transaction():
            for name, rows, schema in (
                ("scores", list(fresh.values()), SCORE_SCHEMA),
                ("controls", kept_controls, CONTROL_SCHEMA),
            ):
                if not rows:
                    continue
                self._con.register("score_batch", _arrow(rows, schema))
                try:
                    self._con.execute(f"INSERT INTO {name} SELECT * FROM score_batch")
                finally:
                    self._con.unregister("score_batch")
        self._scored.update(fresh)
        self._wrote(len(fresh) + len(kept_controls))

    def unscored_answers(self) -> list[ScoreJob]:
        """Every stored answer that has no score, oldest first: what the scorers have to do
        when a store opens (a scorer died, or a run was killed) or a reading changed."""
        rows = self._con.execute(
            f"SELECT {_SCORE_JOB} "
            "FROM responses r ANTI JOIN scores s USING (configuration, condition, budget, qid, "
            "attempt) WHERE r.outcome = 'answer' ORDER BY r.seq"
        ).fetchall()
        return list(map(ScoreJob._make, rows))

    def unscored(self) -> int:
        """Answered attempts with no score row."""
        return self._scalar(
            "SELECT count(*) FROM responses r ANTI JOIN scores s USING (configuration, "
            "condition, budget, qid, attempt) WHERE r.outcome = 'answer'"
        )

    # -- re-scoring against other references ------------------------------------------------

    def polygon_answers(self) -> int:
        """Stored parseable answers to polygon questions: every answer re-scoring covers."""
        return self._scalar(f"SELECT count(*) FROM responses r WHERE {_POLYGON_ANSWERS}")

    def unrescored(self, references: Sequence[str]) -> list[ScoreJob]:
        """The parseable polygon answers that lack a row for any of ``references``.

        Ordered question by question, so that a re-scorer builds each referent's references
        once and uses them while they are at hand.
        """
        rows = self._con.execute(
            f"""
            WITH done AS (
                SELECT {", ".join(KEY)}, count(*) AS held FROM reference_scores
                WHERE reference IN (SELECT unnest(?)) GROUP BY ALL)
            SELECT {_SCORE_JOB}
            FROM responses r LEFT JOIN done d USING ({", ".join(KEY)})
            WHERE {_POLYGON_ANSWERS} AND coalesce(d.held, 0) < ?
            ORDER BY r.qid, r.budget, r.configuration, r.condition, r.attempt
            """,
            [list(references), len(set(references))],
        ).fetchall()
        return list(map(ScoreJob._make, rows))

    def write_reference_scores(self, rows: Sequence[ReferenceRow]) -> int:
        """Store a batch of re-scored rows in one transaction; returns how many were new.

        A crash leaves whole batches, so a caller that puts all of an answer's rows in one
        batch never leaves an answer half re-scored. A row already stored keeps its value:
        re-scoring is deterministic, so writing it again changes nothing.
        """
        if not rows:
            return 0
        self._con.register("reference_batch", _arrow(rows, REFERENCE_SCHEMA))
        try:
            with self._transaction():
                # OR IGNORE: the file, not a set held here, says which rows exist; a store of
                # 120,000 answers holds 1.3 million of them.
                written = self._scalar(
                    "INSERT OR IGNORE INTO reference_scores SELECT * FROM reference_batch"
                )
        finally:
            self._con.unregister("reference_batch")
        self._wrote(written)
        return written

    # -- reading ----------------------------------------------------------------------------

    def progress(self) -> list[Progress]:
        """Per configuration of the grid: requests by status, rows stored, tokens."""
        rows = self._con.execute(
            """
            WITH s AS (
                SELECT configuration, count(*) AS requests,
                       count(*) FILTER (WHERE status = 'complete') AS complete,
                       count(*) FILTER (WHERE status = 'errored') AS errored
                FROM request_status GROUP BY ALL),
            batched AS (SELECT DISTINCT configuration, condition, budget, qid, attempt,
                                true AS by_batch FROM batch_requests),
            r AS (
                SELECT configuration, count(*) AS responses,
                       count(*) FILTER (WHERE outcome = 'answer') AS answered,
                       coalesce(sum(input_tokens), 0) AS input_tokens,
                       coalesce(sum(output_tokens), 0) AS output_tokens,
                       coalesce(sum(input_tokens) FILTER (WHERE by_batch), 0) AS batch_input,
                       coalesce(sum(output_tokens) FILTER (WHERE by_batch), 0) AS batch_output
                FROM responses LEFT JOIN batched
                     USING (configuration, condition, budget, qid, attempt)
                GROUP BY ALL),
            k AS (SELECT configuration, count(*) AS scored FROM scores GROUP BY ALL)
            SELECT s.configuration, s.requests, s.complete, s.errored,
                   coalesce(r.responses, 0), coalesce(r.answered, 0), coalesce(k.scored, 0),
                   coalesce(r.input_tokens, 0), coalesce(r.output_tokens, 0),
                   coalesce(r.batch_input, 0), coalesce(r.batch_output, 0)
            FROM s LEFT JOIN r USING (configuration) LEFT JOIN k USING (configuration)
            ORDER BY s.configuration
            """
        ).fetchall()
        return [_progress(r) for r in rows]

    def cells(self) -> list[CellProgress]:
        """Per cell of the grid: requests by status, and the live parse rate and fixed IoU
        (IoU2, settled questions)."""
        rows = self._con.execute(
            """
            WITH s AS (
                SELECT configuration, condition, budget, count(*) AS requests,
                       count(*) FILTER (WHERE status = 'complete') AS complete,
                       count(*) FILTER (WHERE status = 'errored') AS errored
                FROM request_status GROUP BY ALL)
            SELECT s.*, c.settled, c.parse_rate, c.fixed_iou
            FROM s LEFT JOIN (SELECT * FROM cell_summary WHERE view = 'iou2') c
                 USING (configuration, condition, budget)
            ORDER BY configuration, condition, budget
            """
        ).fetchall()
        return _records(CellProgress, rows)

    def error_counts(self, per_configuration: int = 3) -> list[ErrorCount]:
        """The most frequent errors of each configuration among the records of its requests
        not yet complete (what keeps them from completing), most frequent first."""
        rows = self._con.execute(
            """
            WITH open AS (
                SELECT configuration, condition, budget, qid
                FROM request_status WHERE status <> 'complete')
            SELECT configuration, outcome, http_status, error_code, count(*) AS n,
                   arg_max(error_message, started_at) AS message
            FROM responses JOIN open USING (configuration, condition, budget, qid)
            WHERE outcome <> 'answer'
            GROUP BY configuration, outcome, http_status, error_code
            QUALIFY row_number() OVER (
                PARTITION BY configuration ORDER BY n DESC, outcome, error_code) <= ?
            ORDER BY configuration, n DESC, outcome, error_code
            """,
            [per_configuration],
        ).fetchall()
        return _records(ErrorCount, rows)

    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and rows of ``sql`` (the caller decides what it may run)."""
        result = self._con.execute(sql)
        names = [d[0] for d in result.description or []]
        return names, result.fetchall()

    # -- internals --------------------------------------------------------------------------

    def _wrote(self, rows: int) -> None:
        """Note what is written (committed); checkpoint every :data:`CHECKPOINT_ROWS` rows or
        :data:`CHECKPOINT_S` seconds, so that a damaged log can only ever cost what came after
        the last checkpoint."""
        self._note.write(self._written())
        self._unsaved += rows
        now = time.monotonic()
        if self._unsaved >= CHECKPOINT_ROWS or now - self._saved_at >= CHECKPOINT_S:
            self._con.execute("CHECKPOINT")
            self._unsaved, self._saved_at = 0, now

    def _written(self) -> Written:
        """What this store has committed, as its note says it: the responses' highest seq."""
        return Written(self._seq - 1, len(self._scored), self._batches)

    def _check_written(self, claimed: Written | None) -> None:
        """Say in one line (and keep the store as found) if the file holds less than its note
        says was written: a log cut short, which DuckDB replays up to the cut in silence."""
        found = held(self._con) if claimed is not None else None
        if claimed is None or found is None:
            return
        said = loss(self.path, claimed, found)
        if said is not None:
            log.warning("groundbench: %s", said)

    def _scalar(self, sql: str) -> int:
        return self._scalar_of(sql, [])

    def _scalar_of(self, sql: str, params: list[object]) -> int:
        (row,) = self._con.execute(sql, params).fetchall()  # all: no result left unfinished
        return int(row[0])

    def _transaction(self) -> _Transaction:
        return _Transaction(self._con)


class _Transaction:
    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def __enter__(self) -> None:
        self._con.execute("BEGIN TRANSACTION")

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self._con.execute("COMMIT" if kind is None else "ROLLBACK")


def grid_table(grid: Iterable[GridRow] | pa.Table) -> pa.Table:
    """Grid rows as the store registers them: columns, which cross to the store actor as a
    few buffers (a 1.2 M-row grid as named tuples takes seconds to pickle and as many to read)."""
    if isinstance(grid, pa.Table):
        return grid
    return _arrow(list(grid), GRID_SCHEMA)


def pending_rows(table: pa.Table) -> list[Pending]:
    """The requests of a :meth:`Repository.pending_table` (in its order), each name one string
    object however many requests hold it."""
    columns = [_values(table.column(name)) for name in Pending._fields]
    return list(map(Pending._make, zip(*columns, strict=True)))


def _records(cls: type[_R], rows: Iterable[Sequence[Any]]) -> list[_R]:
    """The rows of a ``SELECT`` of ``cls``'s fields, in their order, as ``cls``: the one place
    a row's values are matched to a record's fields."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    return [cls(**dict(zip(names, row, strict=True))) for row in rows]


def _progress(row: Sequence[Any]) -> Progress:
    """A row of :meth:`Repository.progress` (its sums as ints: DuckDB's are 128-bit)."""
    (record,) = _records(Progress, [(row[0], *(int(v) for v in row[1:]))])
    return record


def _values(column: pa.ChunkedArray) -> list[Any]:
    array = column.combine_chunks()
    if not pa.types.is_dictionary(array.type):
        values: list[Any] = array.to_pylist()
        return values
    words = array.dictionary.to_pylist()
    return [words[i] for i in array.indices.to_pylist()]


def _arrow(rows: Sequence[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.Table.from_arrays(
        [pa.array(col, type=field.type) for col, field in zip(columns, schema, strict=True)],
        schema=schema,
    )


def _connect(path: Path, lock_wait_s: float) -> duckdb.DuckDBPyConnection:
    # A run killed a moment ago may still hold the lock while its process exits: wait a little.
    deadline = time.monotonic() + lock_wait_s
    while True:
        try:
            return opening_repaired(path, lambda: duckdb.connect(str(path)))
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                raise StoreError(f"{path}: cannot open the store: {first_line(exc)}") from None
            time.sleep(0.2)
        except duckdb.Error as exc:
            raise StoreError(f"{path}: not a usable DuckDB file: {first_line(exc)}") from None
