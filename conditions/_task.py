"""The two tasks an experiment can run, behind one small interface.

GroundBench's polygon grid over a :class:`Cohort` (PROTOCOL §1–§9) and a box benchmark's
questions in a :class:`BoxSet` (§10) differ in what they ask and how often, not in how a run
moves: both give each configuration a protocol hash, a plan of request keys and a builder of
requests. :func:`task_of` is the one place that tells them apart; the runner talks to
:class:`Task`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from conditions._box_requests import (
    BOX_ATTEMPTS,
    BoxRequestBuilder,
    box_protocol_fields,
    box_protocol_hash,
    plan_boxes,
)
from conditions._box_set import BoxSet
from conditions._cohort import Cohort
from conditions._grid import Configuration
from conditions._images import VariantCache
from conditions._requests import (
    Request,
    RequestBuilder,
    RequestKey,
    plan,
    protocol_fields,
    protocol_hash,
)
from scoring import BUDGETS

Questions = Cohort | BoxSet


class Builder(Protocol):
    """Makes the exact request of a key (see :class:`RequestBuilder`)."""

    def build(self, key: RequestKey, configuration: Configuration) -> Request: ...


class Task(Protocol):
    """What a run needs of its questions."""

    @property
    def questions(self) -> Questions: ...

    @property
    def fixed_attempts(self) -> int | None:
        """The attempts every request gets, or None for §6's rule (2, or 3 with best effort)."""
        ...

    def protocol_hash(self, configuration: Configuration) -> str:
        """The protocol hash ``configuration``'s results are made under."""
        ...

    def protocol_fields(self, configuration: Configuration) -> dict[str, object]:
        """What that hash is taken of (a store keeps it, to name what changed)."""
        ...

    def plan(
        self,
        configurations: Iterable[Configuration],
        budgets: Sequence[int] = BUDGETS,
        box: bool = True,
    ) -> Iterator[RequestKey]:
        """Every request of ``configurations`` (``budgets`` and ``box``: the polygon grid's)."""
        ...

    def builder(self, images: Path | str, cache: VariantCache) -> Builder:
        """The builder of this task's requests, its images read from ``images``."""
        ...


@dataclass(frozen=True)
class PolygonTask:
    """GroundBench's grid: polygon questions at each budget, and the box question."""

    questions: Cohort
    fixed_attempts: int | None = None

    def protocol_hash(self, configuration: Configuration) -> str:
        return protocol_hash(self.questions.hash, configuration)

    def protocol_fields(self, configuration: Configuration) -> dict[str, object]:
        return protocol_fields(self.questions.hash, configuration)

    def plan(
        self,
        configurations: Iterable[Configuration],
        budgets: Sequence[int] = BUDGETS,
        box: bool = True,
    ) -> Iterator[RequestKey]:
        return plan(self.questions, configurations, budgets, box)

    def builder(self, images: Path | str, cache: VariantCache) -> Builder:
        return RequestBuilder(self.questions, images, cache)


@dataclass(frozen=True)
class BoxTask:
    """A box benchmark's questions, asked once each as its released code asks them."""

    questions: BoxSet
    fixed_attempts: int | None = BOX_ATTEMPTS

    def protocol_hash(self, configuration: Configuration) -> str:
        return box_protocol_hash(self.questions, configuration)

    def protocol_fields(self, configuration: Configuration) -> dict[str, object]:
        q = self.questions
        return box_protocol_fields(q.benchmark, q.hash, configuration)

    def plan(
        self,
        configurations: Iterable[Configuration],
        budgets: Sequence[int] = BUDGETS,
        box: bool = True,
    ) -> Iterator[RequestKey]:
        return plan_boxes(self.questions, configurations)  # no budgets: one box question each

    def builder(self, images: Path | str, cache: VariantCache) -> Builder:
        return BoxRequestBuilder(self.questions, images, cache)


def task_of(questions: Questions) -> Task:
    """The task that asks ``questions``."""
    if isinstance(questions, BoxSet):
        return BoxTask(questions)
    return PolygonTask(questions)
