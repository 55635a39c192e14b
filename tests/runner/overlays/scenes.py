"""Hand-built questions and answers for the overlay tests, in the frame's pixels."""

from __future__ import annotations

import io

from PIL import Image

from conditions import BOX, ImageBlob
from runner.overlays._scene import AnswerView, Picture, QuestionView, Ring
from scoring import BoxScore, PolygonScore
from scoring._drawn import DrawnAnswer, DrawnBox, Point

W, H = 200, 100  # the frame: twice as wide as tall, so that x and y scales differ
GREY = (128, 128, 128)  # the solid image behind every answer


def solid_blob(
    colour: tuple[int, int, int] = GREY, size: tuple[int, int] = (W, H), mode: str = "RGB"
) -> ImageBlob:
    """A one-colour PNG as an ImageBlob (``mode="L"``: greyscale, as the grey variant)."""
    out = io.BytesIO()
    Image.new(mode, size, colour if mode == "RGB" else colour[0]).save(out, "PNG")
    return ImageBlob(out.getvalue(), "image/png", *size)


def pixels(units: list[tuple[int, int]]) -> tuple[Point, ...]:
    """0–999 units placed in the frame as PROTOCOL §1 places them: ``x·W/999, y·H/999``."""
    return tuple((x * W / 999, y * H / 999) for x, y in units)


def question(*, targets: dict[int, Ring] | None = None, part: Ring = ()) -> QuestionView:
    """A question with nothing drawn beside the answer unless asked."""
    return QuestionView(
        qid="q1", source="coco", expression="the grey thing", category="thing", width=W,
        height=H, image_file="images/q1.png", image_sha256="0" * 64, targets=targets or {},
        part=part, other_parts=(), distractors=(), box=(10.0, 10.0, 40.0, 30.0),
    )  # fmt: skip


def drawn(
    vertices: tuple[Point | None, ...],
    fill: tuple[tuple[Point, ...], ...],
    *,
    shape: str = "polygon",
    duplicates: tuple[int, ...] = (),
    crossings: tuple[Point, ...] = (),
    notes: tuple[str, ...] = (),
) -> DrawnAnswer:
    """A DrawnAnswer whose outline is its finite vertices."""
    outline = tuple(v for v in vertices if v is not None)
    return DrawnAnswer(
        asked=len(vertices), listed=2 * len(vertices), shape=shape,  # type: ignore[arg-type]
        vertices=vertices, outline=outline, fill=fill, duplicates=duplicates,
        crossings=crossings, notes=notes,
    )  # fmt: skip


SCORE = PolygonScore(
    parseable=True, iou=0.4567, iou_part=0.5, iou_union=0.25, iou_cont=0.4512,
    iou_distractor=0.0321, legal=False, legal_iou=0.0, sel=True, defect="self-intersecting",
)  # fmt: skip


def answer(
    polygon: DrawnAnswer | None,
    *,
    picture: Picture | None = None,
    score: PolygonScore | None = SCORE,
    budget: int = 8,
    **fields: object,
) -> AnswerView:
    """An answer of configuration ``cfg``, condition ``base``, attempt 0."""
    values: dict[str, object] = {
        "configuration": "cfg", "condition": "base", "budget": budget, "qid": "q1",
        "attempt": 0, "outcome": "answer", "text": "[1, 2, 3]", "error": None,
        "finish_reason": "stop", "hint": None,
        "picture": picture or Picture("full", solid_blob()), "polygon": polygon,
        "score": score,
    }  # fmt: skip
    return AnswerView(**(values | fields))  # type: ignore[arg-type]


def box_answer(controls: dict[int, DrawnAnswer]) -> AnswerView:
    """A box answer spanning the frame's middle, with the given controls."""
    box = DrawnBox(((50.0, 20.0), (150.0, 80.0)), (50.0, 20.0, 150.0, 80.0), controls, ())
    scored = BoxScore(True, 0.61, {n: SCORE for n in controls})
    return answer(None, budget=BOX, score=None, box=box, box_score=scored)
