"""How answers are judged: the GroundBench scoring protocol (PROTOCOL.md §1–7).

Plain Python over numpy, pycocotools, shapely and pyclipper; it never imports ``runner`` or Ray.

- targets: :func:`canonical_target` builds ``G_N`` from a polygon part;
- parsing: :func:`parse_answer` and :func:`parse_box` read the last list of an answer;
- one response: :func:`score_polygon` and :func:`score_box` against a :class:`Referent`;
- views: :func:`locked_attempt` picks the score ``IoU0``/``IoU1``/``IoU2``/best-effort locks;
- cells: :func:`summarise_cell`, :func:`paired_contrast`, :func:`construction_fidelity`;
- box benchmarks (§10): :func:`judge_box` under a :class:`BoxProtocol` and a coordinate
  convention, :func:`accuracy_at`, :func:`mean_accuracy`, :func:`rejection_accuracy`.
"""

from scoring._aggregate import (
    THRESHOLDS,
    BoxCellSummary,
    CellSummary,
    Contrast,
    Metric,
    Pair,
    construction_fidelity,
    control_scores,
    group_by,
    paired_contrast,
    per_question,
    summarise_box_cell,
    summarise_cell,
)
from scoring._boxes import (
    BOX_PROTOCOLS,
    Box,
    BoxJudgement,
    BoxParsing,
    BoxProtocol,
    Convention,
    RejectionRule,
    accuracy_at,
    corner_iou,
    find_box,
    judge_box,
    mean_accuracy,
    rejection_accuracy,
    says_absent,
    to_pixels,
)
from scoring._errors import (
    AnnotationError,
    CrowdAnnotationError,
    DegeneratePartError,
    RingError,
    ScoringError,
)
from scoring._parse import ParsedList, parse_answer, parse_box, parse_list
from scoring._raster import Rle, mask_area, mask_iou, mask_ious, rasterize
from scoring._referent import Distractor, Reference, Referent
from scoring._score import (
    SCALE,
    UNPARSEABLE,
    BoxScore,
    Defect,
    PolygonScore,
    box_iou,
    box_polygon,
    legality_defect,
    score_box,
    score_parsed,
    score_polygon,
)
from scoring._targets import (
    BUDGETS,
    PHASES,
    Point,
    canonical_target,
    canonical_targets,
    ring_from_flat,
    select_part,
    shoelace_area,
)
from scoring._views import HEADLINE_VIEW, VIEW_ATTEMPTS, View, locked_attempt

__all__ = [
    "BOX_PROTOCOLS",
    "BUDGETS",
    "HEADLINE_VIEW",
    "PHASES",
    "SCALE",
    "THRESHOLDS",
    "UNPARSEABLE",
    "VIEW_ATTEMPTS",
    "AnnotationError",
    "Box",
    "BoxCellSummary",
    "BoxJudgement",
    "BoxParsing",
    "BoxProtocol",
    "BoxScore",
    "CellSummary",
    "Contrast",
    "Convention",
    "CrowdAnnotationError",
    "Defect",
    "DegeneratePartError",
    "Distractor",
    "Metric",
    "Pair",
    "ParsedList",
    "Point",
    "PolygonScore",
    "Reference",
    "Referent",
    "RejectionRule",
    "RingError",
    "Rle",
    "ScoringError",
    "View",
    "accuracy_at",
    "box_iou",
    "box_polygon",
    "canonical_target",
    "canonical_targets",
    "construction_fidelity",
    "control_scores",
    "corner_iou",
    "find_box",
    "group_by",
    "judge_box",
    "legality_defect",
    "locked_attempt",
    "mask_area",
    "mask_iou",
    "mask_ious",
    "mean_accuracy",
    "paired_contrast",
    "parse_answer",
    "parse_box",
    "parse_list",
    "per_question",
    "rasterize",
    "rejection_accuracy",
    "ring_from_flat",
    "says_absent",
    "score_box",
    "score_parsed",
    "score_polygon",
    "select_part",
    "shoelace_area",
    "summarise_box_cell",
    "summarise_cell",
    "to_pixels",
]
