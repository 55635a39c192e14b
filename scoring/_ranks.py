"""Orderings of configurations and the shape of a budget curve (the paper's §4.2 claims).

The paper's rank and robustness statements are about orders, not levels: "Acc@.5 preserves
one ordering across … all five budgets", "fixed IoU has one Qwen–Gemini inversion at N = 64",
"results peak at moderate budgets and fall at the densest one". These are the definitions
every table and verdict of groundbench uses for them (decided, groundbench):

- an *ordering* lists configurations from the highest value to the lowest; a NaN (a cell with
  nothing to average) goes last, and equal values keep name order;
- an *inversion* against a reference ordering is a pair ``(a, b)`` that the reference ranks
  ``a`` above ``b`` while the values put ``b`` strictly above ``a`` (a tie is no inversion);
- a curve's *peak* is its highest budget value, the lowest such budget on a tie; the
  *high-budget reversal* is a peak below the largest budget with a positive drop from the
  peak to the largest budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def ordering(values: Mapping[str, float]) -> tuple[str, ...]:
    """Names from the highest value to the lowest (NaN last, ties in name order).

    >>> ordering({"kimi": 40.0, "gemini": 55.0, "doubao": 40.0, "qwen": float("nan")})
    ('gemini', 'doubao', 'kimi', 'qwen')
    """
    return tuple(sorted(values, key=lambda name: _rank_key(values[name], name)))


def inversions(reference: Sequence[str], values: Mapping[str, float]) -> list[tuple[str, str]]:
    """Pairs ``(a, b)`` ranked ``a`` above ``b`` in ``reference`` but ``b > a`` in ``values``.

    Names missing from ``values``, or whose value is NaN, take part in no pair.

    >>> inversions(("gemini", "qwen", "kimi"), {"gemini": 37.0, "qwen": 40.0, "kimi": 20.0})
    [('gemini', 'qwen')]
    """
    known = [n for n in reference if not math.isnan(values.get(n, math.nan))]
    return [(a, b) for i, a in enumerate(known) for b in known[i + 1 :] if values[b] > values[a]]


@dataclass(frozen=True)
class Peak:
    """Where a budget curve is highest, and how far it falls from there to its last budget."""

    budget: int
    value: float
    last_budget: int
    drop: float  # value at the peak minus value at the last budget (≥ 0)

    @property
    def reversal(self) -> bool:
        """The curve peaks below its largest budget and falls from there (F2's reversal)."""
        return self.budget < self.last_budget and self.drop > 0


def peak(curve: Mapping[int, float]) -> Peak:
    """The peak of a curve of values by budget (NaN values are skipped).

    >>> peak({8: 50.0, 16: 55.0, 24: 55.0, 32: 52.0, 64: 40.0})
    Peak(budget=16, value=55.0, last_budget=64, drop=15.0)

    Raises
    ------
    ValueError
        The curve has no finite value, or its last budget has none.
    """
    finite = {n: v for n, v in curve.items() if not math.isnan(v)}
    if not finite:
        raise ValueError("a curve needs at least one finite value")
    last = max(curve)
    if last not in finite:
        raise ValueError(f"the curve has no value at its last budget N = {last}")
    best = min(finite, key=lambda n: (-finite[n], n))
    return Peak(best, finite[best], last, finite[best] - finite[last])


def _rank_key(value: float, name: str) -> tuple[bool, float, str]:
    nan = math.isnan(value)
    return (nan, 0.0 if nan else -value, name)
