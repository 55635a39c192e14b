"""The driver: start the actors, feed each backend its pending calls, report, and end cleanly.

The store is the only record of what is done. A run asks it for the pending set, feeds each
backend actor chunks of that set (at most :data:`CHUNKS_IN_FLIGHT` at a time: back-pressure,
never 120,000 futures), and asks again only where a chunk was lost with a dead actor. A backend
whose quota runs out stops; the others go on; the report says what is left and how to resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from conditions import (
    BOX_ATTEMPTS,
    READERS,
    BoxSet,
    Cohort,
    ConditionsError,
    Configuration,
    DataRoot,
    Questions,
    box_set,
    build_cohort,
    load_box_set,
    load_cohort,
    plan_of,
    protocol_of,
    require_current_targets,
    stored_box_set_hash,
    stored_cohort_hash,
    write_box_set,
    write_cohort,
)
from runner._errors import ConfigError, RunnerError
from runner._names import NAMESPACE, actor_name, run_tag
from runner.backends import (
    BEST_EFFORT_ATTEMPTS,
    HEADLINE_ATTEMPTS,
    ApiKey,
    Backend,
    key_from_env,
    provider_named,
)
from runner.distributed._actors import RemoteBackend, RemoteScorer, RemoteSimulator, RemoteStore
from runner.distributed._scorer import scorer_for
from runner.distributed._watch import read_run
from runner.distributed._worker import ChunkOutcome
from runner.experiment import Experiment
from runner.monitor import Reading, Snapshot, plain_lines, snapshot
from runner.store import GridRow, Pending, Progress, Registration
from scoring import ScoringError

CHUNK = 512  # calls per chunk handed to a backend actor
CHUNKS_IN_FLIGHT = 2  # per backend: one running, one queued behind it
MAX_BACKEND_RESTARTS = 3  # per backend and run: the driver starts a new actor and re-feeds it
MAX_SCORING_ROUNDS = 3
NAME_WAIT_S = 20.0  # a scorer that dies leaves answers unscored: the driver sends more

Echo = Callable[[str], None]
Show = Callable[[Snapshot], None]


class RunFailed(RunnerError):
    """The run could not go on (an actor kept dying, the store failed)."""


@dataclass(frozen=True)
class RunOptions:
    address: str | None = None  # a Ray cluster to join; None: RAY_ADDRESS, else a local Ray
    wait_on_quota_s: float | None = None  # wait this long after a quota error, then go on
    max_quota_waits: int = 1
    progress_every_s: float = 5.0


@dataclass(frozen=True)
class BackendReport:
    name: str
    configurations: tuple[str, ...]
    quota: str | None
    restarts: int


@dataclass(frozen=True)
class RunReport:
    """How a run ended: progress per configuration, and what stopped each backend."""

    progress: tuple[Progress, ...]
    backends: tuple[BackendReport, ...]
    elapsed_s: float
    sent_requests: int
    unscored: int
    simulator_calls: int | None = None

    @property
    def complete(self) -> bool:
        return all(p.pending == 0 for p in self.progress)

    @property
    def pending(self) -> int:
        return sum(p.pending for p in self.progress)


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
        read = READERS[section.benchmark](section.file, experiment.images)
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


def check_backends(experiment: Experiment) -> None:
    """Fail before anything starts when a key variable is not set or a configuration asks for
    a setting its provider's API cannot express."""
    for name, backend in experiment.backends.items():
        if backend.simulated:
            continue
        variable = backend.api_key_env or provider_named(backend.provider).key_variable
        try:
            key_from_env(variable)
        except ConfigError as exc:
            raise ConfigError(f"backend {name}: {exc}") from None
    for spec in experiment.configurations:
        Backend(experiment.configuration(spec, None), ApiKey("not-sent"))  # raises ConfigError


def run_experiment(
    experiment: Experiment,
    options: RunOptions = RunOptions(),
    echo: Echo = print,
    experiment_file: Path | None = None,
    show: Show | None = None,
) -> RunReport:
    """Run every pending call of ``experiment`` and score the answers; see the module docstring.

    ``show`` receives the live view every ``options.progress_every_s`` (default: its plain
    lines, through ``echo``); ``echo`` gets the run's messages and its closing summary.

    Joins the Ray cluster at ``options.address`` (or ``RAY_ADDRESS``, as under ``ray job
    submit``), else starts a local one; one already initialised in this process is used as is.
    """
    check_backends(experiment)
    questions = ensure_questions(experiment)
    started_ray = _connect(options.address)
    try:
        run = _Run(experiment, questions, options, echo, experiment_file, show or _lines(echo))
        return asyncio.run(run.go())
    finally:
        if started_ray:
            ray.shutdown()


