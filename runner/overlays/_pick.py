"""The one stored attempt ``groundbench show`` draws: a selection narrowed field by field, and
when it leaves none or several, one line naming what there is to choose from."""

from __future__ import annotations

from collections.abc import Sequence

from conditions import BOX
from runner.overlays._read import OverlayError, Selection
from runner.overlays._scene import AnswerView

DEFAULT_CONDITION = "base"


def pick_answer(answers: Sequence[AnswerView], selection: Selection, qid: str) -> AnswerView:
    """The one answer of ``answers`` (all of question ``qid``'s) that ``selection`` names.

    The configuration and the budget may be left out when only one is stored; the condition
    defaults to :data:`DEFAULT_CONDITION` and the attempt to the last stored.

    Raises
    ------
    OverlayError
        The selection names no stored answer, or leaves several: the message lists the
        choices (``"q1 has answers under qwen / base for budgets 8, 16; pass --budget"``).
    """
    if not answers:
        raise OverlayError(f"{qid} has no stored answers: the run has not reached it")
    left = _narrow(answers, "configuration", selection.configuration, qid, [])
    condition = selection.condition or DEFAULT_CONDITION
    left = _narrow(left, "condition", condition, qid, [left[0].configuration])
    under = [left[0].configuration, left[0].condition]
    left = _narrow(left, "budget", selection.budget, qid, under)
    last = max(a.attempt for a in left)
    wanted = last if selection.attempt is None else selection.attempt
    under.append(_budget(left[0].budget))
    return _narrow(left, "attempt", wanted, qid, under)[0]


def _narrow(
    answers: Sequence[AnswerView], field: str, wanted: object, qid: str, under: list[str]
) -> list[AnswerView]:
    """The answers whose ``field`` is ``wanted``; ``None`` wants the only value there is."""
    values = sorted({getattr(a, field) for a in answers})
    where = f" under {' / '.join(under)}" if under else ""
    choices = f"{field}s {', '.join(_shown(field, v) for v in values)}"
    if wanted is None:
        if len(values) > 1:
            raise OverlayError(f"{qid} has answers{where} for {choices}; pass --{field}")
        wanted = values[0]
    kept = [a for a in answers if getattr(a, field) == wanted]
    if not kept:
        raise OverlayError(
            f"{qid} has no answer{where} for {field} {_shown(field, wanted)}; it has {choices}"
        )
    return kept


def _shown(field: str, value: object) -> str:
    return f"{value} (box)" if field == "budget" and value == BOX else str(value)


def _budget(budget: int) -> str:
    return "box" if budget == BOX else f"N = {budget}"
