"""A store's questions and stored attempts, read back as overlays draw them.

Every attempt is drawn from its stored text by ``scoring``'s own mapping (``scoring._drawn``)
and carries its stored scores: a page shows what was scored, never a recomputation beside it.
Reading in bulk (:func:`iter_questions`) takes one query per table, so a 120,000-answer store
is read in one pass.
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from conditions import (
    BOX,
    ConditionsError,
    Variant,
    VariantCache,
    condition_named,
    has_table,
    hint_sentences,
)
from runner._errors import RunnerError
from runner.backends import clip
from runner.backends._secrets import MAX_MESSAGE
from runner.overlays._scene import AnswerView, Picture, QuestionView, Ring
from runner.store import POLYGON_METRIC_NAMES
from scoring import BoxScore, PolygonScore, draw_box, draw_polygon, select_part

# A polygon answer's score columns, but for ``parseable``, which every score row has.
_POLYGON = tuple(name for name in POLYGON_METRIC_NAMES if name != "parseable")


class OverlayError(RunnerError):
    """A question or answer asked for is not in the store, or the store holds none to draw."""


@dataclass(frozen=True)
class Selection:
    """Which stored attempts to read: ``None`` leaves a field free."""

    configuration: str | None = None
    condition: str | None = None
    budget: int | None = None
    attempt: int | None = None


def recorded_images(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The images folder the store's last run used (``None``: no run recorded one)."""
    if not has_table(con, "run_paths"):
        return None
    row = con.execute("SELECT path FROM run_paths WHERE name = 'images'").fetchone()
    return Path(row[0]) if row else None


class Pictures:
    """Each question's image variants as sent, made once (a variant cache under ``cache``).

    A missing or changed image file is no error here: its :class:`Picture` says which file
    and what is wrong, and the page that shows it names it.
    """

    def __init__(self, images: Path | None, cache: Path | None = None, memory: int = 64) -> None:
        self.images = images
        self._cache = VariantCache(cache or Path(tempfile.mkdtemp(prefix="groundbench-pics-")))
        self.memory = memory
        self._made: OrderedDict[tuple[str, Variant], Picture] = OrderedDict()

    def picture(self, question: QuestionView, variant: Variant) -> Picture:
        """``question``'s image as the ``variant`` sent it.

        The last ``memory`` pictures are kept: a question's attempts ask for its few variants
        over and over, while a report reads questions one after another, so keeping every
        picture held a whole cohort's images in memory at once.
        """
        key = (question.image_sha256, variant)
        if key in self._made:
            self._made.move_to_end(key)
            return self._made[key]
        made = self._made[key] = self._make(question, variant)
        if len(self._made) > self.memory:
            self._made.popitem(last=False)
        return made

    def _make(self, question: QuestionView, variant: Variant) -> Picture:
        if variant == "none":
            return Picture(variant, None)
        if self.images is None:
            return Picture(variant, None, "the store records no images folder: pass --images")
        path = self.images / question.image_file
        if not path.exists():
            return Picture(variant, None, f"{path}: image file missing")
        try:
            return Picture(variant, self._cache.get(path, question.image_sha256, variant))
        except ConditionsError as exc:  # changed since the cohort was built, or unreadable
            return Picture(variant, None, str(exc))


@dataclass(frozen=True)
class _Cues:
    cell: str
    wrong_cell: str
    colour: str
    wrong_colour: str


_QUESTION_SQL = """SELECT qid, source, expression, category, width, height, image_file,
    image_sha256, box, cell, wrong_cell, colour, wrong_colour FROM questions"""
_ANSWER_SQL = f"""SELECT r.configuration, r.condition, r.budget, r.qid, r.attempt, r.outcome,
    r.answer, r.error_message, r.finish_reason, s.parseable, s.box_iou,
    {", ".join("s." + m for m in _POLYGON)}
    FROM responses r LEFT JOIN scores s USING (configuration, condition, budget, qid, attempt)"""
_ORDER = " ORDER BY r.qid, r.configuration, r.condition, r.budget, r.attempt"


