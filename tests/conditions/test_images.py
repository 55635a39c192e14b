"""Image variants: the 1,024-pixel cap, half resolution, greyscale, and bad images."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from conditions import MAX_SIDE, DataFileError, VariantCache, render
from conditions._images import capped_size, half_size


def encoded(size: tuple[int, int], fmt: str = "JPEG") -> bytes:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 255, size=(size[1], size[0], 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, fmt)
    return out.getvalue()


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_the_cap_bounds_the_longest_side_and_keeps_the_aspect_ratio(w: int, h: int) -> None:
    cw, ch = capped_size(w, h)
    assert max(cw, ch) <= MAX_SIDE
    assert (cw, ch) == (w, h) or max(cw, ch) == MAX_SIDE
    assert cw <= w and ch <= h  # down-scaling only
    scale = min(1.0, MAX_SIDE / max(w, h))
    # Aspect kept: each side within a pixel of the exact scaled side (rounding, or the
    # one-pixel floor of a sliver such as 1 × 2049).
    assert abs(cw - w * scale) <= 1 and abs(ch - h * scale) <= 1


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_half_size_halves_the_longest_side(w: int, h: int) -> None:
    hw, hh = half_size(w, h)
    assert max(hw, hh) == max(1, round(max(w, h) / 2))


def test_a_large_image_is_capped_once_then_halved_or_greyed() -> None:
    source = encoded((2048, 1000))
    full, half, grey = (render(source, v) for v in ("full", "half", "grey"))
    assert full is not None and half is not None and grey is not None
    assert (full.width, full.height) == (1024, 500)
    assert (half.width, half.height) == (512, 250)
    assert (grey.width, grey.height) == (1024, 500)
    assert Image.open(io.BytesIO(grey.data)).mode == "L"
    assert full.media_type == "image/jpeg"
    assert render(source, "none") is None


def test_a_png_stays_a_png() -> None:
    half = render(encoded((300, 200), "PNG"), "half")
    assert half is not None and half.media_type == "image/png"
    assert Image.open(io.BytesIO(half.data)).format == "PNG"


def test_a_broken_image_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"x\.jpg: not a readable image"):
        render(b"\xff\xd8 truncated", "half", "x.jpg")
    path = tmp_path / "a.jpg"
    path.write_bytes(encoded((10, 10)))
    with pytest.raises(DataFileError, match="image changed since the cohort was built"):
        VariantCache(tmp_path / "cache").get(path, "0" * 64, "grey")
