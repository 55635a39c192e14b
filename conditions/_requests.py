"""Requests: the exact prompt, image and decoding of every call in the grid, and the protocol
hash that says which results may be pooled.

A request is identified by its :class:`RequestKey` (configuration, condition, budget,
question); ``budget`` is :data:`BOX` for the box question. The protocol hash covers the cohort,
the prompt templates, the frozen grid, and the output-affecting settings of one configuration
(never its transport): results made under another hash must not be mixed into a run.
"""

from __future__ import annotations

import functools
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, TypedDict

from conditions._cohort import Cohort, Question
from conditions._errors import ConditionsError
from conditions._grid import (
    BOX_CONDITIONS,
    CONDITIONS,
    Condition,
    Configuration,
    Decoding,
    condition_named,
)
from conditions._images import MAX_SIDE, ImageBlob, VariantCache
from conditions._prompts import (
    PROMPT_VERSION,
    TEMPLATES,
    box_prompt,
    hint_sentences,
    polygon_prompt,
    with_hints,
)
from scoring import BUDGETS, ReaderName

PROTOCOL_VERSION = 1
BOX = 0  # the budget value of a box question


class ProtocolMismatchError(ConditionsError):
    """Results were made under a different protocol hash than the run's."""


def protocol_fields(cohort_hash: str, configuration: Configuration) -> dict[str, object]:
    """Everything that decides what ``configuration`` is asked and how it answers: what
    :func:`protocol_hash` hashes, and what a store keeps beside the hash, so that a mismatch
    can name the field that changed.

    Covers the cohort hash, the prompt templates, the 13 frozen conditions, the image cap and
    the configuration's provider, model and decoding. Transport settings, the configuration's
    name and the subset of conditions it runs are left out: none changes an answer.
    """
    return {
        "protocol_version": PROTOCOL_VERSION,
        "cohort": cohort_hash,
        "prompt_version": PROMPT_VERSION,
        "templates": TEMPLATES,
        "conditions": [c.model_dump(mode="json") for c in CONDITIONS],
        "max_side": MAX_SIDE,
        "configuration": configuration.output_settings(),
    }


def protocol_hash(cohort_hash: str, configuration: Configuration) -> str:
    """sha256 of :func:`protocol_fields`: which results may be pooled."""
    return fields_hash(protocol_fields(cohort_hash, configuration))


