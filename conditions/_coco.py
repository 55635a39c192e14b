"""COCO ``instances.json`` files, and the referents in them that PROTOCOL §8 admits."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from conditions._errors import DataFileError
from scoring import AnnotationError, DegeneratePartError, Referent


class _CocoRecord(BaseModel):
    # COCO files carry fields this project does not use (license, coco_url, …): ignore them.
    model_config = ConfigDict(extra="ignore", frozen=True)


# A pixel coordinate: finite, and within a million pixels of the image (no photograph is wider);
# 1e308 or NaN is a damaged file, refused here rather than met deep in a hash or a cue.
Coordinate = Annotated[float, Field(ge=-1e6, le=1e6, allow_inf_nan=False)]


class CocoImage(_CocoRecord):
    id: int
    width: PositiveInt
    height: PositiveInt
    file_name: str = ""


class CocoAnnotation(_CocoRecord):
    id: int
    image_id: int
    category_id: int
    segmentation: list[list[Coordinate]] | dict[str, Any]
    iscrowd: int = 0
    bbox: tuple[Coordinate, Coordinate, Coordinate, Coordinate]
    area: float = 0.0


class CocoCategory(_CocoRecord):
    id: int
    name: str
    supercategory: str = ""


class CocoInstances(_CocoRecord):
    images: list[CocoImage]
    annotations: list[CocoAnnotation]
    categories: list[CocoCategory] = []


def load_instances(path: Path | str) -> CocoInstances:
    """Read and check a COCO ``instances.json``.

    Raises
    ------
    DataFileError
        The file is missing, not JSON, not in COCO form, or an annotation names an image the
        file does not have; the message names the file and the first offending place.
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_bytes())
    except OSError as exc:
        raise DataFileError(path, f"cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataFileError(path, f"not JSON: {exc}") from None
    except RecursionError:  # json reads nesting by recursion: [[[…]]] 100,000 deep
        raise DataFileError(path, "not JSON: arrays or objects nested too deep to read") from None
    try:
        instances = CocoInstances.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DataFileError(path, f"{where}: {first['msg']}") from None
    images = {i.id for i in instances.images}
    for a in instances.annotations:
        if a.image_id not in images:
            raise DataFileError(path, f"annotation {a.id} points to unknown image {a.image_id}")
    return instances


def same_category_groups(instances: CocoInstances) -> dict[tuple[int, int], list[CocoAnnotation]]:
    """The non-crowd annotations of each (image, category) pair."""
    groups: dict[tuple[int, int], list[CocoAnnotation]] = defaultdict(list)
    for a in instances.annotations:
        if not a.iscrowd:
            groups[(a.image_id, a.category_id)].append(a)
    return groups


def referent_or_reason(
    a: CocoAnnotation, image: CocoImage, group: list[CocoAnnotation], source: Path | str
) -> Referent | str:
    """The :class:`Referent` of ``a`` if PROTOCOL §8 admits it, else why not.

    Eligible: non-crowd, polygon segmentation, a selected part with at least 3 distinct
    vertices and positive area, and at least one other non-crowd instance of its category in
    the image (``group``, which holds ``a`` itself). The distractors are those others.

    Raises
    ------
    DataFileError
        ``a`` or a same-category instance is not crowd but has an RLE segmentation, or is
        otherwise malformed (names ``source`` and the id).
    """
    if a.iscrowd:
        return "crowd"
    if len(group) < 2:
        return "no same-category distractor (D0)"
    try:
        return Referent.from_coco(
            a.model_dump(), image.model_dump(), [d.model_dump() for d in group if d.id != a.id]
        )
    except DegeneratePartError:
        return "degenerate selected part"
    except AnnotationError as exc:
        raise DataFileError(source or "instances", str(exc)) from None


def eligible_referents(instances: CocoInstances, source: Path | str = "") -> list[Referent]:
    """The referents PROTOCOL §8 admits (see :func:`referent_or_reason`), in annotation order.

    Raises
    ------
    DataFileError
        A non-crowd annotation's segmentation is malformed (names ``source`` and the id).
    """
    images = {i.id: i for i in instances.images}
    groups = same_category_groups(instances)
    out: list[Referent] = []
    for a in instances.annotations:
        group = groups.get((a.image_id, a.category_id), [])
        referent = referent_or_reason(a, images[a.image_id], group, source)
        if not isinstance(referent, str):
            out.append(referent)
    return out
