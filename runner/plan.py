"""What a run will ask, settled before any actor starts: the questions in the store (read or
built on the first run, checked against the experiment on every later one), the backends'
keys and settings, and the grid each configuration is registered with.

Plain Python: no Ray. The driver checks the backends (:func:`check_backends`) before Ray
starts and reads the questions (:func:`ensure_questions`) while it starts; ``groundbench
check`` calls :func:`prepare`, which does both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from conditions import (
    FILE_LOADERS,
    BoxSet,
    Cohort,
    Configuration,
    DataRoot,
    Questions,
    box_set,
    build_cohort,
    load_box_set,
    load_cohort,
    require_current_targets,
    stored_box_set_hash,
    stored_cohort_hash,
    task_of,
    write_box_set,
    write_cohort,
)
from runner._errors import ConfigError
from runner.backends import Backend, attempts_allowed, key_for, key_from_env, provider_named
from runner.experiment import Experiment
from runner.store import GridRow, Registration


def prepare(experiment: Experiment) -> Questions:
    """The pre-flight checks (:func:`check_backends`), then the experiment's questions
    (:func:`ensure_questions`): everything that can fail before Ray starts.

    Raises
    ------
    ConfigError
        A key is missing, a setting is inexpressible, or the store holds other questions.
    """
    check_backends(experiment)
    return ensure_questions(experiment)


@dataclass(frozen=True)
class Grid:
    """What the store registers for a run: one row per configuration, one per request."""

    registrations: tuple[Registration, ...]
    rows: tuple[GridRow, ...]


def grid_of(
    experiment: Experiment, questions: Questions, configurations: Sequence[Configuration]
) -> Grid:
    """Each configuration's registration (protocol hash, attempts allowed, reading) and its
    requests."""
    registrations: list[Registration] = []
    rows: list[GridRow] = []
    task = task_of(questions)
    for c in configurations:
        attempts = attempts_allowed(task.fixed_attempts, c.best_effort)
        registrations.append(
            Registration(
                name=c.name,
                protocol=task.protocol_hash(c),
                provider=c.provider,
                model=c.model,
                attempts=attempts,
                settings=json.dumps(c.output_settings(), sort_keys=True),
                reading=experiment.reading(c.name),
            )
        )
        keys = task.plan([c], experiment.budgets, experiment.box)
        rows.extend(GridRow(k.configuration, k.condition, k.budget, k.qid, attempts) for k in keys)
    return Grid(tuple(registrations), tuple(rows))


RequestId = tuple[str, str, int, str]  # configuration, condition, budget, question


def first_questions(rows: Iterable[GridRow], questions: Questions, n: int) -> frozenset[RequestId]:
    """The requests of the first ``n`` questions of every cell (configuration, condition,
    budget), in the questions' own order (the cohort's draw, the benchmark file's): a smoke
    run whose cells each hold the same questions, and which a full run later completes.

    >>> rows = [GridRow("c", "base", 8, q, 1) for q in ("q2", "q1", "q3")]
    >>> class Q:
    ...     def __init__(self, qid): self.qid = qid
    >>> class Qs:
    ...     questions = (Q("q3"), Q("q1"), Q("q2"))
    >>> sorted(first_questions(rows, Qs(), 2))
    [('c', 'base', 8, 'q1'), ('c', 'base', 8, 'q3')]
    """
    rank: dict[str, int] = {}
    for q in questions.questions:  # (not enumerate: mypy joins the two question types)
        rank[q.qid] = len(rank)
    cells: dict[tuple[str, str, int], list[str]] = {}
    for r in rows:
        cells.setdefault((r.configuration, r.condition, r.budget), []).append(r.qid)
    return frozenset(
        (*cell, qid)
        for cell, qids in cells.items()
        for qid in sorted(qids, key=rank.__getitem__)[:n]
    )


def ensure_questions(experiment: Experiment) -> Questions:
    """What the experiment asks: its box benchmark's questions (``[boxes]``), else its cohort.

    Raises
    ------
    ConfigError
        The store holds the other task's questions (one store, one task), or see
        :func:`ensure_cohort` and :func:`ensure_box_set`.
    """
    if experiment.boxes is not None:
        return ensure_box_set(experiment)
    if stored_box_set_hash(experiment.store) is not None:
        raise ConfigError(
            f"{experiment.store}: holds a box benchmark's questions, and the experiment has no "
            "[boxes]; GroundBench's grid needs a store of its own"
        )
    return ensure_cohort(experiment)


def ensure_box_set(experiment: Experiment) -> BoxSet:
    """The experiment's box questions: the ones in its store, or read now from ``[boxes]``'s
    released file (images it embeds are written to the experiment's images folder).

    Raises
    ------
    ConfigError
        The store holds a cohort, another benchmark's questions, or questions read from a
        file of another name.
    """
    section = experiment.boxes
    assert section is not None
    store = experiment.store
    if stored_cohort_hash(store) is not None:
        raise ConfigError(f"{store}: holds a GroundBench cohort; [boxes] needs a store of its own")
    if stored_box_set_hash(store) is None:
        read = FILE_LOADERS[section.benchmark](section.file, experiment.images)
        questions = box_set(section.benchmark, read, experiment.images, section.file.name)
        write_box_set(store, questions)
        return questions
    questions = load_box_set(store)
    if questions.benchmark != section.benchmark:
        raise ConfigError(
            f"{store}: holds {questions.benchmark}'s questions; [boxes] asks for "
            f"{section.benchmark}. One store holds one benchmark: use a new store for another"
        )
    if questions.source != section.file.name:
        # Read once: the store's copy is what every stored answer was asked from.
        raise ConfigError(
            f"{store}: holds questions read from {questions.source}; [boxes] names "
            f"{section.file.name}. Use a new store for another file"
        )
    return questions


def ensure_cohort(experiment: Experiment) -> Cohort:
    """The experiment's cohort: the one in its store, or one built now from ``[cohort]``.

    Raises
    ------
    ConfigError
        The store holds no cohort and the experiment says nowhere to build one from, or it
        holds a cohort drawn otherwise than ``[cohort]`` now asks (one store, one cohort).
    """
    section = experiment.cohort
    if stored_cohort_hash(experiment.store) is None:
        if section.root is None:
            raise ConfigError(
                f"{experiment.store}: holds no cohort, and the experiment has no [cohort] root "
                "to build one from"
            )
        cohort = build_cohort(DataRoot.at(section.root, section.images), section.spec())
        write_cohort(experiment.store, cohort)
        return cohort
    cohort = load_cohort(experiment.store)
    require_current_targets(experiment.store, cohort)
    if section.root is not None and section.spec() != cohort.spec:
        asked, held = section.spec(), cohort.spec
        raise ConfigError(
            f"{experiment.store}: holds a cohort drawn with seed {held.seed}, {held.per_source} "
            f"per source, {held.matched} matched; [cohort] asks for seed {asked.seed}, "
            f"{asked.per_source} per source, {asked.matched} matched. One store holds one "
            "cohort: use a new store for another"
        )
    return cohort


def _unset_keys(unset: dict[str, list[str]]) -> str:
    """``backends qwen, doubao: environment variables DASHSCOPE_API_KEY, ARK_API_KEY are not
    set: each must hold its backend's API key`` (names only: a value is never shown)."""
    backends = [name for names in unset.values() for name in names]
    variables = ", ".join(unset)
    if len(unset) == 1:
        said = f"environment variable {variables} is not set: it must hold the API key"
    else:
        said = (
            f"environment variables {variables} are not set: each must hold its backend's API key"
        )
    return f"{'backend' if len(backends) == 1 else 'backends'} {', '.join(backends)}: {said}"


def check_backends(experiment: Experiment) -> None:
    """Fail before anything starts where a backend's actor would fail as it starts: a key
    variable not set, a setting its provider's API cannot express, a model or endpoint that
    holds the key or a piece of it. Each backend is made as its actor makes it, with the key it
    will send (found in an actor, the error came as Ray's tracebacks once Ray had started).
    Every key variable not set is named at once: one at a time, a user sets one, runs again and
    meets the next."""
    unset: dict[str, list[str]] = {}  # variable -> the backends that read it
    for name, backend in experiment.backends.items():
        if backend.simulated:
            continue
        variable = backend.api_key_env or provider_named(backend.provider).key_variable
        try:
            key_from_env(variable)
        except ConfigError:
            unset.setdefault(variable, []).append(name)
    if unset:
        raise ConfigError(_unset_keys(unset))
    real, simulated = key_for(None), key_for(experiment.simulator_key)
    for spec in experiment.configurations:
        configuration = experiment.configuration(spec, None)
        key = simulated if experiment.backends[spec.backend].simulated else real
        Backend(configuration, key(configuration))  # raises ConfigError; sends nothing
