"""The hints of conditions 7–11 (PROTOCOL §9): where the target is, and what colour it is.

Spatial: the 3×3 cell of the target box's centre; the wrong cell is its mirror through the
image centre, and for the centre cell a fixed corner. Colour: the dominant basic colour term of
the target's pixels; the wrong term is the palette entry farthest from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

Cell = Literal[
    "upper left", "top", "upper right",
    "left", "centre", "right",
    "lower left", "bottom", "lower right",
]  # fmt: skip
CELLS: tuple[Cell, ...] = (
    "upper left", "top", "upper right",
    "left", "centre", "right",
    "lower left", "bottom", "lower right",
)  # fmt: skip
# (decided) The centre cell has no mirror image; its wrong hint is this fixed corner.
CENTRE_WRONG: Cell = "upper left"

Colour = Literal[
    "black",
    "white",
    "grey",
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "brown",
]
# The eleven basic colour terms (Berlin & Kay) with an sRGB focal colour each (decided).
PALETTE: dict[Colour, tuple[int, int, int]] = {
    "black": (20, 20, 20),
    "white": (240, 240, 240),
    "grey": (128, 128, 128),
    "red": (200, 30, 30),
    "orange": (240, 140, 20),
    "yellow": (240, 220, 40),
    "green": (40, 150, 50),
    "blue": (30, 70, 200),
    "purple": (120, 50, 160),
    "pink": (240, 150, 190),
    "brown": (120, 75, 35),
}
COLOURS: tuple[Colour, ...] = tuple(PALETTE)


def cell_of_box(box: Sequence[float], width: int, height: int) -> Cell:
    """The 3×3 cell holding the centre of the COCO box ``(x, y, w, h)``.

    >>> cell_of_box((0, 0, 10, 10), 300, 300), cell_of_box((140, 140, 20, 20), 300, 300)
    ('upper left', 'centre')
    """
    x, y, w, h = box
    col = _third(x + w / 2, width)
    row = _third(y + h / 2, height)
    return CELLS[3 * row + col]


def wrong_cell(cell: Cell) -> Cell:
    """The cell mirrored through the image centre (the centre cell: :data:`CENTRE_WRONG`).

    >>> wrong_cell("upper left"), wrong_cell("top"), wrong_cell("centre")
    ('lower right', 'bottom', 'upper left')
    """
    if cell == "centre":
        return CENTRE_WRONG
    return CELLS[8 - CELLS.index(cell)]


def _third(v: float, size: int) -> int:
    return min(2, max(0, int(3 * v // size)))


def _srgb_to_lab(rgb: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """CIELAB (D65) of sRGB values in 0..255, shape (..., 3)."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = linear @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack(
        [116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])],
        axis=-1,
    )


_PALETTE_LAB = _srgb_to_lab(np.array(list(PALETTE.values()), dtype=np.float64))


def colour_terms(pixels: npt.NDArray[np.uint8]) -> npt.NDArray[np.intp]:
    """Index into :data:`COLOURS` of the nearest focal colour (in CIELAB) of each RGB pixel."""
    lab = _srgb_to_lab(pixels.reshape(-1, 3))
    distances = ((lab[:, None, :] - _PALETTE_LAB[None, :, :]) ** 2).sum(axis=2)
    terms: npt.NDArray[np.intp] = np.argmin(distances, axis=1)
    return terms


def dominant_colour(pixels: npt.NDArray[np.uint8]) -> Colour:
    """The most frequent colour term among ``pixels`` (N×3 RGB); ties go to palette order.

    Raises
    ------
    ValueError
        No pixels.
    """
    if pixels.size == 0:
        raise ValueError("no pixels to name a colour for")
    counts = np.bincount(colour_terms(pixels), minlength=len(COLOURS))
    return COLOURS[int(np.argmax(counts))]


def wrong_colour(colour: Colour) -> Colour:
    """The palette term farthest from ``colour`` in CIELAB (decided); ties go to palette order.

    >>> wrong_colour("black"), wrong_colour("white"), wrong_colour("red")
    ('yellow', 'blue', 'blue')
    """
    here = _PALETTE_LAB[COLOURS.index(colour)]
    return COLOURS[int(np.argmax(((_PALETTE_LAB - here) ** 2).sum(axis=1)))]
