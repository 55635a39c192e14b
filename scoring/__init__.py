"""How answers are judged: the GroundBench scoring protocol (PROTOCOL.md §1–7).

Plain Python over numpy, pycocotools, shapely and pyclipper; it never imports ``runner`` or Ray.

- targets: :func:`canonical_target` builds ``G_N`` from a polygon part;
- parsing: :func:`parse_answer` and :func:`parse_box` read the last list of an answer;
- one response: :func:`score_polygon` and :func:`score_box` against a :class:`Referent`;
- views: :func:`locked_attempt` picks the score ``IoU0``/``IoU1``/``IoU2``/best-effort locks;
- cells: :func:`summarise_cell`, :func:`paired_contrast`, :func:`construction_fidelity`.
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
    "BUDGETS",
    "HEADLINE_VIEW",
    "PHASES",
    "SCALE",
    "THRESHOLDS",
    "UNPARSEABLE",
    "VIEW_ATTEMPTS",
    "AnnotationError",
    "BoxCellSummary",
    "BoxScore",
    "CellSummary",
    "Contrast",
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
    "RingError",
    "Rle",
    "ScoringError",
    "View",
    "box_iou",
    "box_polygon",
    "canonical_target",
    "canonical_targets",
    "construction_fidelity",
    "control_scores",
    "group_by",
    "legality_defect",
    "locked_attempt",
    "mask_area",
    "mask_iou",
    "mask_ious",
    "paired_contrast",
    "parse_answer",
    "parse_box",
    "parse_list",
    "per_question",
    "rasterize",
    "ring_from_flat",
    "score_box",
    "score_parsed",
    "score_polygon",
    "select_part",
    "shoelace_area",
    "summarise_box_cell",
    "summarise_cell",
]
