"""What a call was billed: the counts a server reports, read once and checked, and what is
counted for them.

A count is an integer ``0 ≤ n < 2³¹``; anything else a server sends in its place (a negative
number, a bool, a float, a string, a number too large, nothing) is *unknown*, never an
exception and never a number that could lower the spend. A count that is unknown is counted
at its worst case (:class:`Worst`: the input bound the spending cap reserved for the call, or
the request's ``max_output_tokens``), so the cap holds whatever a server sends in place of a
count (README, "Spend").
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_COUNT = 2**31  # the store's INTEGER; no token count a server means reaches it

# The input tokens one call is assumed never to pass, as a multiple of the estimated mean
# (runner.estimate.input_bound), or of a request's own rough count where no bound is given.
# The estimate (the prompt's characters / 4, a token per 28-pixel patch; or the mean
# measured) is a mean, and providers count images differently: OpenAI's 512-pixel tiles make
# ~2× the patch count of a COCO image. Four times it bounds one call's input.
INPUT_MARGIN = 4.0


def count(value: object) -> int | None:
    """A count a server sent, or ``None`` (unknown) for anything that is none.

    >>> count(12), count(0), count(-1), count(True), count(2**31), count(1.0), count("3")
    (12, 0, None, None, None, None, None)
    """
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT:
        return value
    return None


def count_sum(*values: object) -> int | None:
    """The sum of counts a server gives in parts (cached input, thoughts): unknown when every
    part is missing, when a part present is no count, or when the sum is too large. A part
    that is absent or null is none of the call's (a provider omits a zero).

    >>> count_sum(3, None, 4), count_sum(None, None), count_sum(3, -1), count_sum(2**30, 2**30)
    (7, None, None, None)
    """
    present = [v for v in values if v is not None]
    counts = [count(v) for v in present]
    if not counts or any(c is None for c in counts):
        return None
    return count(sum(c for c in counts if c is not None))


@dataclass(frozen=True)
class Usage:
    """Tokens the provider reports for one call, each read by :func:`count` (``None``:
    unknown)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def known(self) -> bool:
        """Whether the call's bill can be read from it: its input and output are both counts."""
        return self.input_tokens is not None and self.output_tokens is not None

    @property
    def total(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True)
class Worst:
    """The most one call of a request can be billed: the input bound and the request's
    ``max_output_tokens`` (what its providers bill at most for an answer, reasoning
    included)."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Bill:
    """What an attempt is counted at: its 2xx response (``calls``: 1; 0 where nothing was
    billed), each count as reported where it is one, at its :class:`Worst` where it is not
    (``unknown``: 1 where a count was so taken)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unknown: int = 0

    @classmethod
    def of(cls, usage: Usage, worst: Worst) -> Bill:
        """One billed call: each count as reported where it is one, else at its worst case
        (never less than a count the server did report)."""
        inputs, outputs = usage.input_tokens, usage.output_tokens
        return cls(
            1,
            worst.input_tokens if inputs is None else inputs,
            worst.output_tokens if outputs is None else outputs,
            unknown=int(not usage.known),
        )


__all__ = ["INPUT_MARGIN", "MAX_COUNT", "Bill", "Usage", "Worst", "count", "count_sum"]