def canonical_fields(fields: Mapping[str, object]) -> str:
    """A protocol's fields as the one JSON text its hash is taken of."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False)


def fields_hash(fields: Mapping[str, object]) -> str:
    return hashlib.sha256(canonical_fields(fields).encode()).hexdigest()


@dataclass(frozen=True)
class Change:
    """One field of a protocol (or a cohort's draw) that differs: its name, old and new."""

    field: str
    old: object
    new: object

    def __str__(self) -> str:
        return self.said()

    def said(self, label: Callable[[str], str] = str) -> str:
        """``field: old → new``, the field named by ``label``."""
        return f"{label(self.field)}: {_shown_value(self.old)} → {_shown_value(self.new)}"


SHOWN_VALUE = 40  # characters of a changed value shown (a prompt template runs to hundreds)


def _shown_value(value: object) -> str:
    if value is None:
        return "(none)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= SHOWN_VALUE else text[: SHOWN_VALUE - 1] + "…"


def changed_fields(old: object, new: object, field: str = "") -> list[Change]:
    """Each leaf field that differs between ``old`` and ``new`` (nested mappings, and lists
    of one length, compared item by item), named by its dotted path.

    >>> old, new = {"a": {"b": "x", "c": [1, 2]}}, {"a": {"b": "y", "c": [1, 3]}}
    >>> [str(c) for c in changed_fields(old, new)]
    ['a.b: "x" → "y"', 'a.c[1]: 2 → 3']
    >>> changed_fields({"a": 1}, {"a": 1})
    []
    """
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        changes: list[Change] = []
        for key in sorted(set(old) | set(new), key=str):
            name = f"{field}.{key}" if field else str(key)
            changes += changed_fields(old.get(key), new.get(key), name)
        return changes
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        pairs = enumerate(zip(old, new, strict=True))
        return [c for i, (a, b) in pairs for c in changed_fields(a, b, f"{field}[{i}]")]
    return [] if old == new else [Change(field, old, new)]


NEW_STORE = "point the experiment's store at a new file"


def protocol_mismatch(
    where: str,
    expected: str,
    found: str,
    new_fields: Mapping[str, object] | None,
    stored_fields: str | None,
    stored_settings: str | None = None,
    label: Callable[[str], str] = str,
) -> ProtocolMismatchError:
    """The error for results made under protocol ``found`` when the run is ``expected``: each
    field that differs, old and new (``label`` names a field as the user wrote it), and the two
    ways on.

    ``stored_fields`` is the canonical JSON the store keeps beside the hash (None: a store
    written before it kept them); ``stored_settings`` the configuration's output settings,
    which every store keeps, so that an older store still names a changed model.
    """
    head = f"{where}: results were made under protocol {found[:12]}, this run is {expected[:12]}"
    ways = f"they must not be mixed: revert the change, or {NEW_STORE}"
    changes: list[Change] = []
    if new_fields is not None and stored_fields is not None:
        changes = changed_fields(json.loads(stored_fields), dict(new_fields))
    elif new_fields is not None and stored_settings is not None:
        now = new_fields.get("configuration")
        changes = changed_fields(json.loads(stored_settings), now, "configuration")
        if not changes:
            return ProtocolMismatchError(
                f"{head}: its provider, model and decoding are the same, and the store (written "
                "before stores kept a protocol's fields) records only the hash of the rest: the "
                f"prompts, conditions or image cap of this groundbench version differ; {ways}"
            )
    if changes:
        return ProtocolMismatchError(f"{head}: {_listed(changes, label)}; {ways}")
    return ProtocolMismatchError(
        f"{head}; the store records only the hash, so what changed is not known; {ways}"
    )


def _listed(changes: Sequence[Change], label: Callable[[str], str]) -> str:
    return "; ".join(c.said(label) for c in changes)


def ensure_same_protocol(expected: str, found: str, where: str) -> None:
    """Refuse results from ``where`` made under protocol ``found`` when the run is ``expected``.

    Raises
    ------
    ProtocolMismatchError
        The hashes differ (naming only the hashes: :func:`protocol_mismatch` names the
        fields).
    """
    if expected != found:
        raise protocol_mismatch(where, expected, found, None, None)


@dataclass(frozen=True, order=True)
class RequestKey:
    """Which call: configuration, condition, budget (:data:`BOX` for a box) and question.

    The one identity of a request from the grid to the store, the feeder, batches and the
    pages; its fields are in the store's key order, so keys sort as the store's rows do. An
    attempt at it is :meth:`attempt`'s key.
    """

    configuration: str
    condition: str
    budget: int
    qid: str

    @property
    def is_box(self) -> bool:
        return self.budget == BOX

    def attempt(self, n: int) -> AttemptKey:
        """The key of this request's attempt ``n`` (0 the first)."""
        return AttemptKey(**self.fields(), attempt=n)

    def fields(self) -> KeyFields:
        """The key's fields by name, for a row that spreads them into its columns."""
        return {
            "configuration": self.configuration,
            "condition": self.condition,
            "budget": self.budget,
            "qid": self.qid,
        }

    @classmethod
    def of(cls, row: Keyed) -> RequestKey:
        """The request a row (a store row, a record, a view) names in its fields."""
        return cls(
            configuration=row.configuration, condition=row.condition, budget=row.budget, qid=row.qid
        )


class AttemptKey(NamedTuple):
    """Which attempt at a request: :meth:`RequestKey.attempt`'s key, and a store's row key.

    A named tuple, not a dataclass: a store holds a set of hundreds of thousands of them, and
    reads them from its rows in the same order.
    """

    configuration: str
    condition: str
    budget: int
    qid: str
    attempt: int

    @property
    def request(self) -> RequestKey:
        """The request this is an attempt at."""
        return RequestKey.of(self)

    @classmethod
    def of(cls, row: AttemptKeyed) -> AttemptKey:
        """The attempt a row (a store row, a record, a view) names in its fields."""
        return cls(
            configuration=row.configuration,
            condition=row.condition,
            budget=row.budget,
            qid=row.qid,
            attempt=row.attempt,
        )


class KeyFields(TypedDict):
    """A request key's fields by name (:meth:`RequestKey.fields`)."""

    configuration: str
    condition: str
    budget: int
    qid: str


class Keyed(Protocol):
    """Anything that names a request in its fields: a store's row, a record, a view."""

    @property
    def configuration(self) -> str: ...
    @property
    def condition(self) -> str: ...
    @property
    def budget(self) -> int: ...
    @property
    def qid(self) -> str: ...


class AttemptKeyed(Keyed, Protocol):
    """... and an attempt at it."""

    @property
    def attempt(self) -> int: ...


@dataclass(frozen=True)
class Request:
    """One call exactly as sent: text, image (None when the condition sends none), decoding."""

    key: RequestKey
    protocol: str
    prompt: str
    image: ImageBlob | None
    decoding: Decoding
    replicate: int
    # A box benchmark's question (§10): how many attempts it gets (None: the views', §6), and
    # its reader, which says whether an answer parses.
    attempts: int | None = None
    parsing: ReaderName | None = None

    @property
    def fingerprint(self) -> str:
        """sha256 of what is sent: protocol, prompt, image content and decoding.

        Two calls with one fingerprint are the same request (a stateless retry, a replicate's
        twin differs by ``replicate`` only, which the key carries).
        """
        image = self.image.sha256 if self.image is not None else "-"
        text = "\x1f".join((self.protocol, self.prompt, image, _decoding_json(self.decoding)))
        return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=64)
