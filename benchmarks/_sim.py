"""A small synthetic cohort and its requests, for the backend benchmarks."""

from __future__ import annotations

import io
import random
from pathlib import Path

from PIL import Image

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    CohortSpec,
    Configuration,
    DataRoot,
    Request,
    RequestBuilder,
    SynthSpec,
    VariantCache,
    build_cohort,
    generate_synthetic,
    plan,
)

QWEN = next(c for c in PAPER_CONFIGURATIONS if c.provider == "qwen")


def small_cohort(out: Path, images: int = 160, target_kb: int | None = None) -> tuple[Cohort, Path]:
    """A synthetic cohort (about a third of ``images`` questions) and its image folder.

    With ``target_kb``, every image is first re-encoded with grain until its JPEG is about
    that size (the synthetic flat-colour scenes compress to a few KB; COCO photos do not).
    """
    generate_synthetic(out, SynthSpec(seed=11, images=images))
    root = DataRoot.at(out)
    if target_kb is not None:
        for path in sorted(root.images.glob("*.jpg")):
            _grain(path, target_kb * 1024)
    per_source = max(1, images // 6)
    cohort = build_cohort(root, CohortSpec(seed=0, per_source=per_source, matched=per_source))
    return cohort, root.images


def requests(
    cohort: Cohort, images: Path, cache: VariantCache, count: int, conf: Configuration = QWEN
) -> list[Request]:
    """``count`` requests of ``conf``'s grid, question-major (each image is reused at once)."""
    builder = RequestBuilder(cohort, images, cache)
    keys = sorted(plan(cohort, [conf]), key=lambda k: (k.qid, k.condition, k.budget))
    while len(keys) < count:
        keys = keys + keys
    return [builder.build(k, conf) for k in keys[:count]]


def _grain(path: Path, size: int) -> None:
    image = Image.open(path).convert("RGB")
    rng = random.Random(path.name)
    noise = Image.frombytes("RGB", image.size, rng.randbytes(image.width * image.height * 3))
    for alpha in (0.15, 0.25, 0.35, 0.5, 0.7):
        out = io.BytesIO()
        Image.blend(image, noise, alpha).save(out, "JPEG", quality=92)
        if out.tell() >= size:
            break
    path.write_bytes(out.getvalue())
