"""The cohort (PROTOCOL §8): which questions are asked, with their frozen metadata, targets,
instances and hint terms, and one content hash over all of it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import UnidentifiedImageError
from pycocotools import mask as coco_mask
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, field_validator

from conditions._cues import Cell, Colour, cell_of_box, dominant_colour, wrong_cell, wrong_colour
from conditions._errors import DataFileError
from conditions._images import open_image
from conditions._layout import SOURCE_NAMES, DataRoot, SourceIndex, source_named
from conditions._metadata import (
    Difficulty,
    Group,
    Raw,
    Tertiles,
    Thresholds,
    d_bin,
    difficulty,
    raw_metadata,
    semantic_group,
)
from conditions._refs import Ref, Sentence
from scoring import BUDGETS, PHASES, Distractor, Referent, canonical_targets, mask_iou, rasterize

COHORT_VERSION = 1
Flat = tuple[float, ...]
TargetKey = tuple[str, int, int]  # (qid, budget, phase)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CohortSpec(_Frozen):
    """What a cohort is drawn with: the seed and the sizes."""

    seed: int = 0
    per_source: PositiveInt = 500
    matched: PositiveInt = 500
    sources: tuple[str, ...] = SOURCE_NAMES

    @field_validator("sources")
    @classmethod
    def _known_sources(cls, sources: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in sources if s not in SOURCE_NAMES]
        if unknown or not sources or len(set(sources)) != len(sources):
            raise ValueError(f"sources must be distinct names from {', '.join(SOURCE_NAMES)}")
        return sources


class SourceReport(_Frozen):
    """How one source's draw went; ``selected < asked`` is a shortfall, built as far as it went."""

    source: str
    asked: int
    selected: int
    eligible: int  # eligible evaluation refs before the one-per-image rule
    image_taken: int  # eligible refs skipped because their image was already in the cohort
    ineligible: dict[str, int] = Field(default_factory=dict)

    @property
    def short(self) -> bool:
        return self.selected < self.asked


class Question(_Frozen):
    """One question of the cohort with its frozen metadata (PROTOCOL §8) and hint terms (§9)."""

    qid: str
    source: str
    split: str
    ref_id: int
    ann_id: int
    sent_id: int
    expression: str
    image_id: int
    image_file: str
    image_sha256: str
    width: PositiveInt
    height: PositiveInt
    category_id: int
    category: str
    group: Group
    box: tuple[float, float, float, float]
    phrase_length: NonNegativeInt
    d: PositiveInt
    q: float
    rs: float
    d_bin: str
    q_bin: Literal["Q1", "Q2", "Q3"]
    rs_bin: Literal["RS1", "RS2", "RS3"]
    difficulty: Difficulty
    matched: bool
    cell: Cell
    wrong_cell: Cell
    colour: Colour
    wrong_colour: Colour


class Instance(_Frozen):
    """The polygons of a question's referent (all parts) or of one of its distractors."""

    qid: str
    ann_id: int
    role: Literal["target", "distractor"]
    parts: tuple[Flat, ...]


