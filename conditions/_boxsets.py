"""The box benchmarks' released annotation files, read into one question form (PROTOCOL §10).

Each benchmark ships its questions its own way; each reader here takes the released form and
returns :class:`BoxQuestion` values, boxes as corners ``(x1, y1, x2, y2)`` in the image's
pixels and rejection questions with no box:

- **Ref-Adv** (Hugging Face dataset, parquet or a JSON-lines export): ``image``,
  ``file_name``, ``normal_caption``, ``solution`` (the box), ``width``, ``height``,
  ``image_source``, ``human_authored``, ``use_negation``, ``distractors`` (a count or a list);
- **GroundingME** (Hugging Face dataset): ``id``, ``image``, ``description``, ``bbox``,
  ``subtask_l1`` (``Rejection`` has no target), ``subtask_l2``, ``width``, ``height``;
- **RefBench-PRO** (``annotations_*.jsonl`` beside ``images/``): ``image_path``,
  ``expression``, ``bbox``, ``task_type`` (``reject`` has no target), ``width``, ``height``.

An ``image`` column holds Hugging Face's ``{"bytes", "path"}`` struct (the bytes are written
to the images folder as ``embedded/<sha256>.<ext>``: two rows share a file only when they share
its bytes, and no released name can reach outside the folder) or a path relative to the images
folder. Every row is checked before any image is written, its image opened and its size
compared, as a run would: a bad row is one line naming the file, the row and the field, and
nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from conditions._errors import DataFileError, one_line
from conditions._images import open_image, write_atomically

Benchmark = Literal["ref-adv", "groundingme", "refbench-pro"]
BENCHMARKS: tuple[Benchmark, ...] = ("ref-adv", "groundingme", "refbench-pro")


class BoxQuestion(BaseModel):
    """One question of a box benchmark."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    qid: str
    benchmark: Benchmark
    image_file: str  # relative to the benchmark's images folder
    # No photograph is a million pixels on a side; the store keeps sizes as 32-bit integers.
    width: int = Field(ge=1, le=1_000_000)
    height: int = Field(ge=1, le=1_000_000)
    expression: str = Field(min_length=1)
    box: tuple[float, float, float, float] | None  # None: a rejection question
    dimension: str  # the task the benchmark reports by
    subdimension: str | None = None
    distractors: int | None = Field(default=None, ge=0)
    negation: bool | None = None
    # The image's content hash: set when the questions enter an experiment (a
    # :class:`BoxSet`), so a changed image is caught before it is sent.
    image_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @property
    def rejection(self) -> bool:
        return self.box is None

    @model_validator(mode="after")
    def _box_inside(self) -> BoxQuestion:
        name = PurePosixPath(self.image_file)
        if name.is_absolute() or ".." in name.parts or not self.image_file:
            # An image is written under the images folder by this name: never outside it.
            raise ValueError(f"image name {self.image_file!r} is not a plain relative path")
        if self.box is not None:
            x1, y1, x2, y2 = self.box
            if not (x1 < x2 and y1 < y2):
                raise ValueError(f"box {list(self.box)} is empty or not (x1, y1, x2, y2)")
            slack = 1.0  # released boxes may reach one pixel past the far edge
            if x1 < -slack or y1 < -slack or x2 > self.width + slack or y2 > self.height + slack:
                raise ValueError(
                    f"box {list(self.box)} leaves the {self.width}×{self.height} image"
                )
        return self


