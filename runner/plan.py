"""What a run will ask, settled before any actor starts: the experiment's configurations read
once, the questions in the store (read or built on the first run, checked against the
experiment on every later one), the backends' keys and settings, and the grid each
configuration is registered with: a :class:`RunPlan`.

Plain Python: no Ray. The driver reads the configurations once, checks the backends and that
the store would take the run (:func:`checked_configurations`) before Ray starts, and reads the
questions into the plan (:func:`plan_run`) while it starts; ``groundbench check`` calls
:func:`prepare`, which does both. The pre-flight and estimate (:mod:`runner.preflight`) and the
run's lifecycle (:mod:`runner.distributed`) take the plan, and read no configuration from the
experiment again.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import duckdb

from conditions import (
    BENCHMARKS,
    FILE_LOADERS,
    NEW_STORE,
    Benchmark,
    BoxSet,
    Cohort,
    CohortSpec,
    Configuration,
    DataRoot,
    Questions,
    RequestKey,
    Transport,
    box_protocol_fields,
    box_set,
    build_cohort,
    canonical_fields,
    changed_fields,
    fields_hash,
    has_table,
    load_box_set,
    load_cohort,
    protocol_fields,
    protocol_mismatch,
    require_current_targets,
    stored_box_set_hash,
    stored_cohort_hash,
    task_of,
    write_box_set,
    write_cohort,
)
from runner._errors import ConfigError
from runner.backends import Client, attempts_allowed, key_for, key_from_env, provider_named
from runner.experiment import BackendSpec, ConfigurationSpec, Experiment
from runner.store import GridRow, Registration, StoreError, read_only


def prepare(experiment: Experiment) -> RunPlan:
    """The pre-flight checks (:func:`check_backends`), then the experiment's questions
    (:func:`ensure_questions`) and its plan: everything that can fail before Ray starts.

    Raises
    ------
    ConfigError
        A key is missing, a setting is inexpressible, or the store holds other questions.
    """
    configurations = checked_configurations(experiment)
    return plan_run(experiment, configurations, ensure_questions(experiment))


def checked_configurations(experiment: Experiment) -> tuple[Configuration, ...]:
    """The experiment's configurations (:func:`configurations_of`), read once, and checked as
    far as they can be before Ray starts: each backend's key and settings
    (:func:`check_backends`), and that the store would take them (:func:`check_store_agrees`).

    Raises
    ------
    ConfigError
        A key is missing, a setting is inexpressible, or the store holds another cohort.
    ProtocolMismatchError
        A configuration's stored answers were made under another protocol.
    """
    configurations = configurations_of(experiment)
    check_backends(experiment, configurations)
    check_store_agrees(experiment, configurations)
    return configurations


def configurations_of(experiment: Experiment) -> tuple[Configuration, ...]:
    """The experiment's configurations, each on its backend's own endpoint (a simulated
    backend's is set once its simulator serves: :meth:`RunPlan.at`).

    Raises
    ------
    ConfigError
        A configuration's settings are invalid (its conditions, say).
    """
    return tuple(experiment.configuration(spec, None) for spec in experiment.configurations)


@dataclass(frozen=True)
class Grid:
    """What the store registers for a run: one row per configuration, one per request."""

    registrations: tuple[Registration, ...]
    rows: tuple[GridRow, ...]


@dataclass(frozen=True)
class RunPlan:
    """What a run asks, the experiment read once: its configurations (:func:`configurations_of`),
    its questions and its grid. The pre-flight, the estimate and the run's lifecycle take it.

    The grid does not depend on where a simulated backend listens (a transport setting is no
    part of a protocol), so it is made once, before any simulator starts."""

    experiment: Experiment
    configurations: tuple[Configuration, ...]
    questions: Questions
    grid: Grid

    def at(self, simulator_url: str | None) -> tuple[Configuration, ...]:
        """The configurations, a simulated backend's pointed at the simulator serving at
        ``simulator_url`` (``None``: none serves, and they are as read)."""
        if simulator_url is None:
            return self.configurations
        return tuple(
            c.model_copy(update={"transport": self.transport(c.name, simulator_url)})
            for c in self.configurations
        )

    def backend_of(self, configuration: str) -> str:
        """The name of the backend ``configuration`` is sent on."""
        return self._backend_names[configuration]

    def backend(self, configuration: str) -> BackendSpec:
        """The backend ``configuration`` is sent on: its prices, its mode, its limits."""
        return self.experiment.backends[self.backend_of(configuration)]

    def transport(self, configuration: str, simulator_url: str | None) -> Transport:
        """The transport of ``configuration``'s backend: its endpoint and its limits."""
        return self.backend(configuration).transport(simulator_url)

    @functools.cached_property
    def _backend_names(self) -> dict[str, str]:
        return {spec.name: spec.backend for spec in self.experiment.configurations}


def plan_run(
    experiment: Experiment, configurations: Sequence[Configuration], questions: Questions
) -> RunPlan:
    """The run's plan: ``configurations`` (:func:`configurations_of` ``experiment``) and the
    grid they make of ``questions``."""
    grid = grid_of(experiment, questions, configurations)
    return RunPlan(experiment, tuple(configurations), questions, grid)


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
                fields=canonical_fields(task.protocol_fields(c)),
            )
        )
        keys = task.plan([c], experiment.budgets, experiment.box)
        rows.extend(GridRow.of(k, attempts=attempts) for k in keys)
    return Grid(tuple(registrations), tuple(rows))