@dataclass(frozen=True)
class Cohort:
    """A built cohort: everything the runner asks and the scorer needs, and its content hash."""

    spec: CohortSpec
    thresholds: Thresholds
    questions: tuple[Question, ...]
    instances: tuple[Instance, ...]
    targets: Mapping[TargetKey, Flat]
    fidelity: Mapping[int, float]
    reports: tuple[SourceReport, ...] = ()
    _by_qid: dict[str, Question] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_qid.update((q.qid, q) for q in self.questions)

    @cached_property
    def hash(self) -> str:
        """sha256 over the spec, thresholds, questions, instances and targets, in that order.

        Canonical JSON (sorted keys, shortest float repr) fed line by line: the same inputs and
        seed give the same hash on any machine. Fidelity and reports are derived summaries and
        stay out of it.
        """
        return canonical_hash(self._canonical_lines())

    def _canonical_lines(self) -> Iterator[str]:
        yield canonical({"cohort_version": COHORT_VERSION})
        yield canonical(self.spec.model_dump(mode="json"))
        yield canonical(self.thresholds.model_dump(mode="json"))
        for q in self.questions:
            yield canonical(q.model_dump(mode="json"))
        for i in self.instances:
            yield canonical(i.model_dump(mode="json"))
        for key in sorted(self.targets):
            yield canonical([*key, self.targets[key]])

    def question(self, qid: str) -> Question:
        return self._by_qid[qid]

    def for_asking(self) -> Cohort:
        """The cohort without what only scoring reads (instances, targets): what a backend
        holds, a fraction of the memory. Its :attr:`hash` stays the whole cohort's, which
        the requests it builds are bound to."""
        slim = dataclasses.replace(self, instances=(), targets={}, _by_qid={})
        slim.__dict__["hash"] = self.hash  # the cached_property's slot
        return slim

    def stale_target(self) -> TargetKey | None:
        """The first stored target that this groundbench's rules (PROTOCOL §2) no longer
        build from the question's part, or None when every one still matches.

        A cohort stores its targets and its hash covers them, so a cohort built under an
        earlier rule (before §2.3 pinned the sampling origin, say) still loads; but the
        scorers rebuild ``G_N`` from the parts, and a run or a re-scoring over such a store
        would mix two references. About a second for 1,500 questions × 5 budgets × 8 phases.
        """
        for q in self.questions:
            part = self.referent(q.qid).part
            for phase in range(PHASES):
                for n, ring in canonical_targets(part, BUDGETS, phase).items():
                    if self.targets.get((q.qid, n, phase)) != tuple(c for xy in ring for c in xy):
                        return (q.qid, n, phase)
        return None

    def target(self, qid: str, n: int, phase: int = 0) -> list[tuple[float, float]]:
        """``G_N`` of question ``qid`` at ``phase``, as ``(x, y)`` pixels."""
        flat = self.targets[(qid, n, phase)]
        return list(zip(flat[0::2], flat[1::2], strict=True))

    @cached_property
    def _instances_by_qid(self) -> dict[str, list[Instance]]:
        out: dict[str, list[Instance]] = {}
        for i in self.instances:
            out.setdefault(i.qid, []).append(i)
        return out

    def instances_of(self, qid: str) -> list[Instance]:
        """The referent (role ``target``) and distractors of question ``qid``."""
        return self._instances_by_qid[qid]

    def referent(self, qid: str) -> Referent:
        """The scoring :class:`Referent` of question ``qid`` (its parts and distractors)."""
        q = self._by_qid[qid]
        insts = self._instances_by_qid[qid]
        target = next(i for i in insts if i.role == "target")
        return Referent(
            ann_id=q.ann_id,
            width=q.width,
            height=q.height,
            parts=target.parts,
            bbox=q.box,
            distractors=tuple(
                Distractor(i.ann_id, i.parts) for i in insts if i.role == "distractor"
            ),
        )


