"""The prompt templates (PROTOCOL §1) and the hint sentences of conditions 7–11 (§9).

The paper does not print its prompts; these are the project's (decided, groundbench). Their
text enters the protocol hash, so editing a template starts a new protocol.
"""

from __future__ import annotations

from collections.abc import Sequence

from conditions._grid import Cue

PROMPT_VERSION = 1

POLYGON_TEMPLATE = (
    'Outline the object described by this expression: "{expression}".\n'
    "Give a polygon with exactly {n} vertices that traces the object's outline. Use "
    "normalised coordinates: (0, 0) is the top-left and (999, 999) the bottom-right corner of "
    "the image.\n"
    "Answer with one line of {count} integers from 0 to 999, x1 y1 x2 y2 ... x{n} y{n}, "
    "and nothing else on that line."
)
BOX_TEMPLATE = (
    'Locate the object described by this expression: "{expression}".\n'
    "Give its bounding box in normalised coordinates: (0, 0) is the top-left and (999, 999) "
    "the bottom-right corner of the image.\n"
    "Answer with one line of 4 integers from 0 to 999, x1 y1 x2 y2 (top-left corner, then "
    "bottom-right corner), and nothing else on that line."
)
SPATIAL_HINT = "Hint: the object is in the {cell} of the image."
COLOUR_HINT = "Hint: the object is mostly {colour}."

TEMPLATES: dict[str, str] = {
    "polygon": POLYGON_TEMPLATE,
    "box": BOX_TEMPLATE,
    "spatial-hint": SPATIAL_HINT,
    "colour-hint": COLOUR_HINT,
}


def polygon_prompt(expression: str, n: int) -> str:
    """The question asking for exactly ``n`` vertices.

    >>> print(polygon_prompt("cat on the left", 8).splitlines()[-1])
    Answer with one line of 16 integers from 0 to 999, x1 y1 x2 y2 ... x8 y8, and nothing else on that line.
    """  # noqa: E501
    return POLYGON_TEMPLATE.format(expression=expression, n=n, count=2 * n)


def box_prompt(expression: str) -> str:
    """The box-localisation question (four integers)."""
    return BOX_TEMPLATE.format(expression=expression)


def hint_sentences(
    cues: Sequence[Cue], cell: str, wrong_cell: str, colour: str, wrong_colour: str
) -> list[str]:
    """The hint sentences for ``cues``, in order, from a question's frozen cue terms."""
    out = []
    for cue in cues:
        kind, truth = cue.split("-")
        if kind == "spatial":
            out.append(SPATIAL_HINT.format(cell=cell if truth == "true" else wrong_cell))
        else:
            out.append(COLOUR_HINT.format(colour=colour if truth == "true" else wrong_colour))
    return out


def with_hints(prompt: str, hints: Sequence[str]) -> str:
    """``prompt`` with the hint sentences on their own line after it (no hints: unchanged)."""
    return prompt if not hints else prompt + "\n" + " ".join(hints)