def read_question(con: duckdb.DuckDBPyConnection, qid: str) -> QuestionView:
    """Question ``qid`` of the store's cohort, with its targets, part and distractors.

    Raises
    ------
    OverlayError
        The store holds no cohort, or no question ``qid``.
    """
    _require_cohort(con)
    row = con.execute(f"{_QUESTION_SQL} WHERE qid = ?", [qid]).fetchone()
    if row is None:
        first = con.execute("SELECT qid FROM questions ORDER BY qid LIMIT 3").fetchall()
        some = [r[0] for r in first]
        raise OverlayError(
            f"no question {qid!r} in the store (its questions are named like "
            f'{", ".join(some)}; `groundbench sql STORE "SELECT qid, expression FROM '
            f'questions"` lists them)'
        )
    targets = _targets(con, "WHERE qid = ?", [qid])
    instances = _instances(con, "WHERE qid = ?", [qid])
    question, _ = _question(row, targets.get(qid, {}), instances.get(qid, []))
    return question


def read_answers(
    con: duckdb.DuckDBPyConnection,
    question: QuestionView,
    pictures: Pictures,
    selection: Selection = Selection(),
) -> list[AnswerView]:
    """Every stored attempt of ``question`` that ``selection`` admits, ordered by
    configuration, condition, budget and attempt."""
    where, params = ["r.qid = ?"], [question.qid]
    for field in ("configuration", "condition", "budget", "attempt"):
        value = getattr(selection, field)
        if value is not None:
            where.append(f"r.{field} = ?")
            params.append(value)
    rows = con.execute(f"{_ANSWER_SQL} WHERE {' AND '.join(where)}{_ORDER}", params).fetchall()
    cues = _cues_of(con, question.qid)
    controls = _controls(con, "WHERE qid = ?", [question.qid])
    return [_answer(row, question, cues, pictures, controls) for row in rows]


def iter_questions(
    con: duckdb.DuckDBPyConnection, pictures: Pictures
) -> Iterator[tuple[QuestionView, list[AnswerView]]]:
    """Every question of the store's cohort with all its stored attempts, in ``qid`` order;
    one query per table, the answers streamed."""
    _require_cohort(con)
    targets = _targets(con, "", [])
    instances = _instances(con, "", [])
    controls = _controls(con, "", [])
    questions = {
        row[0]: _question(row, targets.get(row[0], {}), instances.get(row[0], []))
        for row in con.execute(f"{_QUESTION_SQL} ORDER BY qid").fetchall()
    }
    answers = _stream(con.execute(f"{_ANSWER_SQL}{_ORDER}"))
    pending = next(answers, None)
    for qid, (question, cues) in questions.items():
        mine = []
        while pending is not None and pending[3] == qid:
            mine.append(_answer(pending, question, cues, pictures, controls))
            pending = next(answers, None)
        yield question, mine


def _stream(cursor: duckdb.DuckDBPyConnection, size: int = 2048) -> Iterator[tuple[Any, ...]]:
    while rows := cursor.fetchmany(size):
        yield from rows


def _require_cohort(con: duckdb.DuckDBPyConnection) -> None:
    if has_table(con, "box_set"):
        raise OverlayError(
            "the store holds a box benchmark's questions: overlays draw GroundBench's "
            "polygon questions (its report's table is in `groundbench report`)"
        )
    if not has_table(con, "questions"):
        raise OverlayError("the store holds no cohort: build one and run the experiment first")


def _question(
    row: Sequence[Any], targets: dict[int, Ring], instances: list[tuple[str, list[list[float]]]]
) -> tuple[QuestionView, _Cues]:
    (qid, source, expression, category, width, height, image_file, sha, box,
     cell, wrong_cell, colour, wrong_colour) = row  # fmt: skip
    referent = next((parts for role, parts in instances if role == "target"), [])
    chosen = select_part(referent) if referent else -1
    question = QuestionView(
        qid=qid,
        source=source,
        expression=expression,
        category=category,
        width=width,
        height=height,
        image_file=image_file,
        image_sha256=sha,
        targets=targets,
        part=_ring(referent[chosen]) if referent else (),
        other_parts=tuple(_ring(p) for k, p in enumerate(referent) if k != chosen),
        distractors=tuple(
            tuple(_ring(p) for p in parts) for role, parts in instances if role == "distractor"
        ),
        box=tuple(box),
    )
    return question, _Cues(cell, wrong_cell, colour, wrong_colour)


