"""The experiment's DuckDB store: migrations, the grid, raw responses, scores, the pending set,
and stored answers re-scored against other references.

Three parts, one job each: :class:`Repository` (the file: migrations, writes, reads),
:class:`ScoreQueue` (answers waiting for a scorer) and :class:`QueryService` (users' queries
beside a run's writes); :class:`Store` holds the three for the process that writes. Plain
Python over DuckDB and Arrow; the run's store actor is a thin wrapper over :class:`Store`,
and ``groundbench sql`` opens the same file read-only once no run holds it.
"""

from conditions import AttemptKey
from runner.store._batches import (
    OPEN_PHASES,
    BatchKey,
    BatchProblem,
    BatchRecord,
    Phase,
    batch_records,
)
from runner.store._errors import DAMAGED_FILE, StoreError, first_line
from runner.store._queries import KEEP_EVERY_S, LEASE_S, QUERY_SLOTS, QueryService
from runner.store._repository import Repository, grid_table, pending_rows
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
    response_row,
)
from runner.store._schema import (
    CONTROL_SCHEMA,
    KEY,
    MIGRATIONS,
    POLYGON_METRIC_NAMES,
    REFERENCE_SCHEMA,
    RESPONSE_COLUMNS,
    SCHEMA_VERSION,
    SCORE_SCHEMA,
)
from runner.store._score_queue import ScoreQueue
from runner.store._snapshot import (
    SNAPSHOT_TABLE,
    SNAPSHOT_TIMEOUT_S,
    Held,
    Reading,
    StoreCopy,
    TakeCopy,
    reading,
)
from runner.store._sql import (
    LOCKED,
    MAX_QUERY_TIMEOUT_S,
    QUERY_TIMEOUT_S,
    TABLE_FUNCTIONS,
    Result,
    ThroughRun,
    check_query,
    check_reads,
    check_timeout,
    query_store,
    read_only,
)
from runner.store._store import Store

__all__ = [
    "CONTROL_SCHEMA",
    "DAMAGED_FILE",
    "KEEP_EVERY_S",
    "KEY",
    "LEASE_S",
    "LOCKED",
    "MAX_QUERY_TIMEOUT_S",
    "MIGRATIONS",
    "OPEN_PHASES",
    "POLYGON_METRIC_NAMES",
    "QUERY_SLOTS",
    "QUERY_TIMEOUT_S",
    "REFERENCE_SCHEMA",
    "RESPONSE_COLUMNS",
    "SCHEMA_VERSION",
    "SCORE_SCHEMA",
    "SNAPSHOT_TABLE",
    "SNAPSHOT_TIMEOUT_S",
    "TABLE_FUNCTIONS",
    "AttemptKey",
    "BatchKey",
    "BatchProblem",
    "BatchRecord",
    "CellProgress",
    "ControlRow",
    "ErrorCount",
    "GridRow",
    "Held",
    "Pending",
    "Phase",
    "Progress",
    "QueryService",
    "Reading",
    "ReferenceRow",
    "Registration",
    "Repository",
    "ResponseRow",
    "Result",
    "ScoreJob",
    "ScoreQueue",
    "ScoreRow",
    "Store",
    "StoreCopy",
    "StoreError",
    "TakeCopy",
    "ThroughRun",
    "batch_records",
    "check_query",
    "check_reads",
    "check_timeout",
    "first_line",
    "grid_table",
    "pending_rows",
    "query_store",
    "read_only",
    "reading",
    "response_row",
]