def canonical(value: object) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, shortest float repr, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_hash(lines: Iterable[str]) -> str:
    """sha256 of ``lines`` fed one by one, each ended by a newline."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


def _order_key(*parts: object) -> bytes:
    # (decided, groundbench) Seeded order = sha256 of the seed and the record's identity:
    # stable on any machine and any Python or numpy version, unlike a PRNG stream.
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()


@dataclass(frozen=True)
class _Pick:
    index: SourceIndex
    ref: Ref
    sentence: Sentence
    referent: Referent

    @property
    def qid(self) -> str:
        return f"{self.index.source.name}:{self.ref.ref_id}"


def build_cohort(root: DataRoot, spec: CohortSpec | None = None) -> Cohort:
    """Draw and freeze a cohort from the RefCOCO-family data under ``root`` (PROTOCOL §8).

    Sources are drawn in order; within a source, eligible evaluation refs are taken in seeded
    order, skipping any whose image an earlier question already uses. A source with too few
    is built as far as it goes; its :class:`SourceReport` says so.

    Raises
    ------
    DataFileError
        A data file or image is missing or malformed; names the file and the id.
    """
    spec = spec or CohortSpec()
    used_images: set[int] = set()
    picks: list[_Pick] = []
    reports: list[SourceReport] = []
    for name in spec.sources:
        index = SourceIndex.load(root, source_named(name))
        chosen, report = _draw(index, spec, used_images)
        picks += chosen
        reports.append(report)
    if not picks:
        found = "; ".join(f"{r.source}: {r.eligible} eligible" for r in reports)
        raise DataFileError(root.root, f"no eligible question in any source ({found})")
    return _freeze(root, spec, picks, tuple(reports))


def _draw(
    index: SourceIndex, spec: CohortSpec, used_images: set[int]
) -> tuple[list[_Pick], SourceReport]:
    name = index.source.name
    ineligible: Counter[str] = Counter()
    candidates: list[tuple[bytes, Ref, Referent]] = []
    for ref in index.evaluation_refs():
        referent = index.referent(ref.ann_id)
        if isinstance(referent, str):
            ineligible[referent] += 1
        elif not any(s.sent.strip() for s in ref.sentences):
            ineligible["no sentence"] += 1
        else:
            candidates.append((_order_key(spec.seed, name, ref.ref_id), ref, referent))
    candidates.sort(key=lambda c: c[0])
    chosen: list[_Pick] = []
    taken = 0
    for _, ref, referent in candidates:
        if len(chosen) == spec.per_source:
            break
        if ref.image_id in used_images:
            taken += 1
            continue
        used_images.add(ref.image_id)
        sentence = min(
            (s for s in ref.sentences if s.sent.strip()),
            key=lambda s: _order_key(spec.seed, name, ref.ref_id, s.sent_id),
        )
        chosen.append(_Pick(index, ref, sentence, referent))
    report = SourceReport(
        source=name,
        asked=spec.per_source,
        selected=len(chosen),
        eligible=len(candidates),
        image_taken=taken,
        ineligible=dict(sorted(ineligible.items())),
    )
    return chosen, report


def _freeze(
    root: DataRoot, spec: CohortSpec, picks: Sequence[_Pick], reports: tuple[SourceReport, ...]
) -> Cohort:
    raws = [raw_metadata(p.referent) for p in picks]
    thresholds = Thresholds(
        q=Tertiles.of([r.q for r in raws]), rs=Tertiles.of([r.rs for r in raws])
    )
    matched = _matched_subset(spec, picks)
    questions = tuple(
        _question(root, p, raw, thresholds, p.qid in matched)
        for p, raw in zip(picks, raws, strict=True)
    )
    targets: dict[TargetKey, Flat] = {}
    for p in picks:
        for phase in range(PHASES):
            for n, ring in canonical_targets(p.referent.part, BUDGETS, phase).items():
                targets[(p.qid, n, phase)] = tuple(c for xy in ring for c in xy)
    instances = tuple(i for p in picks for i in _instances(p))
    return Cohort(
        spec=spec,
        thresholds=thresholds,
        questions=questions,
        instances=instances,
        targets=targets,
        fidelity=_fidelity(picks, targets),
        reports=reports,
    )


def _matched_subset(spec: CohortSpec, picks: Sequence[_Pick]) -> set[str]:
    """The image-intervention subset: ``spec.matched`` questions, seeded, stratified by source.

    (decided, groundbench) Each source gets its share by largest remainder, and within a source
    the questions come in seeded order.
    """
    total = len(picks)
    size = min(spec.matched, total)
    by_source: dict[str, list[str]] = {}
    for p in picks:
        by_source.setdefault(p.index.source.name, []).append(p.qid)
    exact = {s: size * len(q) / total for s, q in by_source.items()} if total else {}
    quota = {s: int(v) for s, v in exact.items()}
    leftover = size - sum(quota.values())
    for s in sorted(exact, key=lambda s: (quota[s] - exact[s], spec.sources.index(s)))[:leftover]:
        quota[s] += 1
    chosen: set[str] = set()
    for s, qids in by_source.items():
        chosen.update(sorted(qids, key=lambda q: _order_key(spec.seed, "matched", q))[: quota[s]])
    return chosen


def _question(
    root: DataRoot, p: _Pick, raw: Raw, thresholds: Thresholds, matched: bool
) -> Question:
    index, ref, referent = p.index, p.ref, p.referent
    image = index.images[ref.image_id]
    category = index.categories[index.annotations[ref.ann_id].category_id]
    group = semantic_group(category.supercategory)
    if group is None:
        raise DataFileError(
            index.instances_path,
            f"category {category.id} ({category.name}) has supercategory "
            f"{category.supercategory!r}, outside the twelve COCO supercategories",
        )
    path = root.image_path(image)
    data, pixels = _read_image(path, image.id, image.width, image.height)
    q_bin, rs_bin = thresholds.q.bin(raw.q), thresholds.rs.bin(raw.rs)
    cell = cell_of_box(referent.bbox, referent.width, referent.height)
    colour = dominant_colour(_target_pixels(pixels, referent))
    return Question(
        qid=p.qid,
        source=index.source.name,
        split=ref.split,
        ref_id=ref.ref_id,
        ann_id=ref.ann_id,
        sent_id=p.sentence.sent_id,
        expression=p.sentence.sent,
        image_id=image.id,
        image_file=image.file_name,
        image_sha256=hashlib.sha256(data).hexdigest(),
        width=image.width,
        height=image.height,
        category_id=category.id,
        category=category.name,
        group=group,
        box=referent.bbox,
        phrase_length=len(p.sentence.sent.split()),
        d=raw.d,
        q=raw.q,
        rs=raw.rs,
        d_bin=d_bin(raw.d),
        q_bin=f"Q{q_bin}",  # type: ignore[arg-type]
        rs_bin=f"RS{rs_bin}",  # type: ignore[arg-type]
        difficulty=difficulty(raw.d, q_bin, rs_bin),
        matched=matched,
        cell=cell,
        wrong_cell=wrong_cell(cell),
        colour=colour,
        wrong_colour=wrong_colour(colour),
    )


def _read_image(path: Path, image_id: int, width: int, height: int) -> tuple[bytes, np.ndarray]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFileError(path, f"image {image_id}: cannot read: {exc.strerror}") from None
    try:
        with open_image(data, path) as image:
            if image.size != (width, height):
                raise DataFileError(
                    path,
                    f"image {image_id} is {image.size[0]}x{image.size[1]} but its "
                    f"annotations are for {width}x{height}",
                )
            pixels = np.asarray(image.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise DataFileError(path, f"image {image_id}: not a readable image: {exc}") from None
    return data, pixels


def _target_pixels(pixels: np.ndarray, referent: Referent) -> np.ndarray:
    """The RGB pixels under the referent's mask (all parts); its box if the mask is empty."""
    mask = coco_mask.decode(referent.union_mask).astype(bool)
    if mask.any():
        inside: np.ndarray = pixels[mask]
        return inside
    x, y, w, h = referent.bbox
    x0, y0 = int(x), int(y)
    return pixels[y0 : max(y0 + 1, int(y + h)), x0 : max(x0 + 1, int(x + w))].reshape(-1, 3)


def _instances(p: _Pick) -> Iterator[Instance]:
    yield Instance(qid=p.qid, ann_id=p.referent.ann_id, role="target", parts=p.referent.parts)
    for d in p.referent.distractors:
        yield Instance(qid=p.qid, ann_id=d.ann_id, role="distractor", parts=d.parts)


def _fidelity(picks: Sequence[_Pick], targets: Mapping[TargetKey, Flat]) -> dict[int, float]:
    """``C_N`` at phase 0 over the cohort, in points (PROTOCOL §2)."""
    out: dict[int, float] = {}
    for n in BUDGETS:
        ious = [
            mask_iou(
                rasterize([targets[(p.qid, n, 0)]], p.referent.height, p.referent.width),
                p.referent.part_mask,
            )
            for p in picks
        ]
        out[n] = 100.0 * float(np.mean(ious))
    return out