def _cues_of(con: duckdb.DuckDBPyConnection, qid: str) -> _Cues:
    row = con.execute(
        "SELECT cell, wrong_cell, colour, wrong_colour FROM questions WHERE qid = ?", [qid]
    ).fetchone()
    assert row is not None  # read_question found it
    return _Cues(*row)


def _targets(
    con: duckdb.DuckDBPyConnection, where: str, params: list[Any]
) -> dict[str, dict[int, Ring]]:
    out: dict[str, dict[int, Ring]] = defaultdict(dict)
    phase0 = f"{where} AND phase = 0" if where else "WHERE phase = 0"
    for qid, budget, vertices in con.execute(
        f"SELECT qid, budget, vertices FROM targets {phase0}", params
    ).fetchall():
        out[qid][budget] = _ring(vertices)
    return out


def _instances(
    con: duckdb.DuckDBPyConnection, where: str, params: list[Any]
) -> dict[str, list[tuple[str, list[list[float]]]]]:
    out: dict[str, list[tuple[str, list[list[float]]]]] = defaultdict(list)
    for qid, role, parts in con.execute(
        f"SELECT qid, role, parts FROM instances {where} ORDER BY qid, ann_id", params
    ).fetchall():
        out[qid].append((role, parts))
    return out


def _controls(
    con: duckdb.DuckDBPyConnection, where: str, params: list[Any]
) -> dict[tuple[str, str, str, int], dict[int, PolygonScore]]:
    out: dict[tuple[str, str, str, int], dict[int, PolygonScore]] = defaultdict(dict)
    if not has_table(con, "controls"):
        return out
    for configuration, condition, qid, attempt, n, parseable, *metrics in con.execute(
        f"SELECT configuration, condition, qid, attempt, n, parseable, {', '.join(_POLYGON)} "
        f"FROM controls {where}",
        params,
    ).fetchall():
        out[(configuration, condition, qid, attempt)][n] = _score(parseable, metrics)
    return out


def _answer(
    row: Sequence[Any],
    question: QuestionView,
    cues: _Cues,
    pictures: Pictures,
    controls: dict[tuple[str, str, str, int], dict[int, PolygonScore]],
) -> AnswerView:
    (configuration, condition, budget, qid, attempt, outcome, text, error, finish,
     parseable, box_iou, *metrics) = row  # fmt: skip
    known = _condition(condition)
    answered = outcome == "answer"
    hints = hint_sentences(known.cues, cues.cell, cues.wrong_cell, cues.colour, cues.wrong_colour)
    view = AnswerView(
        configuration=configuration,
        condition=condition,
        budget=budget,
        qid=qid,
        attempt=attempt,
        outcome=outcome,
        text=text,
        # Clipped as drawn: a store an older version wrote holds a server's texts uncut (a
        # 200 KB finish reason on 348 answers made a 126 MB report, issue 37).
        error=None if error is None else clip(error, limit=MAX_MESSAGE),
        finish_reason=None if finish is None else clip(finish),
        hint=" ".join(hints) or None,
        picture=pictures.picture(question, known.image),
    )
    if not answered:
        return view
    w, h = question.width, question.height
    if budget == BOX:
        control = controls.get((configuration, condition, qid, attempt), {})
        score = None if parseable is None else BoxScore(parseable, box_iou or 0.0, control)
        return replace(view, box=draw_box(text, w, h, sorted(question.targets)), box_score=score)
    score_ = None if parseable is None else _score(parseable, metrics)
    return replace(view, polygon=draw_polygon(text, budget, w, h), score=score_)


class _Unknown:
    """A condition this groundbench does not know (a newer store's): no hint, the full image."""

    cues: tuple[str, ...] = ()
    image: Variant = "full"


def _condition(name: str) -> Any:
    try:
        return condition_named(name)
    except KeyError:
        return _Unknown()


def _score(parseable: bool, metrics: Sequence[Any]) -> PolygonScore:
    if not parseable:
        return PolygonScore(parseable=False, defect="unparseable")
    values = dict(zip(_POLYGON, metrics, strict=True))
    return PolygonScore(parseable=True, **values)


def _ring(flat: Sequence[float]) -> Ring:
    return tuple((float(x), float(y)) for x, y in zip(flat[0::2], flat[1::2], strict=True))
