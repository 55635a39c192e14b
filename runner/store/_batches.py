"""The batch ledger: every batch a run made, the attempt keys it holds, and the result lines that
could not be read.

A batch is recorded before anything is sent for it (``preparing``: its keys, no file yet), and
each step after is recorded before the next is taken, so a driver killed at any point finds
what it did: a file uploaded (``uploaded``), a batch created at the provider (``submitted``,
its id), ended (``ended``), its results stored (``read``). A key held by an open batch is never
pending: it is collected from the batch, never sent again.

=========== ================================= ==============================================
phase       what is known                     what a resumed run does
=========== ================================= ==============================================
preparing   its keys                          nothing was created: ``abandoned``, keys free
uploaded    its input file (Anthropic: none;  finds the batch by its tag, else creates it
            the create carries the requests)  (Anthropic: by size, time and results, else
                                              ``abandoned``, keys free); a look that cannot
                                              tell leaves it so, keys held, for the next run
submitted   the provider's batch id           polls it
ended       that it ended                     reads its results (again, if cut short)
read        its results are stored            nothing: closed
abandoned   it was never created, or was lost nothing: closed, its keys are pending again
            (its provider's id was refused)
=========== ================================= ==============================================
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, NamedTuple

import duckdb
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from conditions import AttemptKey, Migration

Phase = Literal["preparing", "uploaded", "submitted", "ended", "read", "abandoned"]
OPEN_PHASES: tuple[Phase, ...] = ("preparing", "uploaded", "submitted", "ended")


class BatchRecord(BaseModel):
    """One batch, as the ledger keeps it. No key: ``api_key_env`` names the variable only."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str  # groundbench's tag for it, sent to the provider as metadata or display name
    backend: str
    provider: str
    model: str
    base_url: str  # where it was sent (a simulator's address, for a simulated backend)
    api_key_env: str | None = None  # its key variable: checked against the experiment, not read
    phase: Phase
    state: str | None = None  # the provider's state, normalised (runner.batch.BatchState)
    provider_state: str | None = None  # as the provider spells it
    remote_id: str | None = None  # the provider's batch id
    input_file: str | None = None
    output_file: str | None = None
    error_file: str | None = None
    requests: int = Field(ge=0)
    succeeded: int | None = None  # as the provider counts
    failed: int | None = None
    answered: int | None = None  # what reading its results stored: answers,
    errored: int | None = None  # errors,
    unrun: int | None = None  # lines that never ran (expired, cancelled),
    problems: int | None = None  # and lines that could not be read
    message: str | None = None  # why it failed or was abandoned
    created_at: datetime
    submitted_at: datetime | None = None
    ended_at: datetime | None = None
    read_at: datetime | None = None

    @property
    def open(self) -> bool:
        return self.phase in OPEN_PHASES


BATCH_COLUMNS: tuple[str, ...] = tuple(BatchRecord.model_fields)
# Fields a step may change; the rest are set once, when the batch is recorded.
CHANGEABLE = frozenset(BATCH_COLUMNS) - {"id", "backend", "provider", "model", "base_url",
                                          "api_key_env", "requests", "created_at"}  # fmt: skip


class BatchKey(NamedTuple):
    """One attempt a batch holds, under the id its line carries (``batch_requests``)."""

    batch: str
    custom_id: str
    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int

    @classmethod
    def of(cls, key: AttemptKey, *, batch: str, custom_id: str) -> BatchKey:
        """The row of attempt ``key``, held by ``batch`` under ``custom_id``."""
        return cls(batch=batch, custom_id=custom_id, **key._asdict())

    @property
    def key(self) -> AttemptKey:
        """The attempt it holds."""
        return AttemptKey.of(self)


class BatchProblem(NamedTuple):
    """A result line that could not be stored as an answer or an error (``batch_problems``)."""

    batch: str
    line: str  # "file-abc line 12"
    custom_id: str | None
    message: str


BATCH_KEY_SCHEMA = pa.schema(
    [
        ("batch", pa.string()),
        ("custom_id", pa.string()),
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("budget", pa.int32()),
        ("qid", pa.string()),
        ("attempt", pa.int32()),
    ]
)

BATCH_PROBLEM_SCHEMA = pa.schema(
    [
        ("batch", pa.string()),
        ("line", pa.string()),
        ("custom_id", pa.string()),
        ("message", pa.string()),
    ]
)

BATCHES = Migration(
    "run",
    5,
    "batch mode: batches, batch_requests (the attempts each holds), batch_problems",
    (
        """CREATE TABLE batches (
            id VARCHAR PRIMARY KEY, backend VARCHAR NOT NULL, provider VARCHAR NOT NULL,
            model VARCHAR NOT NULL, base_url VARCHAR NOT NULL, api_key_env VARCHAR,
            phase VARCHAR NOT NULL, state VARCHAR, provider_state VARCHAR, remote_id VARCHAR,
            input_file VARCHAR, output_file VARCHAR, error_file VARCHAR,
            requests INTEGER NOT NULL, succeeded INTEGER, failed INTEGER,
            answered INTEGER, errored INTEGER, unrun INTEGER, problems INTEGER,
            message VARCHAR, created_at TIMESTAMPTZ NOT NULL, submitted_at TIMESTAMPTZ,
            ended_at TIMESTAMPTZ, read_at TIMESTAMPTZ,
            updated_at TIMESTAMPTZ DEFAULT current_timestamp)""",
        """CREATE TABLE batch_requests (
            batch VARCHAR NOT NULL, custom_id VARCHAR NOT NULL, configuration VARCHAR NOT NULL,
            condition VARCHAR NOT NULL, budget INTEGER NOT NULL, qid VARCHAR NOT NULL,
            attempt INTEGER NOT NULL, PRIMARY KEY (batch, custom_id))""",
        """CREATE TABLE batch_problems (
            batch VARCHAR NOT NULL, line VARCHAR NOT NULL, custom_id VARCHAR,
            message VARCHAR NOT NULL, stored_at TIMESTAMPTZ DEFAULT current_timestamp,
            PRIMARY KEY (batch, line))""",
        # The requests an open batch holds: never pending, whatever their status.
        f"""CREATE VIEW held_requests AS
        SELECT DISTINCT k.configuration, k.condition, k.budget, k.qid
        FROM batch_requests k JOIN batches b ON b.id = k.batch
        WHERE b.phase IN ({", ".join(f"'{p}'" for p in OPEN_PHASES)})""",
    ),
)


def batch_records(
    con: duckdb.DuckDBPyConnection, where: str = "true", params: list[object] | None = None
) -> list[BatchRecord]:
    """The batches of ``con``'s file matching ``where``, oldest first (the store's, or a
    read-only connection's: ``groundbench batches``)."""
    rows = con.execute(
        f"SELECT {', '.join(BATCH_COLUMNS)} FROM batches WHERE {where} ORDER BY created_at, id",
        params or [],
    ).fetchall()
    return [BatchRecord.model_validate(dict(zip(BATCH_COLUMNS, r, strict=True))) for r in rows]