def _lines(echo: Echo) -> Show:
    def show(view: Snapshot) -> None:
        for line in plain_lines(view):
            echo(line)

    return show


def _connect(address: str | None) -> bool:
    if ray.is_initialized():
        return False
    # Ray's own notices (token set-up, start-up) would drown the progress lines; errors stay.
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": True}
    if address is not None:
        ray.init(address=address, **kwargs)
    elif os.environ.get("RAY_ADDRESS"):
        ray.init(**kwargs)
    else:
        ray.init(include_dashboard=False, **kwargs)
    return True


@dataclass
class _BackendRun:
    name: str
    configurations: tuple[Configuration, ...]
    simulated: bool  # on the built-in simulator, which listens on the driver node's loopback
    options: dict[str, Any]  # its actor's Ray options, placement aside
    args: tuple[Any, ...]  # its actor's constructor arguments
    handle: Any = None
    node: str | None = None  # where its actor was started last
    quota: str | None = None
    restarts: int = 0
    sent: int = 0
    lost: list[Pending] = field(default_factory=list)


class _Run:
    def __init__(
        self,
        experiment: Experiment,
        questions: Questions,
        options: RunOptions,
        echo: Echo,
        experiment_file: Path | None,
        show: Show,
    ) -> None:
        self.show = show
        self.experiment = experiment
        self.questions = questions
        self.options = options
        self.echo = echo
        self.experiment_file = experiment_file
        self.node = NodeAffinitySchedulingStrategy(
            node_id=ray.get_runtime_context().get_node_id(), soft=False
        )
        self.cache = experiment.store.with_suffix(".variants")
        self.tag = run_tag(experiment.store)
        self.store: Any = None
        self.simulator: Any = None
        self.backends: list[_BackendRun] = []
        self.scorers: list[Any] = []
        token = secrets.token_hex(3)
        self._turn = itertools.count()  # backends take the cluster's nodes in turn
        self._scorer_names = (f"scorer-{token}-{n}" for n in itertools.count())
        self._last_reading: Reading | None = None

    async def go(self) -> RunReport:
        begun = time.monotonic()
        options = RemoteStore.options(
            num_cpus=0,
            scheduling_strategy=self.node,
            name=actor_name(self.tag, "store"),
            namespace=NAMESPACE,
        )
        # Opening is the store actor's readiness: its errors (lock, schema) come back whole.
        self.store = await _when_name_free(
            lambda: options.remote(self.experiment.store),
            lambda store: store.open.remote(),
            "another run of this experiment is still going (its store actor is alive); "
            "wait for it or stop it",
        )
        try:
            return await self._go(begun)
        finally:
            # Whatever happened, no actor of this run outlives it (their names would block
            # the next run of the experiment).
            for b in self.backends:
                ray.kill(b.handle)
            for scorer in self.scorers:
                ray.kill(scorer)
            await _quietly(self.store.close.remote())
            ray.kill(self.store)
            if self.simulator is not None:
                await _quietly(self.simulator.stop.remote())
                ray.kill(self.simulator)

    async def _go(self, begun: float) -> RunReport:
        questions_ref = ray.put(self.questions)
        url = await self._start_simulator(questions_ref)
        configurations = [
            self.experiment.configuration(c, url) for c in self.experiment.configurations
        ]
        reread = await _call(self.store.register.remote(*self._grid(configurations)))
        for name, was, answers in reread:
            self.echo(
                f"configuration {name}: its answers are read by {self.experiment.reading(name)} "
                f"now (were {was}): {answers:,} scores made again, no call sent again"
            )
        # Backends build requests: the questions are all they need of the cohort.
        asking_ref = ray.put(self.questions.for_asking())
        self.backends = backends = self._start_backends(configurations, asking_ref)
        boxes = self.experiment.boxes
        reader = boxes.reading if boxes is not None else None
        scorer_ref = ray.put(scorer_for(self.questions, self.experiment.conventions, reader))
        self.scorers = self._start_scorers(scorer_ref, self.experiment.scorers)
        scoring = [s.run.remote(self.store) for s in self.scorers]  # live: scored as they land
        watcher = asyncio.create_task(self._watch(begun))
        try:
            await asyncio.gather(*(self._drive(b) for b in backends))
            await _call(self.store.finish.remote())
            unscored = await self._score_to_the_end(scoring, scorer_ref)
        finally:
            watcher.cancel()
        await self._show(begun)  # the view's last frame: the run as it ends
        progress = tuple(await _call(self.store.progress.remote()))
        calls = await _call(self.simulator.calls.remote()) if self.simulator is not None else None
        report = RunReport(
            progress=progress,
            backends=tuple(
                BackendReport(b.name, tuple(c.name for c in b.configurations), b.quota, b.restarts)
                for b in backends
            ),
            elapsed_s=time.monotonic() - begun,
            sent_requests=sum(b.sent for b in backends),
            unscored=unscored,
            simulator_calls=calls,
        )
        for line in summary_lines(report, self.experiment_file):
            self.echo(line)
        return report

    # -- start ------------------------------------------------------------------------------

    async def _start_simulator(self, questions_ref: Any) -> str | None:
        if not self.experiment.simulated:
            return None
        self.simulator = RemoteSimulator.options(num_cpus=0, scheduling_strategy=self.node).remote(
            questions_ref, self.experiment.images, self.cache, self.experiment.simulator
        )
        url: str = await _call(self.simulator.start.remote())
        return url

    def _grid(
        self, configurations: Sequence[Configuration]
    ) -> tuple[list[Registration], list[GridRow]]:
        registrations: list[Registration] = []
        grid: list[GridRow] = []
        boxes = isinstance(self.questions, BoxSet)
        for c in configurations:
            attempts = (
                BOX_ATTEMPTS
                if boxes
                else BEST_EFFORT_ATTEMPTS
                if c.best_effort
                else HEADLINE_ATTEMPTS
            )
            registrations.append(
                Registration(
                    name=c.name,
                    protocol=protocol_of(self.questions, c),
                    provider=c.provider,
                    model=c.model,
                    attempts=attempts,
                    settings=json.dumps(c.output_settings(), sort_keys=True),
                    reading=self.experiment.reading(c.name),
                )
            )
            keys = plan_of(self.questions, [c], self.experiment.budgets, self.experiment.box)
            grid.extend(
                GridRow(k.configuration, k.condition, k.budget, k.qid, attempts) for k in keys
            )
        return registrations, grid

    def _start_backends(
        self, configurations: Sequence[Configuration], questions_ref: Any
    ) -> list[_BackendRun]:
        by_name = {c.name: c for c in configurations}
        runs = []
        for name, spec in self.experiment.backends.items():
            members = tuple(by_name[c.name] for c in self.experiment.configurations_of(name))
            if not members:
                continue
            options: dict[str, Any] = {
                # The driver restarts a dead backend actor itself and re-feeds it from the
                # store (Ray's own restarts would replay its arguments, which hold the
                # questions).
                "num_cpus": 0,
                "max_restarts": 0,
                "name": actor_name(self.tag, f"backend-{name}"),
                "namespace": NAMESPACE,
            }
            key = (self.experiment.simulator.api_key or "simulator") if spec.simulated else None
            args = (members, questions_ref, self.experiment.images, self.cache, self.store, key)
            run = _BackendRun(name, members, spec.simulated, options, args)
            run.handle = self._place(run)
            runs.append(run)
        return runs

    def _place(self, run: _BackendRun) -> Any:
        """Start ``run``'s actor (again, after it died). A simulated backend stays on the
        driver's node, by its simulator; others take the cluster's live nodes in turn (each
        backend's encoding and connections on a node of its own when there are enough), and
        a restart avoids the node its last actor died on."""
        run.node = self.node.node_id if run.simulated else self._next_node(avoid=run.node)
        # Hard affinity: Ray's SPREAD and soft affinity both left actors that ask for no CPU
        # on the driver's node, and soft affinity to a node that just died fails the actor.
        strategy = NodeAffinitySchedulingStrategy(node_id=run.node, soft=False)
        return RemoteBackend.options(**run.options, scheduling_strategy=strategy).remote(*run.args)

    async def _restarted(self, backend: _BackendRun) -> Any:
        """A new actor for ``backend``, once the dead one's name is free."""
        ray.kill(backend.handle, no_restart=True)
        return await _when_name_free(
            lambda: self._place(backend),
            lambda handle: handle.__ray_ready__.remote(),
            f"backend {backend.name}: cannot restart its actor",
        )

    def _next_node(self, avoid: str | None) -> str:
        own = self.node.node_id
        alive = [n["NodeID"] for n in ray.nodes() if n["Alive"]]  # type: ignore[no-untyped-call]
        others = sorted(node for node in alive if node not in (own, avoid))
        order: list[str] = [*others, own]  # the driver's node last: it holds the store
        return order[next(self._turn) % len(order)]

    def _start_scorers(self, scorer_ref: Any, wanted: int) -> list[Any]:
        # Each scorer holds a CPU; never ask for more than the cluster has, or some would wait
        # for ever.
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        count = max(1, min(wanted, cpus))
        return [
            RemoteScorer.options(
                num_cpus=1,
                max_concurrency=2,  # a second thread answers node() while run() works
                scheduling_strategy="SPREAD",
                # Named, so a watcher can find them; unique, since a scorer of a killed run
                # may still be dying when the next run starts.
                name=actor_name(self.tag, next(self._scorer_names)),
                namespace=NAMESPACE,
            ).remote(scorer_ref)
            for _ in range(count)
        ]

    # -- feeding a backend ------------------------------------------------------------------

    async def _drive(self, backend: _BackendRun) -> None:
        names = [c.name for c in backend.configurations]
        calls: list[Pending] = await _call(self.store.pending.remote(names))
        waits = 0
        while calls:
            quota = await self._feed(backend, calls)
            if backend.lost:  # the actor died: start another; the store says what is left
                backend.restarts += 1
                if backend.restarts > MAX_BACKEND_RESTARTS:
                    raise RunFailed(
                        f"backend {backend.name}: its actor died {backend.restarts} times"
                    )
                lost = {_key(p) for p in backend.lost}
                backend.lost = []
                backend.handle = await self._restarted(backend)
                now = await _call(self.store.pending.remote(names))
                calls = [p for p in now if _key(p) in lost]
                self.echo(f"backend {backend.name}: actor restarted; {len(calls)} calls re-sent")
                continue
            calls = []
            if quota is None:
                break
            backend.quota = quota
            wait = self.options.wait_on_quota_s
            if wait is None or waits >= self.options.max_quota_waits:
                self.echo(f"backend {backend.name}: quota exhausted, stopped: {quota}")
                break
            waits += 1
            self.echo(f"backend {backend.name}: quota exhausted; trying again in {wait:g} s")
            await asyncio.sleep(wait)
            await _call(backend.handle.resume_after_quota.remote())
            backend.quota = None
            calls = await _call(self.store.pending.remote(names))

    async def _feed(self, backend: _BackendRun, calls: Sequence[Pending]) -> str | None:
        """Hand ``calls`` to the actor a chunk at a time; the quota message if it stopped.

        A chunk lost with a dead actor goes to ``backend.lost`` with every chunk not yet fed.
        """
        chunks = [list(calls[i : i + CHUNK]) for i in range(0, len(calls), CHUNK)]
        running: dict[asyncio.Future[ChunkOutcome], list[Pending]] = {}
        try:
            return await self._feed_chunks(backend, chunks, running)
        except BaseException:
            for future in running:  # interrupted: nobody will read these any more
                future.cancel()
            raise

    async def _feed_chunks(
        self,
        backend: _BackendRun,
        chunks: list[list[Pending]],
        running: dict[asyncio.Future[ChunkOutcome], list[Pending]],
    ) -> str | None:
        quota: str | None = None
        died = False
        while chunks or running:
            while chunks and len(running) < CHUNKS_IN_FLIGHT and quota is None and not died:
                chunk = chunks.pop(0)
                ref = backend.handle.run.remote(chunk)
                running[asyncio.wrap_future(ref.future())] = chunk
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                chunk = running.pop(future)
                try:
                    outcome = future.result()
                except RayActorError:
                    died = True
                    backend.lost.extend(chunk)
                    continue
                except RayTaskError as exc:
                    raise _cause(exc) from None
                backend.sent += outcome.calls
                quota = quota or outcome.quota
            if died:
                backend.lost.extend(p for c in chunks for p in c)
                chunks = []
        return quota

    # -- scoring ----------------------------------------------------------------------------

    async def _score_to_the_end(self, runs: list[Any], scorer_ref: Any) -> int:
        """Wait for the scorers (started with the run) until every stored answer has a score."""
        for _ in range(MAX_SCORING_ROUNDS):
            results = await asyncio.gather(*runs, return_exceptions=True)
            for r in results:
                if isinstance(r, RayTaskError):
                    raise _cause(r) from None
            left: int = await _call(self.store.unscored.remote())
            if left == 0:
                break
            # A scorer died holding answers: queue them again, with a fresh scorer for each
            # that died, and score what is left.
            await _call(self.store.requeue_unscored.remote())
            self.scorers = [
                self._start_scorers(scorer_ref, 1)[0] if isinstance(r, RayActorError) else s
                for s, r in zip(self.scorers, results, strict=True)
            ]
            runs = [s.run.remote(self.store) for s in self.scorers]
        unscored: int = await _call(self.store.unscored.remote())
        return unscored

    # -- progress ---------------------------------------------------------------------------

    async def _watch(self, begun: float) -> None:
        while True:
            await asyncio.sleep(self.options.progress_every_s)
            await self._show(begun)

    async def _show(self, begun: float) -> None:
        prices = {name: b.prices for name, b in self.experiment.backends.items()}
        now = await read_run(self.store, {b.name: b.handle for b in self.backends})
        self.show(snapshot(now, self._last_reading, begun, prices))
        self._last_reading = now


