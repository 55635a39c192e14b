"""What is asked: the cohort, budgets, conditions, prompts, image variants and cues.

Plain Python; it uses ``scoring`` for targets and never imports ``runner`` or Ray.

- data: :class:`DataRoot` and :data:`SOURCES` (the RefCOCO layout), :func:`load_refs` (a
  pickle reader that runs no code), :func:`generate_synthetic` (the same layout, made up),
  :func:`check_data_root` (what a root holds, missing or malformed, before any run);
- the cohort: :func:`build_cohort` draws and freezes it (PROTOCOL §8), :func:`write_cohort`
  and :func:`load_cohort` keep it in the experiment's DuckDB file;
- the grid: :data:`CONDITIONS`, :class:`Configuration`, :data:`PAPER_CONFIGURATIONS`
  (PROTOCOL §9); :func:`plan` lists every request, :class:`RequestBuilder` makes each one
  exactly, and :func:`protocol_hash` says which results may be pooled;
- the task: :func:`task_of` puts a cohort's polygon grid (:class:`PolygonTask`) or a box
  benchmark's questions (:class:`BoxTask`, PROTOCOL §10) behind one :class:`Task`, which is all
  a run asks of its questions;
- the file: every table is made by a migration recorded in one migrations table
  (:func:`ensure_migrations`).
"""

from conditions._box_prompts import BOX_BENCHMARK_PROMPTS, Reasoning, box_benchmark_prompt
from conditions._box_requests import (
    BOX_ATTEMPTS,
    BoxRequestBuilder,
    box_protocol_fields,
    box_protocol_hash,
    plan_boxes,
    reasoning_decoding,
    reasoning_named,
)
from conditions._box_set import (
    BOX_SET_MIGRATIONS,
    BoxSet,
    BoxSetMismatchError,
    box_set,
    holds_box_set,
    load_box_set,
    read_box_set,
    sent_scale,
    stored_box_set_hash,
    write_box_set,
)
from conditions._boxsets import (
    BENCHMARKS,
    FILE_LOADERS,
    Benchmark,
    BoxQuestion,
    embedded_name,
    read_groundingme,
    read_ref_adv,
    read_refbench_pro,
)
from conditions._coco import (
    CocoAnnotation,
    CocoCategory,
    CocoImage,
    CocoInstances,
    eligible_referents,
    load_instances,
)
from conditions._cohort import (
    Cohort,
    CohortSpec,
    Instance,
    Question,
    SourceReport,
    build_cohort,
)
from conditions._cues import (
    CELLS,
    COLOURS,
    PALETTE,
    cell_of_box,
    dominant_colour,
    wrong_cell,
    wrong_colour,
)
from conditions._data_check import (
    COCO_TRAIN2014,
    DataCheck,
    DataFinding,
    DataState,
    check_data_root,
)
from conditions._errors import ConditionsError, DataFileError, one_line
from conditions._grid import (
    BOX_CONDITIONS,
    CONDITION_NAMES,
    CONDITIONS,
    PAPER_CONFIGURATIONS,
    REASONINGS,
    Condition,
    Configuration,
    Decoding,
    Thinking,
    Transport,
    condition_named,
)
from conditions._images import (
    MAX_SIDE,
    VARIANTS,
    ImageBlob,
    Variant,
    VariantCache,
    capped_size,
    render,
)
from conditions._layout import SOURCE_NAMES, SOURCES, DataRoot, Source, SourceIndex, source_named
from conditions._metadata import GROUPS, Tertiles, Thresholds, semantic_group
from conditions._migrations import (
    Migration,
    SchemaTooNewError,
    applied_version,
    apply_migration,
    ensure_migrations,
    pending_migrations,
)
from conditions._prompts import TEMPLATES as PROMPT_TEMPLATES
from conditions._prompts import box_prompt, hint_sentences, polygon_prompt
from conditions._refs import Ref, Sentence, load_plain_pickle, load_refs
from conditions._requests import (
    BOX,
    NEW_STORE,
    AttemptKey,
    Change,
    ProtocolMismatchError,
    Request,
    RequestBuilder,
    RequestKey,
    canonical_fields,
    changed_fields,
    ensure_same_protocol,
    fields_hash,
    plan,
    protocol_fields,
    protocol_hash,
    protocol_mismatch,
)
from conditions._store import (
    COHORT_MIGRATIONS,
    CohortMismatchError,
    load_cohort,
    require_current_targets,
    stored_cohort_hash,
    write_cohort,
)
from conditions._synthetic import SynthSpec
from conditions._synthetic import generate as generate_synthetic
from conditions._synthetic_boxes import (
    BENCHMARK_DIMENSIONS,
    REJECTION_DIMENSIONS,
    generate_box_benchmark,
)
from conditions._task import BoxTask, Builder, PolygonTask, Questions, Task, task_of
from conditions._task_file import has_table
from conditions._wal import opening_repaired

