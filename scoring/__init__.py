"""How answers are judged: the GroundBench scoring protocol (PROTOCOL.md §1–7).

Plain Python over numpy, pycocotools, shapely and pyclipper; it never imports ``runner`` or Ray.

- targets: :func:`canonical_target` builds ``G_N`` from a polygon part;
- parsing: :func:`parse_answer` and :func:`parse_box` read the last list of an answer;
- one response: :func:`score_polygon` and :func:`score_box` against a :class:`Referent`;
  :func:`score_references` re-scores a stored answer against every one of :data:`REFERENCES`;
- views: :func:`locked_attempt` picks the score ``IoU0``/``IoU1``/``IoU2``/best-effort locks;
- cells: :func:`summarise_cell`, :func:`paired_contrast`, :func:`construction_fidelity`;
- box benchmarks (§10): :func:`judge_box` under a :class:`BoxReader` and a coordinate
  convention, :func:`accuracy_at`, :func:`mean_accuracy`, :func:`rejection_accuracy`, and each
  paper's main-table row (:func:`ref_adv_row`, :func:`groundingme_row`, :func:`refbench_pro_row`).
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
    unpaired_contrast,
)
from scoring._box_finders import Box, ReaderName, find_box
from scoring._box_tables import (
    DISTRACTOR_GROUPS,
    GROUNDINGME_DIMENSIONS,
    REFBENCH_PERCEPTION,
    REFBENCH_REASONING,
    REFBENCH_REJECT,
    JudgedQuestion,
    groundingme_row,
    groundingme_subdimensions,
    ref_adv_row,
    refbench_pro_row,
)
from scoring._boxes import (
    BOX_READERS,
    BoxJudgement,
    BoxReader,
    Convention,
    RejectionRule,
    accuracy_at,
    corner_iou,
    judge_box,
    mean_accuracy,
    rejection_accuracy,
    says_absent,
    to_pixels,
)
from scoring._drawn import MAX_DRAWN, DrawnAnswer, DrawnBox, draw_box, draw_polygon
from scoring._errors import (
    AnnotationError,
    CrowdAnnotationError,
    DegeneratePartError,
    RingError,
    ScoringError,
)
from scoring._parse import ParsedList, parse_answer, parse_box, parse_list
from scoring._ranks import Peak, inversions, ordering, peak
from scoring._raster import Rle, mask_area, mask_iou, mask_ious, rasterize
from scoring._referent import Distractor, Reference, Referent
from scoring._rescore import (
    ALTERNATE_REFERENCES,
    PHASE_REFERENCES,
    REFERENCES,
    score_references,
)
from scoring._score import (
    SCALE,
    UNPARSEABLE,
    BoxScore,
    Defect,
    PlacedAnswer,
    PolygonScore,
    box_iou,
    box_polygon,
    legality_defect,
    place_answer,
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
    "ALTERNATE_REFERENCES",
    "BOX_READERS",
    "BUDGETS",
    "DISTRACTOR_GROUPS",
    "GROUNDINGME_DIMENSIONS",
    "HEADLINE_VIEW",
    "MAX_DRAWN",
    "PHASES",
    "PHASE_REFERENCES",
    "REFBENCH_PERCEPTION",
    "REFBENCH_REASONING",
    "REFBENCH_REJECT",
    "REFERENCES",
    "SCALE",
    "THRESHOLDS",
    "UNPARSEABLE",
    "VIEW_ATTEMPTS",
    "AnnotationError",
    "Box",
    "BoxCellSummary",
    "BoxJudgement",
    "BoxReader",
    "BoxScore",
    "CellSummary",
    "Contrast",
    "Convention",
    "CrowdAnnotationError",
    "Defect",
    "DegeneratePartError",
    "Distractor",
    "DrawnAnswer",
    "DrawnBox",
    "JudgedQuestion",
    "Metric",
    "Pair",
    "ParsedList",
    "Peak",
    "PlacedAnswer",
    "Point",
    "PolygonScore",
    "ReaderName",
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
    "draw_box",
    "draw_polygon",
    "find_box",
    "groundingme_row",
    "groundingme_subdimensions",
    "group_by",
    "inversions",
    "judge_box",
    "legality_defect",
    "locked_attempt",
    "mask_area",
    "mask_iou",
    "mask_ious",
    "mean_accuracy",
    "ordering",
    "paired_contrast",
    "parse_answer",
    "parse_box",
    "parse_list",
    "peak",
    "per_question",
    "place_answer",
    "rasterize",
    "ref_adv_row",
    "refbench_pro_row",
    "rejection_accuracy",
    "ring_from_flat",
    "says_absent",
    "score_box",
    "score_parsed",
    "score_polygon",
    "score_references",
    "select_part",
    "shoelace_area",
    "summarise_box_cell",
    "summarise_cell",
    "to_pixels",
    "unpaired_contrast",
]
