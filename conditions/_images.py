"""The image variants a condition sends (PROTOCOL §9), each made once and cached by content.

``full`` is the image with its longest side capped at 1,024 pixels (down-scaling only);
``half`` halves the longest side of ``full``; ``grey`` is ``full`` as luminance; ``none`` sends
no image at all. An image that needs no change is sent as the very bytes on disk (decided,
groundbench): re-encoding would add a compression pass the paper's configurations never saw.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tempfile
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from PIL import Image, UnidentifiedImageError

from conditions._errors import DataFileError

Variant = Literal["full", "half", "grey", "none"]
VARIANTS: tuple[Variant, ...] = ("full", "half", "grey", "none")
MAX_SIDE = 1024
JPEG_QUALITY = 95  # (decided, groundbench) for any variant that must be re-encoded
_MEDIA_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png"}
# The largest image read, in pixels: far above any benchmark's photos (COCO's are 0.3 MP, the
# box benchmarks' a few MP), far below a decompression bomb's gigapixels, which would take
# gigabytes to decode. Checked from the header, before any pixel is decoded.
MAX_PIXELS = 64_000_000
_EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png"}


@dataclass(frozen=True)
class ImageBlob:
    """The bytes of one image as sent, and what they are."""

    data: bytes
    media_type: str
    width: int
    height: int

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def base64(self) -> bytes:
        """The data in base64, made once per blob: every request of the blob reuses it."""
        return base64.b64encode(self.data)

    @cached_property
    def data_url(self) -> bytes:
        """``data:<type>;base64,<data>``, made once per blob like :attr:`base64`."""
        return b"data:" + self.media_type.encode() + b";base64," + self.base64

    def __repr__(self) -> str:
        return f"ImageBlob({self.media_type}, {self.width}x{self.height}, {len(self.data)} bytes)"


def capped_size(width: int, height: int, max_side: int = MAX_SIDE) -> tuple[int, int]:
    """``(width, height)`` scaled down, keeping aspect ratio, so the longest side ≤ ``max_side``.

    >>> capped_size(640, 480), capped_size(2048, 1536), capped_size(3000, 1)
    ((640, 480), (1024, 768), (1024, 1))
    """
    longest = max(width, height)
    if longest <= max_side:
        return width, height
    scale = max_side / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def half_size(width: int, height: int) -> tuple[int, int]:
    """Half the longest side, aspect ratio kept (at least one pixel a side).

    >>> half_size(640, 480), half_size(1024, 683), half_size(1, 1)
    ((320, 240), (512, 342), (1, 1))
    """
    return max(1, round(width / 2)), max(1, round(height / 2))


def open_image(data: bytes, where: Path | str) -> Image.Image:
    """The image encoded in ``data``, opened lazily (only its header is read yet).

    Raises
    ------
    DataFileError
        Not an image Pillow can read, or larger than :data:`MAX_PIXELS` (names ``where``).
    """
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:  # Pillow's own cap, far above ours
        raise DataFileError(
            where, f"above the {MAX_PIXELS / 1e6:.0f}-megapixel cap (a decompression bomb?): {exc}"
        ) from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise DataFileError(where, f"not a readable image: {exc}") from None
    width, height = image.size
    if width * height > MAX_PIXELS:
        image.close()
        raise DataFileError(
            where,
            f"a {width}×{height} image ({width * height / 1e6:,.0f} megapixels) is above the "
            f"{MAX_PIXELS / 1e6:.0f}-megapixel cap (a decompression bomb?)",
        )
    return image


def render(source: bytes, variant: Variant, where: Path | str = "image") -> ImageBlob | None:
    """The ``variant`` of the encoded image ``source`` (None for ``none``).

    Raises
    ------
    DataFileError
        ``source`` is not an image Pillow can decode (names ``where``).
    """
    if variant == "none":
        return None
    image = open_image(source, where)
    try:
        fmt = image.format or ""
        size = capped_size(*image.size)
        if variant == "full" and size == image.size and fmt in _MEDIA_TYPES:
            return ImageBlob(source, _MEDIA_TYPES[fmt], *image.size)
        image.load()
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise DataFileError(where, f"not a readable image: {exc}") from None
    pixels = _without_alpha(image)
    if size != image.size:
        pixels = pixels.resize(size, Image.Resampling.LANCZOS)
    if variant == "half":
        pixels = pixels.resize(half_size(*pixels.size), Image.Resampling.LANCZOS)
    elif variant == "grey":
        pixels = pixels.convert("L")
    return _encode(pixels, "PNG" if fmt == "PNG" else "JPEG")


def _without_alpha(image: Image.Image) -> Image.Image:
    return image if image.mode in ("RGB", "L") else image.convert("RGB")


def _encode(image: Image.Image, fmt: str) -> ImageBlob:
    out = io.BytesIO()
    if fmt == "JPEG":
        image.save(out, "JPEG", quality=JPEG_QUALITY)
    else:
        image.save(out, "PNG")
    return ImageBlob(out.getvalue(), _MEDIA_TYPES[fmt], *image.size)


class VariantCache:
    """Image variants on disk, made once per (source image content, variant).

    A variant is stored as ``<source sha256>.<variant>.<ext>``; writes go to a temporary file
    renamed into place, so a crash never leaves a half-written image behind. A ``full`` image
    sent as the bytes on disk is not copied. The most recent ``memory`` blobs stay in memory:
    a whole cohort's images would not.
    """

    def __init__(self, directory: Path | str, memory: int = 256) -> None:
        self.directory = Path(directory)
        self.memory = memory
        self._memo: OrderedDict[tuple[str, Variant], ImageBlob | None] = OrderedDict()

    def get(self, source_path: Path, source_sha256: str, variant: Variant) -> ImageBlob | None:
        """The ``variant`` of the image at ``source_path`` whose content hash is given.

        Raises
        ------
        DataFileError
            The source image is missing, unreadable, or no longer has ``source_sha256``.
        """
        key = (source_sha256, variant)
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        blob = self._memo[key] = self._load_or_make(source_path, source_sha256, variant)
        if len(self._memo) > self.memory:
            self._memo.popitem(last=False)
        return blob

    def _load_or_make(self, source: Path, sha: str, variant: Variant) -> ImageBlob | None:
        if variant == "none":
            return None
        for media_type, ext in _EXTENSIONS.items():
            cached = self.directory / f"{sha}.{variant}.{ext}"
            if cached.exists():
                return _blob_from_file(cached, media_type)
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise DataFileError(source, f"cannot read image: {exc.strerror}") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise DataFileError(source, "image changed since the cohort was built (sha256 differs)")
        blob = render(data, variant, source)
        assert blob is not None
        if blob.data is data:  # the source as it is: nothing to store
            return blob
        write_atomically(
            self.directory / f"{sha}.{variant}.{_EXTENSIONS[blob.media_type]}", blob.data
        )
        return blob


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file beside it, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _blob_from_file(path: Path, media_type: str) -> ImageBlob:
    data = path.read_bytes()
    with open_image(data, path) as image:
        return ImageBlob(data, media_type, *image.size)
