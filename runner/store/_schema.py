"""The run tables of an experiment file, and the migrations that make them.

The cohort's tables (``cohort``, ``questions``, ``targets``, ``instances``) belong to
``conditions``; the tables here hold what a run asked and what came back. Each change of schema
is a new :data:`MIGRATIONS` entry, never an edit of an old one: a file made by an older
groundbench is brought up to date in one transaction when a store opens it, and a file made by
a newer one is refused rather than misread.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

KEY = ("configuration", "condition", "budget", "qid", "attempt")
"""Every attempt row, response or score, is keyed by these columns."""
REQUEST = KEY[:-1]

# The response columns, in the order the backends ship them (see ``response_row``).
RESPONSE_SCHEMA = pa.schema(
    [
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("budget", pa.int32()),
        ("qid", pa.string()),
        ("attempt", pa.int32()),
        ("replicate", pa.int32()),
        ("protocol", pa.string()),
        ("fingerprint", pa.string()),
        ("provider", pa.string()),
        ("model", pa.string()),
        ("image_sha256", pa.string()),
        ("outcome", pa.string()),
        ("parseable", pa.bool_()),
        ("answer", pa.string()),
        ("reasoning", pa.string()),
        ("finish_reason", pa.string()),
        ("http_status", pa.int32()),
        ("error_code", pa.string()),
        ("error_message", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("reasoning_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("transport_retries", pa.int32()),
        ("started_at", pa.timestamp("us", tz="UTC")),
        ("response_id", pa.string()),
        ("reported_model", pa.string()),
    ]
)
RESPONSE_COLUMNS: tuple[str, ...] = tuple(RESPONSE_SCHEMA.names)

POLYGON_METRICS = (
    ("parseable", pa.bool_()),
    ("iou", pa.float64()),
    ("iou_part", pa.float64()),
    ("iou_union", pa.float64()),
    ("iou_cont", pa.float64()),
    ("iou_distractor", pa.float64()),
    ("legal", pa.bool_()),
    ("legal_iou", pa.float64()),
    ("sel", pa.bool_()),
    ("defect", pa.string()),
)
SCORE_SCHEMA = pa.schema(
    [
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("budget", pa.int32()),
        ("qid", pa.string()),
        ("attempt", pa.int32()),
        *POLYGON_METRICS,
        ("box_iou", pa.float64()),  # box questions only
    ]
)
CONTROL_SCHEMA = pa.schema(
    [
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("qid", pa.string()),
        ("attempt", pa.int32()),
        ("n", pa.int32()),
        *POLYGON_METRICS,
    ]
)
GRID_SCHEMA = pa.schema(
    [
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("budget", pa.int32()),
        ("qid", pa.string()),
        ("attempts", pa.int32()),
    ]
)

_DUCK_TYPES = {
    pa.string(): "VARCHAR",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ",
}


def _columns(schema: pa.Schema, not_null: tuple[str, ...] = ()) -> str:
    return ", ".join(
        f'"{f.name}" {_DUCK_TYPES[f.type]}{" NOT NULL" if f.name in not_null else ""}'
        for f in schema
    )


def _table(name: str, schema: pa.Schema, key: tuple[str, ...], extra: str = "") -> str:
    return f"CREATE TABLE {name} ({_columns(schema, key)}{extra}, PRIMARY KEY ({', '.join(key)}))"


@dataclass(frozen=True)
class Migration:
    version: int
    what: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "run tables: configurations, grid, responses, scores, controls",
        (
            """CREATE TABLE configurations (
                name VARCHAR PRIMARY KEY, protocol VARCHAR NOT NULL, provider VARCHAR,
                model VARCHAR, attempts INTEGER, settings JSON,
                first_run TIMESTAMPTZ DEFAULT current_timestamp)""",
            _table("grid", GRID_SCHEMA, REQUEST),
            # seq orders rows as they land (scoring consumes them in that order); stored_at
            # is when the store committed the row.
            _table(
                "responses",
                RESPONSE_SCHEMA,
                KEY,
                ", seq BIGINT NOT NULL, stored_at TIMESTAMPTZ DEFAULT current_timestamp",
            ),
            _table("scores", SCORE_SCHEMA, KEY),
            _table(
                "controls", CONTROL_SCHEMA, ("configuration", "condition", "qid", "attempt", "n")
            ),
            # One row per request of the latest run's grid: how far it got. A request is
            # complete once an attempt parsed or its last allowed attempt answered; answered
            # attempts are numbered 0..k-1, so k is the next attempt to send. An errored
            # attempt leaves the request pending: the run sends it again.
            """CREATE VIEW request_status AS
            WITH answered AS (
                SELECT configuration, condition, budget, qid,
                       count(*) FILTER (WHERE outcome = 'answer') AS answers,
                       coalesce(bool_or(parseable), false) AS parsed,
                       bool_or(outcome <> 'answer') AS errored
                FROM responses GROUP BY ALL)
            SELECT g.configuration, g.condition, g.budget, g.qid, g.attempts,
                   coalesce(a.answers, 0)::INTEGER AS next_attempt,
                   CASE WHEN coalesce(a.parsed, false) OR coalesce(a.answers, 0) >= g.attempts
                        THEN 'complete'
                        WHEN coalesce(a.errored, false) THEN 'errored'
                        ELSE 'pending' END AS status
            FROM grid g LEFT JOIN answered a USING (configuration, condition, budget, qid)""",
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version