__all__ = [
    "BENCHMARKS",
    "BENCHMARK_DIMENSIONS",
    "BOX",
    "BOX_ATTEMPTS",
    "BOX_BENCHMARK_PROMPTS",
    "BOX_CONDITIONS",
    "BOX_SET_MIGRATIONS",
    "CELLS",
    "COCO_TRAIN2014",
    "COHORT_MIGRATIONS",
    "COLOURS",
    "CONDITIONS",
    "CONDITION_NAMES",
    "FILE_LOADERS",
    "GROUPS",
    "MAX_SIDE",
    "NEW_STORE",
    "PALETTE",
    "PAPER_CONFIGURATIONS",
    "PROMPT_TEMPLATES",
    "REASONINGS",
    "REJECTION_DIMENSIONS",
    "SOURCES",
    "SOURCE_NAMES",
    "VARIANTS",
    "AttemptKey",
    "Benchmark",
    "BoxQuestion",
    "BoxRequestBuilder",
    "BoxSet",
    "BoxSetMismatchError",
    "BoxTask",
    "Builder",
    "Change",
    "CocoAnnotation",
    "CocoCategory",
    "CocoImage",
    "CocoInstances",
    "Cohort",
    "CohortMismatchError",
    "CohortSpec",
    "Condition",
    "ConditionsError",
    "Configuration",
    "DataCheck",
    "DataFileError",
    "DataFinding",
    "DataRoot",
    "DataState",
    "Decoding",
    "ImageBlob",
    "Instance",
    "Migration",
    "PolygonTask",
    "ProtocolMismatchError",
    "Question",
    "Questions",
    "Reasoning",
    "Ref",
    "Request",
    "RequestBuilder",
    "RequestKey",
    "SchemaTooNewError",
    "Sentence",
    "Source",
    "SourceIndex",
    "SourceReport",
    "SynthSpec",
    "Task",
    "Tertiles",
    "Thinking",
    "Thresholds",
    "Transport",
    "Variant",
    "VariantCache",
    "applied_version",
    "apply_migration",
    "box_benchmark_prompt",
    "box_prompt",
    "box_protocol_fields",
    "box_protocol_hash",
    "box_set",
    "build_cohort",
    "canonical_fields",
    "capped_size",
    "cell_of_box",
    "changed_fields",
    "check_data_root",
    "condition_named",
    "dominant_colour",
    "eligible_referents",
    "embedded_name",
    "ensure_migrations",
    "ensure_same_protocol",
    "fields_hash",
    "generate_box_benchmark",
    "generate_synthetic",
    "has_table",
    "hint_sentences",
    "holds_box_set",
    "load_box_set",
    "load_cohort",
    "load_instances",
    "load_plain_pickle",
    "load_refs",
    "one_line",
    "opening_repaired",
    "pending_migrations",
    "plan",
    "plan_boxes",
    "polygon_prompt",
    "protocol_fields",
    "protocol_hash",
    "protocol_mismatch",
    "read_box_set",
    "read_groundingme",
    "read_ref_adv",
    "read_refbench_pro",
    "reasoning_decoding",
    "reasoning_named",
    "render",
    "require_current_targets",
    "semantic_group",
    "sent_scale",
    "source_named",
    "stored_box_set_hash",
    "stored_cohort_hash",
    "task_of",
    "write_box_set",
    "write_cohort",
    "wrong_cell",
    "wrong_colour",
]