def first_questions(rows: Iterable[GridRow], questions: Questions, n: int) -> frozenset[RequestKey]:
    """The requests of the first ``n`` questions of every cell (configuration, condition,
    budget), in the questions' own order (the cohort's draw, the benchmark file's): a smoke
    run whose cells each hold the same questions, and which a full run later completes.

    >>> rows = [GridRow(configuration="c", condition="base", budget=8, qid=q, attempts=1)
    ...         for q in ("q2", "q1", "q3")]
    >>> class Q:
    ...     def __init__(self, qid): self.qid = qid
    >>> class Qs:
    ...     questions = (Q("q3"), Q("q1"), Q("q2"))
    >>> [k.qid for k in sorted(first_questions(rows, Qs(), 2))]
    ['q1', 'q3']
    """
    rank: dict[str, int] = {}
    for q in questions.questions:  # (not enumerate: mypy joins the two question types)
        rank[q.qid] = len(rank)
    cells: dict[tuple[str, str, int], list[RequestKey]] = {}
    for r in rows:
        cells.setdefault((r.configuration, r.condition, r.budget), []).append(r.request)
    return frozenset(
        key for keys in cells.values() for key in sorted(keys, key=lambda k: rank[k.qid])[:n]
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
        raise cohort_mismatch(experiment.store, cohort.spec, section.spec())
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


def cohort_mismatch(store: Path, held: CohortSpec, asked: CohortSpec) -> ConfigError:
    """The error for a store whose cohort was drawn otherwise than ``[cohort]`` now asks: each
    field that differs, old and new, and the two ways on."""
    changes = changed_fields(held.model_dump(mode="json"), asked.model_dump(mode="json"), "cohort")
    return ConfigError(
        f"{store}: holds a cohort drawn otherwise than [cohort] now asks: "
        f"{'; '.join(map(str, changes))}; one store holds one cohort: revert the change, or "
        f"{NEW_STORE}"
    )


def check_store_agrees(
    experiment: Experiment, configurations: Sequence[Configuration] | None = None
) -> None:
    """Fail at once, before Ray starts, where the store would refuse the run: a cohort drawn
    otherwise than ``[cohort]`` asks, or a configuration stored under another protocol (each
    field that changed named, old and new). The store's own checks stay: a store another
    process holds cannot be read here, and is left to them.

    Raises
    ------
    ConfigError
        The stored cohort was drawn with another seed, size or sources.
    ProtocolMismatchError
        A configuration's stored answers were made under another protocol.
    """
    if configurations is None:
        configurations = configurations_of(experiment)
    if not experiment.store.exists():
        return
    try:
        con = read_only(experiment.store)
    except StoreError:  # held by a run, or unreadable: the store actor says why
        return
    with con:
        held = _stored_spec(con)
        asked = experiment.cohort.spec() if experiment.cohort.root is not None else None
        if held is not None and asked is not None and experiment.boxes is None and held != asked:
            raise cohort_mismatch(experiment.store, held, asked)
        if has_table(con, "configurations"):
            _check_protocols(experiment, configurations, con)


def _stored_spec(con: duckdb.DuckDBPyConnection) -> CohortSpec | None:
    """What the stored cohort was drawn with; None: the store holds none."""
    row = con.execute("SELECT spec FROM cohort").fetchone() if has_table(con, "cohort") else None
    return None if row is None else CohortSpec.model_validate_json(row[0])


def _check_protocols(
    experiment: Experiment,
    configurations: Sequence[Configuration],
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Each of the experiment's configurations against the one of its name in the store."""
    kept = "protocol_fields" if _has_column(con, "configurations", "protocol_fields") else "NULL"
    stored = {
        row[0]: row[1:]
        for row in con.execute(
            f"SELECT name, protocol, {kept}, settings FROM configurations"
        ).fetchall()
    }
    fields_of = _fields_for(con)
    if fields_of is None:
        return
    for spec, configuration in zip(experiment.configurations, configurations, strict=True):
        if spec.name not in stored:
            continue
        found, found_fields, settings = stored[spec.name]
        fields = fields_of(configuration)
        expected = fields_hash(fields)
        if expected != found:
            where = f"{experiment.store}, configuration {spec.name}"
            label = functools.partial(_as_written, experiment, spec)
            raise protocol_mismatch(where, expected, found, fields, found_fields, settings, label)


def _fields_for(
    con: duckdb.DuckDBPyConnection,
) -> Callable[[Configuration], dict[str, object]] | None:
    """How a configuration's protocol fields are made for the store's questions."""
    if has_table(con, "cohort"):
        row = con.execute("SELECT hash FROM cohort").fetchone()
        if row is not None:
            return functools.partial(protocol_fields, str(row[0]))
    if has_table(con, "box_set"):
        row = con.execute("SELECT benchmark, hash FROM box_set").fetchone()
        if row is not None and row[0] in BENCHMARKS:
            benchmark = cast(Benchmark, row[0])
            return functools.partial(box_protocol_fields, benchmark, str(row[1]))
    return None


def _as_written(experiment: Experiment, spec: ConfigurationSpec, field: str) -> str:
    """A protocol's field named as the experiment file sets it: the model where it is set
    (the configuration's own, else its backend's), the provider at the backend, the decoding
    at the configuration; a field of groundbench's own (a prompt template) as it is."""
    backend = f"backends.{spec.backend}"
    named = {
        "configuration.provider": f"{backend}.provider",
        "configuration.model": (
            f"configurations.{spec.name}.model" if spec.model else f"{backend}.model"
        ),
    }
    if field in named:
        return named[field]
    if field.startswith("configuration.decoding"):
        return f"configurations.{spec.name}.{field.removeprefix('configuration.')}"
    return field


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    found = con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
        [table, column],
    ).fetchone()
    return bool(found and found[0])


def check_backends(
    experiment: Experiment, configurations: Sequence[Configuration] | None = None
) -> None:
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
        if variable is None:  # a server of one's own that takes no key
            continue
        try:
            key_from_env(variable)
        except ConfigError:
            unset.setdefault(variable, []).append(name)
    if unset:
        raise ConfigError(_unset_keys(unset))
    if configurations is None:
        configurations = configurations_of(experiment)
    real, simulated = key_for(None), key_for(experiment.simulator_key)
    for spec, configuration in zip(experiment.configurations, configurations, strict=True):
        key = simulated if experiment.backends[spec.backend].simulated else real
        Client(configuration, key(configuration))  # raises ConfigError; sends nothing
