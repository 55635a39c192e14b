"""Synthetic data: the real layout, deterministic, with scenes that make every condition mean
something."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from shapely.geometry import Polygon

from conditions import (
    COLOURS,
    SOURCES,
    Cohort,
    DataRoot,
    SourceIndex,
    SynthSpec,
    generate_synthetic,
    load_instances,
    load_refs,
)
from tests.conftest import SMALL

_POSITIONS = re.compile(r"\b(left|right|top|bottom|middle|upper|lower)\b")


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_layout_is_the_real_one(small_root: DataRoot) -> None:
    for source in SOURCES:
        folder = small_root.folder(source)
        instances = load_instances(folder / "instances.json")
        refs = load_refs(folder / source.refs_file)
        assert refs and instances.annotations
        for image in instances.images:
            assert image.file_name.startswith("COCO_train2014_")
            assert (small_root.images / image.file_name).is_file()
        SourceIndex.load(small_root, source)  # every ref resolves


def test_generation_is_deterministic(small_root: DataRoot, tmp_path: Path) -> None:
    generate_synthetic(tmp_path, SMALL)
    assert digest(tmp_path) == digest(small_root.root)


def test_a_different_seed_gives_different_scenes(small_root: DataRoot, tmp_path: Path) -> None:
    generate_synthetic(tmp_path, SynthSpec(seed=SMALL.seed + 1, images=SMALL.images))
    assert digest(tmp_path) != digest(small_root.root)


def test_refcoco_and_refcoco_plus_share_images_and_refcocog_overlaps(small_root: DataRoot) -> None:
    ids = {
        s.name: {i.id for i in load_instances(small_root.folder(s) / "instances.json").images}
        for s in SOURCES
    }
    assert ids["refcoco"] == ids["refcoco+"]
    assert ids["refcoco"] & ids["refcocog"]
    assert ids["refcocog"] - ids["refcoco"]


def test_shapes_cover_the_construction_branches(small_root: DataRoot) -> None:
    instances = load_instances(small_root.root / "refcoco" / "instances.json")
    sizes = {i.id: (i.width, i.height) for i in instances.images}
    vertex_counts = [len(p) // 2 for a in instances.annotations for p in a.segmentation]
    multipart = [a for a in instances.annotations if len(a.segmentation) > 1]
    touching = [
        a for a in instances.annotations
        if a.bbox[0] <= 0 or a.bbox[1] <= 0
        or a.bbox[0] + a.bbox[2] >= sizes[a.image_id][0] - 0.01
        or a.bbox[1] + a.bbox[3] >= sizes[a.image_id][1] - 0.01
    ]  # fmt: skip
    assert min(vertex_counts) < 8 and max(vertex_counts) > 64  # up- and down-sampling
    assert multipart and touching


def test_a_multi_part_referent_is_one_shape_an_occluder_splits(small_root: DataRoot) -> None:
    instances = load_instances(small_root.root / "refcoco" / "instances.json")
    split = [a for a in instances.annotations if len(a.segmentation) > 1]
    assert split and len(split) < len(instances.annotations) / 6  # the paper: one in ten
    narrow = 0
    for a in split:
        parts = [Polygon(zip(p[0::2], p[1::2], strict=True)) for p in a.segmentation]
        gap = min(x.distance(y) for i, x in enumerate(parts) for y in parts[i + 1 :])
        assert gap > 0  # apart, as the pixels show them
        narrow += gap < 0.15 * a.bbox[2]  # by a pole, not across the scene
    assert narrow >= 0.75 * len(split)  # the rest: a concave shape the frame cuts


def test_expressions_name_the_colour_the_pixels_show(small_cohort: Cohort) -> None:
    for q in small_cohort.questions:
        named = [c for c in COLOURS if re.search(rf"\b{c}\b", q.expression)]
        if named:
            assert named == [q.colour], q


def test_refcoco_plus_expressions_have_no_location_words(small_cohort: Cohort) -> None:
    plus = [q.expression for q in small_cohort.questions if q.source == "refcoco+"]
    assert plus and not [e for e in plus if _POSITIONS.search(e)]
    others = [q.expression for q in small_cohort.questions if q.source != "refcoco+"]
    assert [e for e in others if _POSITIONS.search(e)]
