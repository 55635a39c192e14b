"""The run tables of an experiment file, and the migrations that make them.

The cohort's tables (``cohort``, ``questions``, ``targets``, ``instances``) and a box
benchmark's belong to ``conditions``; the tables here hold what a run asked and what came back.
All of them are made by migrations recorded in the file's one migrations table
(``conditions._migrations``), these as part ``run``. Each change of schema is a new
:data:`MIGRATIONS` entry, never an edit of an old one: a file made by an older groundbench is
brought up to date, one transaction per migration, when a store opens it, and a file made by a
newer one is refused rather than misread.
"""

from __future__ import annotations

import pyarrow as pa

from conditions import Migration
from runner.store._batches import BATCHES

KEY = ("configuration", "condition", "budget", "qid", "attempt")
"""Every attempt row, response or score, is keyed by these columns."""
REQUEST = KEY[:-1]

# The response columns as migration 1 made them; later columns come with their own migrations.
_RESPONSE_SCHEMA_V1 = pa.schema(
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
# The response columns, in the order the backends ship them (see ``response_row``). Of an
# attempt's billed calls, how many reported no usable usage: its tokens count them at their
# worst case (NULL in a row stored before the count was kept).
RESPONSE_SCHEMA = _RESPONSE_SCHEMA_V1.append(pa.field("usage_unknown", pa.int32()))
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
POLYGON_METRIC_NAMES: tuple[str, ...] = tuple(name for name, _ in POLYGON_METRICS)
# The score table as migration 1 made it; later columns come with their own migrations.
_SCORE_SCHEMA_V1 = pa.schema(
    [
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("budget", pa.int32()),
        ("qid", pa.string()),
        ("attempt", pa.int32()),
        *POLYGON_METRICS,
        ("box_iou", pa.float64()),  # box questions only (a rejection question has none)
    ]
)
# A box benchmark's answer says "absent" by its rule (§10); None for GroundBench's questions.
SCORE_SCHEMA = _SCORE_SCHEMA_V1.append(pa.field("says_absent", pa.bool_()))
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
# One row per (answer, reference): a stored answer re-scored against another reference.
REFERENCE_SCHEMA = pa.schema(
    [
        ("configuration", pa.string()),
        ("condition", pa.string()),
        ("budget", pa.int32()),
        ("qid", pa.string()),
        ("attempt", pa.int32()),
        ("reference", pa.string()),
        ("iou", pa.float64()),
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


_RUN_TABLES = Migration(
    "run",
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
            _RESPONSE_SCHEMA_V1,
            KEY,
            ", seq BIGINT NOT NULL, stored_at TIMESTAMPTZ DEFAULT current_timestamp",
        ),
        _table("scores", _SCORE_SCHEMA_V1, KEY),
        _table("controls", CONTROL_SCHEMA, ("configuration", "condition", "qid", "attempt", "n")),
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
)
_VIEWS = "(VALUES ('iou0', 1), ('iou1', 2), ('iou2', 3), ('best_effort', 4)) AS v(view, span)"
_METRICS = ", ".join(
    f"coalesce(a.{name}, {default}) AS {name}"
    for name, default in (
        ("iou", 0.0), ("iou_part", 0.0), ("iou_union", 0.0), ("iou_cont", 0.0),
        ("iou_distractor", 0.0), ("legal", "false"), ("legal_iou", 0.0), ("sel", "false"),
        ("box_iou", 0.0),
    )
)  # fmt: skip

_VIEWS_OF_SCORES = Migration(
    "run",
    2,
    "views: question_scores (one row per question, cell and view), cell_summary",
    (
        # The view's locked attempt is the first parseable one inside its window (PROTOCOL
        # §6); a question is settled for a view once that attempt is scored, or once every
        # attempt of the window answered unparseable. Unsettled questions are still running.
        f"""CREATE VIEW question_scores AS
        WITH att AS (
            SELECT r.configuration, r.condition, r.budget, r.qid, r.attempt, r.outcome,
                   r.parseable AS answer_parses, s.parseable AS scored,
                   s.iou, s.iou_part, s.iou_union, s.iou_cont, s.iou_distractor, s.legal,
                   s.legal_iou, s.sel, s.defect, s.box_iou
            FROM responses r LEFT JOIN scores s
                 USING (configuration, condition, budget, qid, attempt)),
        locked AS (
            SELECT g.configuration, g.condition, g.budget, g.qid, v.view,
                   least(v.span, g.attempts) AS span,
                   min(a.attempt) FILTER (WHERE a.answer_parses AND a.attempt < v.span)
                       AS attempt,
                   count(a.attempt) FILTER (WHERE a.outcome = 'answer'
                                            AND a.attempt < v.span) AS answers
            FROM grid g CROSS JOIN {_VIEWS}
                 LEFT JOIN att a USING (configuration, condition, budget, qid)
            GROUP BY ALL)
        SELECT l.configuration, l.condition, l.budget, l.qid, l.view, l.attempt,
               (l.attempt IS NOT NULL AND a.scored IS NOT NULL)
                   OR (l.attempt IS NULL AND l.answers >= l.span) AS settled,
               l.attempt IS NOT NULL AS parseable, {_METRICS},
               CASE WHEN l.attempt IS NULL THEN 'unparseable' ELSE a.defect END AS defect
        FROM locked l LEFT JOIN att a
             ON a.configuration = l.configuration AND a.condition = l.condition
            AND a.budget = l.budget AND a.qid = l.qid AND a.attempt = l.attempt""",
        # Quick aggregates per cell and view, in points, over settled questions (an
        # unparseable answer counts 0 in the fixed means); reports compute the rest.
        """CREATE VIEW cell_summary AS
        SELECT configuration, condition, budget, view,
               count(*) AS questions,
               count(*) FILTER (WHERE settled) AS settled,
               count(*) FILTER (WHERE settled) = count(*) AS complete,
               100 * avg(parseable::INTEGER) FILTER (WHERE settled) AS parse_rate,
               100 * avg(CASE WHEN budget = 0 THEN box_iou ELSE iou END)
                   FILTER (WHERE settled) AS fixed_iou,
               100 * avg(CASE WHEN budget = 0 THEN box_iou ELSE iou END)
                   FILTER (WHERE settled AND parseable) AS parseable_iou,
               100 * avg(legal::INTEGER) FILTER (WHERE settled AND budget > 0) AS legal_pct,
               100 * avg(legal_iou) FILTER (WHERE settled AND budget > 0) AS legal_iou,
               100 * avg(sel::INTEGER) FILTER (WHERE settled AND budget > 0) AS sel_pct
        FROM question_scores GROUP BY ALL""",
    ),
)

_BOX_BENCHMARKS = Migration(
    "run",
    3,
    "box benchmarks: scores.says_absent, configurations.reading (coordinate convention)",
    (
        "ALTER TABLE scores ADD COLUMN says_absent BOOLEAN",
        # How a configuration's box answers are read (its coordinate convention): not part of
        # the protocol hash, since it changes no request; a change re-scores stored answers.
        "ALTER TABLE configurations ADD COLUMN reading VARCHAR",
    ),
)

_REFERENCE_SCORES = Migration(
    "run",
    4,
    "reference_scores: stored polygon answers re-scored against other references",
    (
        # Written by `groundbench rescore`, never by a run: the IoU of each parseable polygon
        # answer with each reference (scoring.REFERENCES: G_N at phases 0-7, the part, the
        # union, the continuous backend). An answer's rows are written together.
        _table("reference_scores", REFERENCE_SCHEMA, (*KEY, "reference")),
    ),
)

_RUN_PATHS = Migration(
    "run",
    6,
    "run_paths: where the last run found its images (what `show` and the HTML report draw)",
    (
        # A store names its questions' image files relative to the experiment's images
        # folder, which only the experiment file said: each run records it here, so reading
        # a store later (`groundbench show`, `report --html`) needs nothing beside it.
        """CREATE TABLE run_paths (
            name VARCHAR PRIMARY KEY, path VARCHAR NOT NULL,
            recorded_at TIMESTAMPTZ DEFAULT current_timestamp)""",
    ),
)

_PROTOCOL_FIELDS = Migration(
    "run",
    7,
    "configurations.protocol_fields: what each protocol hash was taken of",
    (
        # The hash alone says that a protocol changed, not what: with its fields beside it, a
        # refused run names each field that differs, old and new. NULL in a configuration
        # registered before this (its settings column still holds provider, model, decoding).
        "ALTER TABLE configurations ADD COLUMN protocol_fields JSON",
    ),
)

_USAGE_UNKNOWN = Migration(
    "run",
    8,
    "responses.usage_unknown: billed calls whose usage was no count, counted at their worst case",
    ("ALTER TABLE responses ADD COLUMN usage_unknown INTEGER",),
)

# Append only: a file records the versions it has, and is brought up to date from there.
MIGRATIONS: tuple[Migration, ...] = (
    _RUN_TABLES,
    _VIEWS_OF_SCORES,
    _BOX_BENCHMARKS,
    _REFERENCE_SCORES,
    BATCHES,
    _RUN_PATHS,
    _PROTOCOL_FIELDS,
    _USAGE_UNKNOWN,
)
SCHEMA_VERSION = MIGRATIONS[-1].version