def summary_lines(report: RunReport, experiment_file: Path | None) -> list[str]:
    """What the run did, what is left, and how to resume."""
    lines = [
        f"run ended after {report.elapsed_s:.1f} s: {report.sent_requests:,} requests sent",
    ]
    for p in report.progress:
        state = "complete" if p.pending == 0 else f"{p.pending:,} pending ({p.errored:,} errored)"
        lines.append(
            f"  {p.configuration}: {p.complete:,}/{p.requests:,} requests complete, {state}; "
            f"{p.answered:,} answers, {p.scored:,} scored"
        )
    for b in report.backends:
        if b.quota is not None:
            lines.append(f"  backend {b.name} stopped: quota exhausted ({b.quota})")
    if report.unscored:
        lines.append(f"  {report.unscored:,} stored answers are not scored yet")
    if not report.complete:
        command = f"groundbench run {experiment_file}" if experiment_file else "the same command"
        lines.append(
            f"{report.pending:,} requests left: run {command} again to send exactly those"
            + (" (after the quota resets)" if any(b.quota for b in report.backends) else "")
        )
    return lines


async def _when_name_free(
    start: Callable[[], Any], ready: Callable[[Any], Any], failure: str
) -> Any:
    """Start a named actor and wait until ``ready`` says it serves; while an actor of that
    name (a killed run's, a dead backend's) is still going away, try again for a while."""
    deadline = time.monotonic() + NAME_WAIT_S
    while True:
        try:
            handle = start()
            await _call(ready(handle))
            return handle
        except ValueError as exc:  # Ray: the name is taken
            if time.monotonic() >= deadline:
                raise RunFailed(f"{failure}: {exc}") from None
            await asyncio.sleep(0.2)


def _key(p: Pending) -> tuple[str, str, int, str]:
    return (p.configuration, p.condition, p.budget, p.qid)


async def _call(ref: Any) -> Any:
    """Await an actor call; an error of ours raised inside the actor comes out as itself."""
    try:
        return await ref
    except RayTaskError as exc:
        raise _cause(exc) from None


def _cause(exc: RayTaskError) -> BaseException:
    cause = exc.cause
    if isinstance(cause, RunnerError | ConditionsError | ScoringError):
        return cause
    return exc


async def _quietly(ref: Any) -> None:
    # Tearing down: the actor may be gone already.
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout=10)
