"""An image as sent, made small enough to sit in a page: downscaled and re-encoded once per
(question, variant, size), written into the page as a ``data:`` URL.

A page of the HTML report holds hundreds of overlays; each question's image sits in it once, as
a definition every overlay of that question uses (:func:`runner.overlays._svg.picture_defs`).
"""

from __future__ import annotations

import base64
import io

from PIL import Image

from conditions import ImageBlob

JPEG_QUALITY = 80  # a thumbnail's detail is lost to its size long before to its quality
TINY = 64 * 64  # pixels up to which PNG is smaller than JPEG's headers and blocks


def data_url(blob: ImageBlob, max_side: int) -> str | None:
    """``blob`` scaled down to ``max_side`` pixels on its longer side (never up), as a
    ``data:image/jpeg;base64,…`` URL (PNG for a tiny image); greyscale stays one channel.

    Returns ``None`` when Pillow cannot read the bytes: the overlay then says so in place of
    the image rather than failing the page.
    """
    try:
        with Image.open(io.BytesIO(blob.data)) as image:
            image.draft("RGB", (max_side, max_side))  # JPEG: decode at 1/2, 1/4, 1/8 scale
            small = _shrunk(image, max_side)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    out = io.BytesIO()
    if small.width * small.height <= TINY:
        small.save(out, "PNG", optimize=True)
        kind = "png"
    else:
        small.save(out, "JPEG", quality=JPEG_QUALITY, optimize=True)
        kind = "jpeg"
    return f"data:image/{kind};base64,{base64.b64encode(out.getvalue()).decode('ascii')}"


def _shrunk(image: Image.Image, max_side: int) -> Image.Image:
    """A decoded copy in a mode JPEG writes (``L`` stays ``L``), at most ``max_side`` a side."""
    small = image.convert("L" if image.mode in ("L", "LA", "I;16", "1") else "RGB")
    small.thumbnail((max_side, max_side), Image.Resampling.LANCZOS, reducing_gap=2.0)
    return small
