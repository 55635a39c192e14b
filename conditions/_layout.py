"""The on-disk layout of RefCOCO-family data, and the index of one source inside it.

::

    <root>/refcoco/instances.json    <root>/refcoco/refs(unc).p
    <root>/refcoco+/instances.json   <root>/refcoco+/refs(unc).p
    <root>/refcocog/instances.json   <root>/refcocog/refs(umd).p
    <images>/<file_name>             COCO train2014 images (default <root>/images/train2014)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from conditions._coco import (
    CocoAnnotation,
    CocoCategory,
    CocoImage,
    CocoInstances,
    load_instances,
    referent_or_reason,
    same_category_groups,
)
from conditions._errors import DataFileError
from conditions._refs import Ref, load_refs
from scoring import Referent


@dataclass(frozen=True)
class Source:
    """A RefCOCO-family dataset: its folder name, refs split scheme, and evaluation splits."""

    name: str
    split_by: str
    splits: tuple[str, ...]

    @property
    def refs_file(self) -> str:
        return f"refs({self.split_by}).p"


# PROTOCOL §8: drawn in this order, from these evaluation splits.
SOURCES: tuple[Source, ...] = (
    Source("refcoco", "unc", ("val", "testA", "testB")),
    Source("refcoco+", "unc", ("val", "testA", "testB")),
    Source("refcocog", "umd", ("val", "test")),
)
SOURCE_NAMES: tuple[str, ...] = tuple(s.name for s in SOURCES)


def source_named(name: str) -> Source:
    """The :class:`Source` called ``name`` (``refcoco``, ``refcoco+`` or ``refcocog``)."""
    for source in SOURCES:
        if source.name == name:
            return source
    raise KeyError(f"unknown source {name!r}; known: {', '.join(SOURCE_NAMES)}")


@dataclass(frozen=True)
class DataRoot:
    """Where a RefCOCO-family data root and its images live."""

    root: Path
    images: Path

    @classmethod
    def at(cls, root: Path | str, images: Path | str | None = None) -> DataRoot:
        root = Path(root)
        return cls(root, Path(images) if images is not None else root / "images" / "train2014")

    def folder(self, source: Source) -> Path:
        return self.root / source.name

    def image_path(self, image: CocoImage) -> Path:
        return self.images / image.file_name


Ineligible = str  # why an annotation is not an eligible referent (PROTOCOL §8)


@dataclass
class SourceIndex:
    """One source's annotations and refs, indexed for the cohort builder."""

    source: Source
    instances_path: Path
    refs_path: Path
    instances: CocoInstances
    refs: list[Ref]
    _referents: dict[int, Referent | Ineligible] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, root: DataRoot, source: Source) -> SourceIndex:
        """Read ``instances.json`` and the refs pickle of ``source`` under ``root``.

        Raises
        ------
        DataFileError
            Either file is missing or malformed, or a ref points to an annotation, image or
            category the instances file does not have.
        """
        folder = root.folder(source)
        instances_path, refs_path = folder / "instances.json", folder / source.refs_file
        index = cls(
            source, instances_path, refs_path, load_instances(instances_path), load_refs(refs_path)
        )
        index._check_refs()
        return index

    @cached_property
    def images(self) -> dict[int, CocoImage]:
        return {i.id: i for i in self.instances.images}

    @cached_property
    def annotations(self) -> dict[int, CocoAnnotation]:
        return {a.id: a for a in self.instances.annotations}

    @cached_property
    def categories(self) -> dict[int, CocoCategory]:
        return {c.id: c for c in self.instances.categories}

    @cached_property
    def _same_category(self) -> dict[tuple[int, int], list[CocoAnnotation]]:
        return same_category_groups(self.instances)

    def evaluation_refs(self) -> Iterator[Ref]:
        """The refs of the source's evaluation splits, in file order."""
        splits = set(self.source.splits)
        return (r for r in self.refs if r.split in splits)

    def referent(self, ann_id: int) -> Referent | Ineligible:
        """The :class:`Referent` of annotation ``ann_id``, or why PROTOCOL §8 excludes it.

        Raises
        ------
        DataFileError
            The annotation (or a same-category instance) is not crowd but has an RLE
            segmentation, or is otherwise malformed; names the file and the id.
        """
        if ann_id not in self._referents:
            self._referents[ann_id] = self._build_referent(self.annotations[ann_id])
        return self._referents[ann_id]

    def _build_referent(self, a: CocoAnnotation) -> Referent | Ineligible:
        group = self._same_category.get((a.image_id, a.category_id), [])
        return referent_or_reason(a, self.images[a.image_id], group, self.instances_path)

    def _check_refs(self) -> None:
        for ref in self.refs:
            a = self.annotations.get(ref.ann_id)
            if a is None:
                raise DataFileError(
                    self.refs_path,
                    f"ref_id {ref.ref_id} points to unknown "
                    f"annotation {ref.ann_id} (not in {self.instances_path.name})",
                )
            if a.image_id != ref.image_id:
                raise DataFileError(
                    self.refs_path,
                    f"ref_id {ref.ref_id}: image_id "
                    f"{ref.image_id} but annotation {a.id} is in image {a.image_id}",
                )
            if a.category_id not in self.categories:
                raise DataFileError(
                    self.instances_path, f"annotation {a.id} has unknown category {a.category_id}"
                )
