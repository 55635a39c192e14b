"""The overlays' colours: Okabe and Ito's palette, told apart under every common colour-vision
deficiency, and each role also told apart by line style, so a greyscale print still reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Style:
    """How one role is drawn: colour, line dash (``None``: solid) and legend label."""

    colour: str
    dash: tuple[float, ...] | None
    label: str


ANSWER = Style("#D55E00", None, "answer (even-odd fill)")  # vermillion
UNSCORED = Style("#D55E00", (2.0, 2.0), "answer's last list (not scored)")
TARGET = Style("#009E73", None, "target G_N")  # bluish green
PART = Style("#56B4E9", (1.0, 2.0), "source part A_i")  # sky blue
DISTRACTOR = Style("#CC79A7", (4.0, 2.0), "same-category distractor")  # reddish purple
BOX = Style("#E69F00", None, "box answer")  # orange
CONTROL = Style("#0072B2", (3.0, 1.5), "box-derived control")  # blue
CROSSING = Style("#F0E442", None, "edges cross or touch")  # yellow, black edge
DUPLICATE = Style("#000000", None, "duplicate vertex")  # black ring

FILL_ALPHA = 0.35  # the answer's fill: the image stays visible beneath it