def _decoding_json(decoding: Decoding) -> str:
    # A grid has a handful of decodings and 120,000 requests: serialise each once.
    return decoding.model_dump_json()


def plan(
    cohort: Cohort,
    configurations: Iterable[Configuration],
    budgets: Sequence[int] = BUDGETS,
    box: bool = True,
) -> Iterator[RequestKey]:
    """Every request of the grid, configuration by condition by budget by question.

    A condition runs on all questions or on the matched subset; each runs ``budgets`` (the
    five, unless an experiment runs fewer), and the box question too where the condition is
    one of :data:`BOX_CONDITIONS` and ``box`` holds.
    """
    polygon = tuple(sorted(budgets))
    for configuration in configurations:
        for name in configuration.conditions:
            condition = condition_named(name)
            questions = _subset(cohort.questions, condition)
            with_box = box and name in BOX_CONDITIONS
            cell_budgets = (*polygon, BOX) if with_box else polygon
            for budget in cell_budgets:
                for q in questions:
                    yield RequestKey(
                        configuration=configuration.name, condition=name, budget=budget, qid=q.qid
                    )


def _subset(questions: Sequence[Question], condition: Condition) -> list[Question]:
    return [q for q in questions if condition.subset == "all" or q.matched]


class BuilderBase(ABC):
    """What the builders of both tasks share: the folder their images are read from, the cache
    that makes each image variant once, each configuration's protocol hash taken once, and the
    refusal of a key of another configuration (see :class:`RequestBuilder`)."""

    def __init__(self, images: Path | str, cache: VariantCache) -> None:
        self.images = Path(images)
        self.cache = cache
        self._protocols: dict[Configuration, str] = {}

    @abstractmethod
    def build(self, key: RequestKey, configuration: Configuration) -> Request: ...

    @abstractmethod
    def _protocol_hash(self, configuration: Configuration) -> str: ...

    def _protocol(self, configuration: Configuration) -> str:
        if configuration not in self._protocols:
            self._protocols[configuration] = self._protocol_hash(configuration)
        return self._protocols[configuration]

    @staticmethod
    def _refuse_another(key: RequestKey, configuration: Configuration) -> None:
        if key.configuration != configuration.name:
            raise KeyError(f"request for {key.configuration!r} built with {configuration.name!r}")


class RequestBuilder(BuilderBase):
    """Builds :class:`Request` values for one cohort, making each image variant once."""

    def __init__(self, cohort: Cohort, images: Path | str, cache: VariantCache) -> None:
        super().__init__(images, cache)
        self.cohort = cohort

    def _protocol_hash(self, configuration: Configuration) -> str:
        return protocol_hash(self.cohort.hash, configuration)

    def build(self, key: RequestKey, configuration: Configuration) -> Request:
        """The request ``key`` of ``configuration`` with its prompt, image bytes and decoding.

        Raises
        ------
        KeyError
            ``key`` names another configuration, an unknown condition, or a question the
            cohort does not have.
        DataFileError
            The question's image is missing or changed since the cohort was built.
        """
        self._refuse_another(key, configuration)
        condition = condition_named(key.condition)
        q = self.cohort.question(key.qid)
        prompt = (
            box_prompt(q.expression) if key.is_box else polygon_prompt(q.expression, key.budget)
        )
        hints = hint_sentences(condition.cues, q.cell, q.wrong_cell, q.colour, q.wrong_colour)
        image = self.cache.get(self.images / q.image_file, q.image_sha256, condition.image)
        return Request(
            key=key,
            protocol=self._protocol(configuration),
            prompt=with_hints(prompt, hints),
            image=image,
            decoding=condition.decoding(configuration.decoding),
            replicate=condition.replicate,
        )
