"""The experiment's DuckDB store: migrations, the grid, raw responses, scores, the pending set,
and stored answers re-scored against other references.

Plain Python over DuckDB and Arrow; the run's store actor is a thin wrapper over :class:`Store`,
and ``groundbench sql`` opens the same file read-only once no run holds it.
"""

from runner.store._batches import (
    OPEN_PHASES,
    BatchKey,
    BatchProblem,
    BatchRecord,
    Phase,
    batch_records,
)
from runner.store._errors import DAMAGED_FILE, StoreError, first_line
from runner.store._rows import (
    AttemptKey,
    ControlRow,
    ReferenceRow,
    ResponseRow,
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
from runner.store._sql import (
    LOCKED,
    QUERY_TIMEOUT_S,
    Result,
    ThroughRun,
    check_query,
    query_store,
    read_only,
)
from runner.store._store import (
    CellProgress,
    ErrorCount,
    GridRow,
    Pending,
    Progress,
    Registration,
    ScoreJob,
    Store,
    grid_table,
    pending_rows,
)

__all__ = [
    "CONTROL_SCHEMA",
    "DAMAGED_FILE",
    "KEY",
    "LOCKED",
    "MIGRATIONS",
    "OPEN_PHASES",
    "POLYGON_METRIC_NAMES",
    "QUERY_TIMEOUT_S",
    "REFERENCE_SCHEMA",
    "RESPONSE_COLUMNS",
    "SCHEMA_VERSION",
    "SCORE_SCHEMA",
    "AttemptKey",
    "BatchKey",
    "BatchProblem",
    "BatchRecord",
    "CellProgress",
    "ControlRow",
    "ErrorCount",
    "GridRow",
    "Pending",
    "Phase",
    "Progress",
    "ReferenceRow",
    "Registration",
    "ResponseRow",
    "Result",
    "ScoreJob",
    "ScoreRow",
    "Store",
    "StoreError",
    "ThroughRun",
    "batch_records",
    "check_query",
    "first_line",
    "grid_table",
    "pending_rows",
    "query_store",
    "read_only",
    "response_row",
]
