"""What a data root holds, checked before any run (``groundbench data check ROOT``).

Per source (:data:`SOURCES`), three items: its refs pickle, read by the same code-free
unpickler a cohort build uses, with the count of refs in the evaluation splits PROTOCOL §8
draws from; its ``instances.json``, read and checked as a cohort build reads it; and the
COCO images those evaluation refs name. Images are checked by name only, against one listing
of the folder, never opened: COCO train2014 is 82,783 files and 13 GB, and the check must take
seconds, not the minutes that reading them would. A damaged image is found by the cohort build,
which reads every image it draws.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from conditions._coco import CocoInstances, load_instances
from conditions._errors import DataFileError
from conditions._layout import SOURCE_NAMES, DataRoot, Source, source_named
from conditions._refs import Ref, load_refs

# COCO's own download of the images all three sources name (the README's "Getting the data"
# says where the refer release's zips are found).
COCO_TRAIN2014 = "http://images.cocodataset.org/zips/train2014.zip"
# The names of the files in the images folder, or why it could not be listed.
Listing = frozenset[str] | str


class DataState(StrEnum):
    """What was found of one item."""

    OK = "ok"
    MISSING = "missing"
    MALFORMED = "malformed"
    # Not looked at: what it depends on is missing or malformed (its own row says so).
    UNCHECKED = "unchecked"


@dataclass(frozen=True)
class DataFinding:
    """One item of one source: where it is, what was found, and what to do when it is wrong."""

    source: str
    item: str
    path: Path
    state: DataState
    found: str
    fix: str = ""

    @property
    def problem(self) -> bool:
        """Whether this row is a problem of its own (an unchecked row's cause is elsewhere)."""
        return self.state in (DataState.MISSING, DataState.MALFORMED)


@dataclass(frozen=True)
class DataCheck:
    """Every finding of a data root, three per source, in source order."""

    root: DataRoot
    findings: tuple[DataFinding, ...]
    # Files in the images folder; None where it could not be listed.
    images_in_folder: int | None

    @property
    def problems(self) -> tuple[DataFinding, ...]:
        """The rows that are problems of their own, one per file and fault: a missing images
        folder is one problem, not one per source."""
        seen: dict[tuple[Path, str, str], DataFinding] = {}
        for f in self.findings:
            if f.problem:
                seen.setdefault((f.path, f.found, f.fix), f)
        return tuple(seen.values())

    @property
    def ready(self) -> bool:
        """Whether everything a run on these sources needs is present and readable."""
        return all(f.state is DataState.OK for f in self.findings)


def check_data_root(root: DataRoot, sources: Sequence[str] = SOURCE_NAMES) -> DataCheck:
    """Check each of ``sources`` under ``root``: refs pickle, ``instances.json``, images.

    Nothing is raised for a missing or malformed file: each is a :class:`DataFinding`. Images are
    checked for existence only (see the module's docstring).

    Raises
    ------
    KeyError
        A name in ``sources`` is not a known source.
    """
    listing = _listing(root.images)
    findings: list[DataFinding] = []
    for name in sources:
        findings += _check_source(root, source_named(name), listing)
    count = len(listing) if isinstance(listing, frozenset) else None
    return DataCheck(root, tuple(findings), count)


def _check_source(root: DataRoot, source: Source, listing: Listing) -> list[DataFinding]:
    folder = root.folder(source)
    refs_row, refs = _check_refs(root, source, folder / source.refs_file)
    instances_row, instances = _check_instances(root, source, folder / "instances.json")
    if refs is not None and instances is not None:
        refs_row = _cross_check(refs_row, refs, instances, root, source)
    if isinstance(listing, str):
        images_row = _no_images_folder(root, source, listing)
    elif refs is None or instances is None or refs_row.state is not DataState.OK:
        why = "needs its refs and instances.json"
        images_row = DataFinding(source.name, "images", root.images, DataState.UNCHECKED, why)
    else:
        images_row = _check_images(root, source, refs, instances, listing)
    return [refs_row, instances_row, images_row]


def _redownload(root: DataRoot, source: Source) -> str:
    return (
        f"download {source.name}.zip (the refer release; README, Getting the data) "
        f"and unzip it into {root.root}"
    )


def _check_refs(root: DataRoot, source: Source, path: Path) -> tuple[DataFinding, list[Ref] | None]:
    if not path.is_file():
        return _missing(root, source, source.refs_file, path), None
    try:
        refs = load_refs(path)
    except DataFileError as exc:
        return _malformed(root, source, source.refs_file, path, exc.reason), None
    splits = "/".join(source.splits)
    evaluation = sum(1 for r in refs if r.split in source.splits)
    if not evaluation:
        found = f"{len(refs):,} refs, none in {splits}"
        fix = f"is it the {source.refs_file} of {source.name}.zip? " + _redownload(root, source)
        row = DataFinding(source.name, source.refs_file, path, DataState.MALFORMED, found, fix)
        return row, None
    found = f"{len(refs):,} refs; {evaluation:,} in {splits}"
    return DataFinding(source.name, source.refs_file, path, DataState.OK, found), refs


def _check_instances(
    root: DataRoot, source: Source, path: Path
) -> tuple[DataFinding, CocoInstances | None]:
    if not path.is_file():
        return _missing(root, source, "instances.json", path), None
    try:
        instances = load_instances(path)
    except DataFileError as exc:
        return _malformed(root, source, "instances.json", path, exc.reason), None
    found = f"{len(instances.images):,} images, {len(instances.annotations):,} annotations"
    return DataFinding(source.name, "instances.json", path, DataState.OK, found), instances


def _cross_check(
    row: DataFinding, refs: list[Ref], instances: CocoInstances, root: DataRoot, source: Source
) -> DataFinding:
    """``row``, made malformed where refs name annotations ``instances`` lacks (or in another
    image): the two files are from different releases, and a cohort build would stop at the
    first such ref."""
    image_of = {a.id: a.image_id for a in instances.annotations}
    stray = [r for r in refs if image_of.get(r.ann_id) != r.image_id]
    if not stray:
        return row
    first = stray[0]
    found = (
        f"{len(stray):,} of {len(refs):,} refs name an annotation instances.json lacks "
        f"(first: ref_id {first.ref_id}, annotation {first.ann_id} in image {first.image_id})"
    )
    fix = "the two files are from different releases: " + _redownload(root, source)
    return DataFinding(source.name, row.item, row.path, DataState.MALFORMED, found, fix)


def _no_images_folder(root: DataRoot, source: Source, why: str) -> DataFinding:
    fix = (
        f"download COCO train2014 ({COCO_TRAIN2014}, ~13 GB) and unzip it into "
        f"{root.images.parent}, or pass --images with the folder that holds its files"
    )
    return DataFinding(source.name, "images", root.images, DataState.MISSING, why, fix)


def _check_images(
    root: DataRoot,
    source: Source,
    refs: Iterable[Ref],
    instances: CocoInstances,
    listing: frozenset[str],
) -> DataFinding:
    """Whether every image the evaluation refs name is in the folder (by name, unopened)."""
    file_names = {i.id: i.file_name for i in instances.images}
    named = sorted({file_names[r.image_id] for r in refs if r.split in source.splits})
    absent = [name for name in named if not _present(root.images, name, listing)]
    if not absent:
        found = f"{len(named):,} of {len(named):,} present"
        return DataFinding(source.name, "images", root.images, DataState.OK, found)
    found = f"{len(absent):,} of {len(named):,} missing (first: {absent[0]})"
    fix = (
        f"the folder lacks images {source.name} names: unzip COCO's train2014.zip "
        f"({COCO_TRAIN2014}) into {root.images.parent} again, or pass --images with a full copy"
    )
    return DataFinding(source.name, "images", root.images, DataState.MISSING, found, fix)


def _listing(images: Path) -> Listing:
    """The names of the files in the images folder (one directory read, no file opened; the
    entry's type comes with it), or why not."""
    try:
        with os.scandir(images) as entries:
            return frozenset(e.name for e in entries if not e.is_dir())
    except FileNotFoundError:
        return "no such folder"
    except NotADirectoryError:
        return "not a folder"
    except OSError as exc:
        return f"cannot read: {exc.strerror}"


def _present(images: Path, file_name: str, listing: frozenset[str]) -> bool:
    # COCO's file names are bare; one with a folder in it is looked up on its own.
    if "/" in file_name or os.sep in file_name:
        return (images / file_name).is_file()
    return file_name in listing


def _missing(root: DataRoot, source: Source, item: str, path: Path) -> DataFinding:
    # A missing folder is one problem, not one per file it should hold (see
    # DataCheck.problems): the row names the folder.
    if not path.parent.is_dir():
        path, found = path.parent, "no such folder"
    else:
        found = "no such file"
    return DataFinding(source.name, item, path, DataState.MISSING, found, _redownload(root, source))


def _malformed(root: DataRoot, source: Source, item: str, path: Path, reason: str) -> DataFinding:
    fix = "the file is damaged or not the refer release's: " + _redownload(root, source)
    return DataFinding(source.name, item, path, DataState.MALFORMED, reason, fix)
