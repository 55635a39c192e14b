"""Box benchmarks made up in each benchmark's released format: the box path (reader, store,
requests, simulator, scorer, tables) with no download, for the demo and the tests.

Images are distinct (random colour blocks; every fifth one is larger than the 1,024-pixel cap,
so the image sent is scaled); boxes lie inside them; every dimension the paper reports occurs,
with rejection questions where the benchmark has them. Drawn from ``random.Random`` and
``numpy``'s generator seeded with ``seed``: the same call makes the same files.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from conditions._boxsets import Benchmark

# The dimensions each benchmark reports by, as its released files name them.
BENCHMARK_DIMENSIONS: dict[Benchmark, tuple[str, ...]] = {
    "ref-adv": ("human-authored", "llm-authored"),
    "groundingme": ("Discriminative", "Spatial", "Limited", "Rejection"),
    "refbench-pro": ("attribute", "position", "interaction", "relation", "commonsense", "reject"),
}
REJECTION_DIMENSIONS = frozenset({"Rejection", "reject"})


def _jpeg(width: int, height: int, seed: int) -> bytes:
    blocks = np.random.default_rng(seed).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    image = Image.fromarray(blocks).resize((width, height), Image.Resampling.NEAREST)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=80)
    return out.getvalue()


def generate_box_benchmark(
    benchmark: Benchmark, folder: Path, questions: int = 18, seed: int = 0
) -> tuple[Path, Path]:
    """``benchmark``'s released file with ``questions`` made-up questions in ``folder``, and
    its images folder (RefBench-PRO's images are written there; the parquet benchmarks embed
    theirs, which the reader writes there). Returns (file, images folder)."""
    rng = random.Random(seed)
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for n in range(questions):
        width, height = (
            (1500, 1000) if n % 5 == 4 else (rng.randint(200, 640), rng.randint(160, 480))
        )
        w, h = rng.uniform(0.15, 0.6) * width, rng.uniform(0.15, 0.6) * height
        x, y = rng.uniform(0, width - w), rng.uniform(0, height - h)
        box = [round(x, 1), round(y, 1), round(x + w, 1), round(y + h, 1)]
        dimension = BENCHMARK_DIMENSIONS[benchmark][n % len(BENCHMARK_DIMENSIONS[benchmark])]
        blob = _jpeg(width, height, seed * 1000 + n)
        rows.append(_row(benchmark, n, width, height, box, dimension, blob, images))
    if benchmark == "refbench-pro":
        path = folder / "annotations_test.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path = folder / f"{benchmark}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path, images


def _row(
    benchmark: Benchmark,
    n: int,
    width: int,
    height: int,
    box: list[float],
    dimension: str,
    blob: bytes,
    images: Path,
) -> dict[str, Any]:
    expression = f"the object number {n} in the {dimension} test"
    if benchmark == "ref-adv":
        return {"image": {"bytes": blob, "path": f"ra_{n}.jpg"}, "file_name": f"ra_{n}.jpg",
                "normal_caption": expression, "solution": box, "width": width, "height": height,
                "image_source": "coco" if n % 3 else "openimages",
                "human_authored": dimension == "human-authored", "use_negation": n % 4 == 0,
                "distractors": 2 + n % 9}  # fmt: skip
    if benchmark == "groundingme":
        rejected = dimension in REJECTION_DIMENSIONS
        return {"id": n, "image": {"bytes": blob, "path": None}, "description": expression,
                "bbox": [0.0, 0.0, 0.0, 0.0] if rejected else box, "subtask_l1": dimension,
                "subtask_l2": "Appearance" if n % 2 else "State", "width": width,
                "height": height}  # fmt: skip
    (images / f"rb_{n}.jpg").write_bytes(blob)
    return {"id": n, "image_path": f"rb_{n}.jpg", "expression": expression,
            "bbox": None if dimension in REJECTION_DIMENSIONS else box, "task_type": dimension,
            "width": width, "height": height}  # fmt: skip