# -- reading rows -----------------------------------------------------------------------------


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, row) of a parquet or JSON-lines file, a batch at a time: a
    benchmark's parquet holds its images, which need not all be in memory at once."""
    if path.suffix == ".parquet":
        try:
            batches = pq.ParquetFile(path).iter_batches(batch_size=64)
            number = 0
            for batch in batches:
                for row in batch.to_pylist():
                    number += 1
                    yield number, row
        except (OSError, ValueError) as exc:  # pyarrow's errors are both
            raise DataFileError(path, f"not a readable parquet file: {exc}") from None
        return
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(path, f"cannot read: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DataFileError(path, f"line {number}: not JSON ({exc})") from None
        except RecursionError:  # json reads nesting by recursion
            raise DataFileError(path, f"line {number}: not JSON (nested too deep)") from None
        if not isinstance(row, dict):
            raise DataFileError(path, f"line {number}: not a JSON object")
        yield number, row


Convert = Callable[[int, dict[str, Any]], tuple[dict[str, Any], Any]]


def _read(
    benchmark: Benchmark, path: Path | str, images: Path | str, convert: Convert
) -> list[BoxQuestion]:
    """Every row of ``path`` as a question, its image put in ``images``; all or nothing.

    Two passes over the file: the first checks every row (an embedded image only by its
    header), the second writes the embedded images, so memory holds one batch at a time.
    """
    path, images = Path(path), Path(images)
    if not path.exists():
        raise DataFileError(path, "no such file")
    questions: list[BoxQuestion] = []
    embedded = False
    for number, row in _rows(path):
        question, blob = _row(benchmark, number, row, convert, path)
        where = f"row {number}"
        if blob is None:
            blob = _image_file(images, question, path, where)
        else:
            embedded = True
        _check_size(blob, question, path, where)
        questions.append(question)
    _unique(questions, path)
    if embedded:  # only once every row is known good
        for number, row in _rows(path):
            question, blob = _row(benchmark, number, row, convert, path)
            if blob is not None:
                write_atomically(images / question.image_file, blob)
    return questions


def _image_file(images: Path, question: BoxQuestion, path: Path, where: str) -> bytes:
    """The bytes of a row's image file, which must lie inside ``images`` (a symlink that
    leads out of it is refused: the file sent would not be the benchmark's)."""
    file = images / question.image_file
    if not file.is_file():
        raise DataFileError(path, f"{where}: image {question.image_file} not in {images}")
    if not file.resolve().is_relative_to(images.resolve()):
        raise DataFileError(
            path, f"{where}: image {question.image_file} leads out of {images} (a symlink)"
        )
    return file.read_bytes()


def _row(
    benchmark: Benchmark, number: int, row: dict[str, Any], convert: Convert, path: Path
) -> tuple[BoxQuestion, bytes | None]:
    where = f"row {number}"
    try:
        fields, image = convert(number, row)
        blob = _image_bytes(image, path, where)
        if blob is not None:  # kept under a name its bytes decide: no two rows can collide
            fields["image_file"] = embedded_name(blob, str(fields["image_file"]))
        question = BoxQuestion(benchmark=benchmark, **fields)
    except KeyError as exc:
        raise DataFileError(path, f"{where}: missing field {exc}") from None
    except (ValidationError, ValueError, TypeError) as exc:
        raise DataFileError(path, f"{where}: {one_line(exc)}") from None
    return question, blob


def embedded_name(blob: bytes, released: str) -> str:
    """The file name an embedded image is written under: its content hash, with the released
    name's extension. Two rows' images share a name exactly when they share their bytes.

    >>> embedded_name(b"x", "train/0001.JPG")
    'embedded/2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881.jpg'
    """
    suffix = PurePosixPath(released).suffix.lower()
    if not re.fullmatch(r"\.[a-z0-9]{1,5}", suffix):
        suffix = ".img"
    return f"embedded/{hashlib.sha256(blob).hexdigest()}{suffix}"


def _image_bytes(image: Any, path: Path, where: str) -> bytes | None:
    """The bytes of a Hugging Face image struct; None when the row names a file instead."""
    if isinstance(image, dict) and image.get("bytes") is not None:
        data = image["bytes"]
        if not isinstance(data, bytes):
            raise DataFileError(path, f"{where}: image.bytes is not binary")
        return data
    return None


def _check_size(blob: bytes, question: BoxQuestion, path: Path, where: str) -> None:
    try:
        with open_image(blob, path) as image:
            size = image.size
    except DataFileError as exc:
        raise DataFileError(path, f"{where}: image bytes: {exc.reason}") from None
    if size != (question.width, question.height):
        raise DataFileError(
            path,
            f"{where}: image is {size[0]}×{size[1]}, the row says "
            f"{question.width}×{question.height}",
        )


def _unique(questions: list[BoxQuestion], path: Path) -> None:
    seen: set[str] = set()
    for q in questions:
        if q.qid in seen:
            raise DataFileError(path, f"question {q.qid} appears twice")
        seen.add(q.qid)


def _image_name(image: Any, fallback: str) -> str:
    """The file name an image is kept under: its struct's path, its path string, or ``fallback``."""
    if isinstance(image, dict) and image.get("path"):
        return Path(str(image["path"])).name
    if isinstance(image, str) and image:
        return image
    return fallback


def _distractor_count(value: Any) -> int | None:
    """Ref-Adv gives distractors as a count, a list, or a JSON text of either."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"distractors: {value!r} is not a count or a list")
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        return len(value)
    if isinstance(value, str):
        try:
            return _distractor_count(json.loads(value))
        except (ValueError, RecursionError):
            return len(re.findall(r"\d+", value))
    raise ValueError(f"distractors: {value!r} is not a count or a list")


# -- the three benchmarks --------------------------------------------------------------------


def read_ref_adv(path: Path | str, images: Path | str) -> list[BoxQuestion]:
    """Ref-Adv (or Ref-Adv-s) rows; a question per row, dimension human- or LLM-authored."""

    def convert(number: int, row: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        image = row["image"] if "image" in row else row["file_name"]
        return {
            "qid": f"ref-adv:{row.get('id', number)}",
            "image_file": _image_name(image, str(row["file_name"])),
            "width": row["width"],
            "height": row["height"],
            "expression": row["normal_caption"],
            "box": tuple(row["solution"]),
            "dimension": "human-authored" if row.get("human_authored") else "llm-authored",
            "subdimension": row.get("image_source") or None,
            "distractors": _distractor_count(row.get("distractors")),
            "negation": bool(row.get("use_negation", False)),
        }, image

    return _read("ref-adv", path, images, convert)


def read_groundingme(path: Path | str, images: Path | str) -> list[BoxQuestion]:
    """GroundingME rows; ``subtask_l1`` is the dimension, ``Rejection`` questions have no box."""

    def convert(number: int, row: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        image = row["image"]
        dimension = str(row["subtask_l1"])
        qid = str(row["id"])
        return {
            "qid": f"groundingme:{qid}",
            "image_file": _image_name(image, f"{qid}.jpg"),
            "width": row["width"],
            "height": row["height"],
            "expression": row["description"],
            "box": None if dimension == "Rejection" else tuple(row["bbox"]),
            "dimension": dimension,
            "subdimension": row.get("subtask_l2") or None,
        }, image

    return _read("groundingme", path, images, convert)


def read_refbench_pro(path: Path | str, images: Path | str) -> list[BoxQuestion]:
    """RefBench-PRO annotations; ``task_type`` is the dimension, ``reject`` has no box."""

    def convert(number: int, row: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        task = str(row["task_type"]).lower()
        return {
            "qid": f"refbench-pro:{row.get('id', number)}",
            "image_file": str(row["image_path"]),
            "width": row["width"],
            "height": row["height"],
            "expression": row["expression"],
            "box": None if task == "reject" else tuple(row["bbox"]),
            "dimension": task,
        }, row["image_path"]

    return _read("refbench-pro", path, images, convert)


# Each benchmark's released question file, loaded as BoxQuestions (not to be confused with a
# scoring.BoxReader, which reads a model's answer).
FILE_LOADERS: dict[Benchmark, Callable[[Path | str, Path | str], list[BoxQuestion]]] = {
    "ref-adv": read_ref_adv,
    "groundingme": read_groundingme,
    "refbench-pro": read_refbench_pro,
}
