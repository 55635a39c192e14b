"""Hint terms (PROTOCOL §9): cells, their mirrors, and colour names."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conditions import (
    CELLS,
    COLOURS,
    PALETTE,
    cell_of_box,
    dominant_colour,
    wrong_cell,
    wrong_colour,
)


@pytest.mark.parametrize("cell", CELLS)
def test_the_wrong_cell_is_the_mirror_and_never_the_true_one(cell: str) -> None:
    wrong = wrong_cell(cell)  # type: ignore[arg-type]
    assert wrong != cell
    if cell != "centre":
        assert wrong_cell(wrong) == cell
        r, c = divmod(CELLS.index(cell), 3)
        assert CELLS.index(wrong) == 3 * (2 - r) + (2 - c)


@given(st.floats(0, 999), st.floats(0, 999), st.floats(0, 1), st.floats(0, 1))
def test_the_cell_holds_the_box_centre(x: float, y: float, fw: float, fh: float) -> None:
    w, h = (1000 - x) * fw, (1000 - y) * fh
    r, c = divmod(CELLS.index(cell_of_box((x, y, w, h), 1000, 1000)), 3)
    cx, cy = x + w / 2, y + h / 2
    assert c * 1000 / 3 <= cx + 1e-9 and (cx < (c + 1) * 1000 / 3 or c == 2)
    assert r * 1000 / 3 <= cy + 1e-9 and (cy < (r + 1) * 1000 / 3 or r == 2)


@pytest.mark.parametrize("colour", COLOURS)
def test_each_focal_colour_names_itself_and_its_wrong_term_differs(colour: str) -> None:
    pixels = np.tile(np.array(PALETTE[colour], dtype=np.uint8), (50, 1))  # type: ignore[index]
    assert dominant_colour(pixels) == colour
    assert wrong_colour(colour) != colour


def test_the_dominant_colour_is_the_most_frequent_term() -> None:
    red, blue = PALETTE["red"], PALETTE["blue"]
    pixels = np.array([red] * 30 + [blue] * 31, dtype=np.uint8)
    assert dominant_colour(pixels) == "blue"
    with pytest.raises(ValueError, match="no pixels"):
        dominant_colour(np.zeros((0, 3), dtype=np.uint8))
