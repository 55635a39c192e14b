"""The driver: the run's lifecycle on Ray — start the actors, let the feeder drive them, report,
and end cleanly.

What a run asks is settled before any actor starts (:mod:`runner.plan`); which calls go where, and
what happens when an actor dies or a quota runs out, is the feeder's policy
(:mod:`._feeder`); every Ray call goes through :mod:`._ray`. The store is the only record of
what is done; the report says what is left and how to resume.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from conditions import Configuration, Questions
from runner._errors import RunnerError
from runner._names import NAMESPACE, actor_name, run_tag
from runner.backends import what_to_do
from runner.batch import BatchOutcome
from runner.check import CheckReport, cap_lines, check, check_lines, stored_progress
from runner.distributed import _address, _ray
from runner.distributed._actors import (
    RemoteBackend,
    RemoteBatchBackend,
    RemoteScorer,
    RemoteSimulator,
    RemoteStore,
)
from runner.distributed._batch_worker import BatchSpec
from runner.distributed._feeder import (
    Feed,
    Feeder,
    FeedPolicy,
    RunFailed,
    WorkerLost,
    forget,
    score_to_the_end,
)
from runner.distributed._scorer import scorer_for
from runner.distributed._spend import SpendCap
from runner.distributed._store_port import StorePort
from runner.distributed._watch import read_run
from runner.distributed._worker import Traffic
from runner.experiment import Experiment
from runner.monitor import Reading, Snapshot, plain_lines, snapshot
from runner.plan import RequestId, check_backends, ensure_questions, first_questions, grid_of
from runner.store import ErrorCount, Pending, Progress, grid_table

Echo = Callable[[str], None]
Show = Callable[[Snapshot], None]
_T = TypeVar("_T")


@dataclass(frozen=True)
class RunOptions:
    address: str | None = None  # a Ray cluster to join; None: RAY_ADDRESS, else a local Ray
    wait_on_quota_s: float | None = None  # wait this long after a quota error, then go on
    max_quota_waits: int = 1
    progress_every_s: float = 5.0
    max_spend: float | None = None  # US dollars this run may spend (None: no cap)
    limit: int | None = None  # only the first N questions of every cell (a smoke run)
    preflight: bool = False  # one call per configuration and decoding first (the CLI: on)
    output_tokens: int | None = None  # the stated mean output per call, for the estimates


class PreflightFailed(RunnerError):
    """A pre-flight call failed: the run would pay for calls that fail the same way."""


@dataclass(frozen=True)
class BackendReport:
    name: str
    configurations: tuple[str, ...]
    quota: str | None
    restarts: int
    refused: str | None = None  # the refusal of its key or model that stopped it
    spent: float = 0.0  # dollars this run, from its answers' tokens and the prices
    capped: bool = False  # stopped by the spending cap
    learnt_per_minute: float | None = None  # the limit its 429s taught, below the configured
    batch: BatchReport | None = None  # a batch-mode backend's batches


@dataclass(frozen=True)
class BatchReport:
    """What a batch-mode backend's batches did this run, and what they saved."""

    created: int  # batches created at the provider
    read: int  # batches whose results were stored
    unrun: int  # lines a batch never ran (expired, cancelled, failed): sent again or pending
    problems: int  # result lines that could not be read (batch_problems)
    online_cost: float  # what its answers would have cost online
    not_made: str | None = None  # a file or batch the provider refused: no more were made


@dataclass(frozen=True)
class RunReport:
    """How a run ended: progress per configuration, and what stopped each backend."""

    progress: tuple[Progress, ...]
    backends: tuple[BackendReport, ...]
    elapsed_s: float
    requests_finished: int  # requests whose attempts ended (answered, or an error stored)
    unscored: int
    simulator_calls: int | None = None
    # HTTP calls sent, and failures retried within an attempt
    traffic: Traffic = field(default_factory=Traffic)
    attempts_answered: int = 0
    transient_ended: int = 0  # attempts that a transient failure ended (stored as errors)
    errors: tuple[ErrorCount, ...] = ()  # what keeps the requests left from completing
    spent_total: float = 0.0  # dollars of every answer in the store, this run's and earlier
    max_spend: float | None = None
    limit: int | None = None
    limited_left: int = 0  # with a limit: its requests not complete
    held: int = 0  # requests open batches hold (collected by a batch-mode run, never resent)

    @property
    def complete(self) -> bool:
        return all(p.pending == 0 for p in self.progress)

    @property
    def done(self) -> bool:
        """Every request this run was asked to send is complete: the grid's, or with a limit,
        the limit's."""
        return self.limited_left == 0 if self.limit is not None else self.complete

    preflight_spent: float = 0.0  # dollars of the pre-flight's calls

    @property
    def spent(self) -> float:
        return self.preflight_spent + sum(b.spent for b in self.backends)

    @property
    def pending(self) -> int:
        return sum(p.pending for p in self.progress)


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
    check_backends(experiment)  # a key missing fails before Ray starts
    # Ray takes seconds to start, most of them spent waiting on its own processes: the
    # questions are read (or built) and the pre-flight's calls made meanwhile, on a thread.
    prepared = _beside(lambda: _prepared(experiment, options, echo))
    started_ray = False
    try:
        try:
            started_ray = _ray.connect(options.address)
        except Exception:
            prepared.result()  # its error, if any, is the one a user would have seen first
            raise
        questions, estimate = prepared.result()
        run = _Run(experiment, questions, options, echo, experiment_file, show or _lines(echo))
        if estimate is not None:
            run.estimated(estimate)
        return asyncio.run(run.go())
    finally:
        if started_ray:
            _ray.shutdown()


def _prepared(
    experiment: Experiment, options: RunOptions, echo: Echo
) -> tuple[Questions, CheckReport | None]:
    """The experiment's questions, and the estimate the spending cap starts from: the
    pre-flight's (its calls made), else the cap's, else None."""
    questions = ensure_questions(experiment)
    if options.preflight:
        return questions, preflight(experiment, questions, options, echo)
    if options.max_spend is None:
        return questions, None
    # The cap needs a cost per call before any is measured.
    stored = stored_progress(experiment)
    estimate = asyncio.run(
        check(experiment, questions, stored, stated_output=options.output_tokens, call=False)
    )
    for line in cap_lines(estimate.costs, options.max_spend):
        echo(line)
    return questions, estimate


def _beside(work: Callable[[], _T]) -> Future[_T]:
    """``work`` on a thread of its own. A daemon: Ctrl-C ends the run without waiting for it."""
    future: Future[_T] = Future()

    def target() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # handed to whoever reads the result
            future.set_exception(exc)

    threading.Thread(target=target, name="groundbench-prepare", daemon=True).start()
    return future


def preflight(
    experiment: Experiment, questions: Questions, options: RunOptions, echo: Echo
) -> CheckReport:
    """Call each configuration of a real backend once per decoding, and say what the calls
    left will cost and take (a simulated backend costs nothing and is not called).

    Raises
    ------
    PreflightFailed
        A call failed: each failure with what to do is echoed first.
    """
    stored = stored_progress(experiment)
    report = asyncio.run(
        check(experiment, questions, stored, stated_output=options.output_tokens, only_real=True)
    )
    for line in check_lines(report, options.max_spend):
        echo(f"pre-flight: {line}")
    if not report.ok:
        failed = sum(not p.ok for p in report.probes)
        raise PreflightFailed(
            f"pre-flight: {failed} of {len(report.probes)} calls failed (see above); nothing "
            "was run. Put it right and run again, or skip the pre-flight with --no-check"
        )
    return report


def _lines(echo: Echo) -> Show:
    def show(view: Snapshot) -> None:
        for line in plain_lines(view):
            echo(line)

    return show


@dataclass
class _BackendActor:
    """How one backend's actor is started, and where it was last."""

    name: str
    configurations: tuple[Configuration, ...]
    simulated: bool  # on the built-in simulator, which listens on the driver node's loopback
    options: dict[str, Any]  # its actor's Ray options, placement aside
    args: tuple[Any, ...]  # its actor's constructor arguments
    batch: bool  # in batch mode: a RemoteBatchBackend, driven by _drive_batches
    handle: Any = None
    node: str | None = None  # where its actor was started last


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
        self.node = _ray.driver_node()
        self.cache = experiment.store.with_suffix(".variants")
        self.tag = run_tag(experiment.store)
        self.store: Any = None
        self.simulator: Any = None
        self.actors: list[_BackendActor] = []
        self.feeds: list[Feed] = []
        self.scorers: list[Any] = []
        self.scoring: list[asyncio.Task[Any]] = []  # every scorer run started
        token = secrets.token_hex(3)
        self._turn = itertools.count()  # backends take the cluster's nodes in turn
        self._scorer_names = (f"scorer-{token}-{n}" for n in itertools.count())
        self._last_reading: Reading | None = None
        self.estimate: CheckReport | None = None  # the pre-flight's: the cost per call
        self.cap = SpendCap(options.max_spend) if options.max_spend is not None else None
        self.allowed: frozenset[RequestId] | None = None  # with --limit: the requests to send
        self.preflight_spent = 0.0
        self._batches: dict[str, BatchReport] = {}  # batch-mode backends' reports

    def estimated(self, estimate: CheckReport) -> None:
        """The pre-flight's (or the cap's) estimate: the cost per call the cap starts from;
        what the pre-flight's own calls cost is this run's spend."""
        self.estimate = estimate
        self.preflight_spent = estimate.spent
        if self.cap is not None:
            self.cap.spent += estimate.spent

    async def go(self) -> RunReport:
        begun = time.monotonic()
        options = RemoteStore.options(
            num_cpus=0,
            scheduling_strategy=_ray.pinned(self.node),
            name=actor_name(self.tag, "store"),
            namespace=NAMESPACE,
        )
        self.store = await _ray.named(
            lambda: options.remote(self.experiment.store),
            "another run of this experiment is still going (its store actor is alive); "
            "wait for it or stop it",
        )
        note = _address.here(_ray.cluster_address(), NAMESPACE, _ray.token_auth())
        try:
            return await self._go(begun, note)
        finally:
            _address.remove_note(self.experiment.store, note)
            # Whatever happened, no actor of this run outlives it (their names would block
            # the next run of the experiment), and no scorer run is left to report its
            # actor's death after the run has ended.
            forget(self.scoring)
            for b in self.actors:
                _ray.kill(b.handle)
            for scorer in self.scorers:
                _ray.kill(scorer)
            await _ray.quietly(self.store.close.remote())
            _ray.kill(self.store)
            if self.simulator is not None:
                await _ray.quietly(self.simulator.stop.remote())
                _ray.kill(self.simulator)

    def _note_where(self, note: _address.RunAddress) -> None:
        """Note where the run is, beside its store, for ``monitor`` and ``sql``; say so."""
        _address.write_note(self.experiment.store, note)
        experiment = self.experiment_file or "EXPERIMENT.toml"
        self.echo(
            f"attach from another terminal: groundbench monitor {experiment} (or groundbench "
            f'sql {self.experiment.store} "SELECT status, count(*) FROM request_status GROUP '
            f'BY ALL"); the run: {_address.described(note)}'
        )

    async def _go(self, begun: float, note: _address.RunAddress) -> RunReport:
        # The actors' processes start while the store opens: each is a Python process that
        # imports the runner, seconds on a small machine, and the first call waits for them.
        opening = self.store.open.remote()
        questions_ref = _ray.put(self.questions)
        url = await self._start_simulator(questions_ref)
        configurations = [
            self.experiment.configuration(c, url) for c in self.experiment.configurations
        ]
        # Backends build requests: the questions are all they need of the cohort.
        asking_ref = _ray.put(self.questions.for_asking())
        self.actors = self._start_backends(configurations, asking_ref)
        # Opening is the store actor's readiness: its errors (lock, schema) come back whole,
        # before the run says where it is or registers anything.
        await _ray.call(opening)
        self._note_where(note)
        grid = grid_of(self.experiment, self.questions, configurations)
        registering = self.store.register.remote(
            list(grid.registrations), grid_table(grid.rows), self.experiment.images
        )
        reread = await _ray.call(registering)
        for name, was, answers in reread:
            self.echo(
                f"configuration {name}: its answers are read by {self.experiment.reading(name)} "
                f"now (were {was}): {answers:,} scores made again, no call sent again"
            )
        self.feeds = [self._feed_of(actor) for actor in self.actors]
        boxes = self.experiment.boxes
        reader = boxes.reading if boxes is not None else None
        scorer_ref = _ray.put(scorer_for(self.questions, self.experiment.conventions, reader))
        # The scorers start with the backends, not once they serve: answers are scored live
        # from the first that lands, however slowly a busy machine starts processes.
        self.scorers = self._start_scorers(scorer_ref, self.experiment.scorers)
        scoring = [self._scoring(s) for s in self.scorers]
        store = StorePort.of_actor(self.store)
        if self.options.limit is not None:
            self.allowed = first_questions(grid.rows, self.questions, self.options.limit)
            store = store.limited(self.allowed)
        feeder = Feeder(store, self._policy(), self.echo, cap=self.cap)
        watcher = asyncio.create_task(self._watch(begun))
        pairs = list(zip(self.feeds, self.actors, strict=True))
        try:
            await asyncio.gather(
                *(feeder.drive(f) for f, a in pairs if not a.batch),
                *(self._drive_batches(f, a) for f, a in pairs if a.batch),
            )
            await _ray.call(self.store.finish.remote())
            unscored = await score_to_the_end(
                store, scoring, lambda i, lost: self._score_again(i, lost, scorer_ref)
            )
        finally:
            watcher.cancel()
        await self._show(begun)  # the view's last frame: the run as it ends
        return await self._report(begun, unscored)

    async def _drive_batches(self, feed: Feed, actor: _BackendActor) -> None:
        """Run a batch-mode backend's batches to the end; a dead actor is replaced, and the new
        one collects the batches the ledger holds (none is sent again)."""
        if self.cap is not None:
            self.echo(
                f"backend {feed.name}: batch mode; --max-spend does not limit it (a batch is "
                "committed whole when it is created): its spend is counted after"
            )
        while True:
            try:
                outcome: BatchOutcome = await _ray.lost_if_dead(
                    actor.handle.run.remote(self.allowed)
                )
            except WorkerLost:
                feed.restarts += 1
                if feed.restarts > FeedPolicy.max_restarts:
                    died = f"backend {feed.name}: its actor died {feed.restarts} times"
                    raise RunFailed(died) from None
                actor.handle = await self._restarted(actor)
                self.echo(
                    f"backend {feed.name}: actor restarted; it collects the open batches, "
                    "sending none of their requests again"
                )
                continue
            self._settle_batches(feed, outcome)
            return

    def _settle_batches(self, feed: Feed, outcome: BatchOutcome) -> None:
        prices = self.experiment.backends[feed.name].prices
        feed.finished += outcome.finished
        feed.answered += outcome.answered
        feed.input_tokens += outcome.input_tokens
        feed.output_tokens += outcome.output_tokens
        feed.spent += prices.batch_cost(outcome.input_tokens, outcome.output_tokens)
        feed.quota, feed.refused = outcome.quota, outcome.refused
        self._batches[feed.name] = BatchReport(
            outcome.created,
            outcome.read,
            outcome.unrun,
            outcome.problems,
            prices.cost(feed.input_tokens, feed.output_tokens),
            outcome.not_made,
        )
        if outcome.quota is not None:
            self.echo(
                f"backend {feed.name}: quota exhausted, no batch created after: {outcome.quota}"
            )
        if outcome.refused is not None:
            self.echo(f"backend {feed.name}: stopped, no call of it can succeed: {outcome.refused}")

    def _policy(self) -> FeedPolicy:
        return FeedPolicy(
            wait_on_quota_s=self.options.wait_on_quota_s,
            max_quota_waits=self.options.max_quota_waits,
        )

    async def _report(self, begun: float, unscored: int) -> RunReport:
        progress = tuple(await _ray.call(self.store.progress.remote()))
        errors = tuple(await _ray.call(self.store.error_counts.remote()))
        simulator = self.simulator
        calls = await _ray.call(simulator.calls.remote()) if simulator is not None else None
        report = RunReport(
            progress=progress,
            backends=tuple(
                BackendReport(
                    f.name,
                    f.configurations,
                    f.quota,
                    f.restarts,
                    f.refused,
                    f.spent,
                    f.capped,
                    f.learnt_per_minute,
                    self._batches.get(f.name),
                )
                for f in self.feeds
            ),
            elapsed_s=time.monotonic() - begun,
            requests_finished=sum(f.finished for f in self.feeds),
            unscored=unscored,
            simulator_calls=calls,
            traffic=sum((f.traffic for f in self.feeds), Traffic()),
            attempts_answered=sum(f.answered for f in self.feeds),
            transient_ended=sum(f.transient_ended for f in self.feeds),
            errors=errors,
            spent_total=self._spent_in_store(progress),
            max_spend=self.options.max_spend,
            limit=self.options.limit,
            limited_left=await self._limited_left(),
            held=await _ray.call(self.store.held.remote()),
            preflight_spent=self.preflight_spent,
        )
        for line in summary_lines(report, self.experiment_file):
            self.echo(line)
        return report

    def _spent_in_store(self, progress: Sequence[Progress]) -> float:
        backend_of = {c.name: c.backend for c in self.experiment.configurations}
        prices = {name: b.prices for name, b in self.experiment.backends.items()}
        total = 0.0
        for p in progress:
            if p.configuration not in backend_of:
                continue
            price = prices[backend_of[p.configuration]]
            online = (
                p.input_tokens - p.batch_input_tokens,
                p.output_tokens - p.batch_output_tokens,
            )
            total += price.cost(*online) + price.batch_cost(
                p.batch_input_tokens, p.batch_output_tokens
            )
        return total

    async def _limited_left(self) -> int:
        if self.allowed is None:
            return 0
        names = [c.name for c in self.experiment.configurations]
        left: list[Pending] = await _ray.call(self.store.pending.remote(names))
        return sum((p.configuration, p.condition, p.budget, p.qid) in self.allowed for p in left)

    # -- backends ---------------------------------------------------------------------------

    async def _start_simulator(self, questions_ref: Any) -> str | None:
        if not self.experiment.simulated:
            return None
        self.simulator = RemoteSimulator.options(
            num_cpus=0, scheduling_strategy=_ray.pinned(self.node)
        ).remote(questions_ref, self.experiment.images, self.cache, self.experiment.simulator)
        url: str = await _ray.call(self.simulator.start.remote())
        return url

    def _start_backends(
        self, configurations: Sequence[Configuration], questions_ref: Any
    ) -> list[_BackendActor]:
        by_name = {c.name: c for c in configurations}
        actors = []
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
            args: tuple[Any, ...] = (
                members, questions_ref, self.experiment.images, self.cache, self.store, key
            )  # fmt: skip
            batch = spec.mode == "batch"
            if batch:
                spool = self.experiment.store.with_suffix(".batches")
                args += (BatchSpec(name, spec.batch, spool, spec.simulated),)
            actor = _BackendActor(name, members, spec.simulated, options, args, batch)
            actor.handle = self._place(actor)
            actors.append(actor)
        return actors

    def _feed_of(self, actor: _BackendActor) -> Feed:
        async def restart() -> _ray.ActorBackend:
            actor.handle = await self._restarted(actor)
            return _ray.ActorBackend(actor.handle)

        names = tuple(c.name for c in actor.configurations)
        prices = self.experiment.backends[actor.name].prices
        return Feed(
            actor.name,
            names,
            _ray.ActorBackend(actor.handle),
            restart,
            cost=prices.batch_cost if actor.batch else prices.cost,
            call_cost=self._call_cost(names),
        )

    def _call_cost(self, configurations: Sequence[str]) -> float:
        """The dearest estimated call among ``configurations`` (the spending cap's prior)."""
        if self.estimate is None:
            return 0.0
        costs = [c.per_call for c in self.estimate.costs if c.configuration in configurations]
        return max(costs, default=0.0)

    def _place(self, actor: _BackendActor) -> Any:
        """Start ``actor`` (again, after it died). A simulated backend stays on the driver's
        node, by its simulator; others take the cluster's live nodes in turn (each backend's
        encoding and connections on a node of its own when there are enough), and a restart
        avoids the node its last actor died on."""
        actor.node = self.node if actor.simulated else self._next_node(avoid=actor.node)
        strategy = _ray.pinned(actor.node)
        remote = RemoteBatchBackend if actor.batch else RemoteBackend
        return remote.options(**actor.options, scheduling_strategy=strategy).remote(*actor.args)

    async def _restarted(self, actor: _BackendActor) -> Any:
        """A new actor for ``actor``'s backend, once the dead one's name is free."""
        _ray.kill(actor.handle)
        return await _ray.when_name_free(
            lambda: self._place(actor),
            lambda handle: handle.__ray_ready__.remote(),
            f"backend {actor.name}: cannot restart its actor",
        )

    def _next_node(self, avoid: str | None) -> str:
        others = sorted(n for n in _ray.alive_nodes() if n not in (self.node, avoid))
        order: list[str] = [*others, self.node]  # the driver's node last: it holds the store
        return order[next(self._turn) % len(order)]

    # -- scorers ----------------------------------------------------------------------------

    def _start_scorers(self, scorer_ref: Any, wanted: int) -> list[Any]:
        # Each scorer holds a CPU; never ask for more than the cluster has, or some would wait
        # for ever.
        count = max(1, min(wanted, _ray.cluster_cpus()))
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

    def _scoring(self, scorer: Any) -> asyncio.Task[Any]:
        # A task now, so scoring runs while the backends are fed.
        task = asyncio.ensure_future(_ray.lost_if_dead(scorer.run.remote(self.store)))
        self.scoring.append(task)
        return task

    def _score_again(self, i: int, lost: bool, scorer_ref: Any) -> asyncio.Task[Any]:
        if lost:  # a fresh scorer for the one that died
            self.scorers[i] = self._start_scorers(scorer_ref, 1)[0]
        return self._scoring(self.scorers[i])

    # -- progress ---------------------------------------------------------------------------

    async def _watch(self, begun: float) -> None:
        while True:
            await asyncio.sleep(self.options.progress_every_s)
            await self._show(begun)

    async def _show(self, begun: float) -> None:
        prices = {name: b.prices for name, b in self.experiment.backends.items()}
        now = await read_run(self.store, {b.name: b.handle for b in self.actors})
        self.show(snapshot(now, self._last_reading, begun, prices))
        self._last_reading = now


def summary_lines(report: RunReport, experiment_file: Path | None) -> list[str]:
    """What the run did, what is left, and how to resume."""
    traffic = report.traffic
    lines = [
        f"run ended after {report.elapsed_s:.1f} s: {traffic.http_calls:,} HTTP calls sent, "
        f"{report.attempts_answered:,} attempts answered, {report.requests_finished:,} "
        "requests finished",
    ]
    if traffic.transient_retried or traffic.throttles_retried or report.transient_ended:
        lines.append(
            f"  transient failures (5xx, resets, timeouts, broken bodies): "
            f"{traffic.transient_retried:,} retried, {report.transient_ended:,} ended an attempt; "
            f"throttles (429): {traffic.throttles_retried:,} retried"
        )
    for p in report.progress:
        state = "complete" if p.pending == 0 else f"{p.pending:,} pending ({p.errored:,} errored)"
        lines.append(
            f"  {p.configuration}: {p.complete:,}/{p.requests:,} requests complete, {state}; "
            f"{p.answered:,} answers, {p.scored:,} scored"
        )
    for b in report.backends:
        if b.quota is not None:
            lines.append(f"  backend {b.name} stopped: quota exhausted ({b.quota})")
        if b.refused is not None:
            lines.append(f"  backend {b.name} stopped: no call of it can succeed ({b.refused})")
        if b.learnt_per_minute is not None:
            learnt = math.floor(b.learnt_per_minute)
            lines.append(
                f"  backend {b.name}: its server admits about {learnt:,} requests/min, below its "
                f"requests_per_minute (learnt from its 429s, and kept to); set "
                f"requests_per_minute = {learnt} to start there"
            )
    if report.errors:
        lines.append("  errors that keep requests from completing, most frequent first:")
        lines.extend(f"    {error_line(e)}" for e in report.errors)
    if report.unscored:
        lines.append(f"  {report.unscored:,} stored answers are not scored yet")
    if report.held:
        lines.append(
            f"  {report.held:,} requests are held by open batches (groundbench batches STORE "
            "lists them): a run with their backend in batch mode collects them, and none is "
            "sent again meanwhile"
        )
    preflight = (
        f" (its pre-flight's calls ${report.preflight_spent:,.2f})"
        if report.preflight_spent
        else ""
    )
    lines.append(
        f"  spend: ${report.spent:,.2f} this run{preflight}, ${report.spent_total:,.2f} for the "
        "answers in the store over every run (tokens at the configured prices)"
    )
    for b in report.backends:
        if b.batch is not None:
            lines += batch_lines(b.name, b.spent, b.batch)
    if any(b.capped for b in report.backends):
        lines.append(
            f"  stopped at the spending cap (--max-spend ${report.max_spend:,.2f}); "
            "run again with a higher cap to go on"
        )
    command = f"groundbench run {experiment_file}" if experiment_file else "the same command"
    if report.limit is not None:
        lines.append(
            f"  --limit {report.limit}: the first {report.limit} questions of every cell, "
            f"{report.limited_left:,} of their requests left"
        )
    if not report.complete:
        again = "without --limit" if report.limit is not None and report.done else "again"
        lines.append(
            f"{report.pending:,} requests left: run {command} {again} to send exactly those"
            + _once(report)
        )
    return lines


def batch_lines(name: str, spent: float, batch: BatchReport) -> list[str]:
    """A batch-mode backend's batches, and what they saved against the online price."""
    saved = batch.online_cost - spent
    share = f" ({100 * saved / batch.online_cost:.0f}%)" if batch.online_cost > 0 else ""
    extra = []
    if batch.unrun:
        extra.append(f"{batch.unrun:,} lines never ran (expired, cancelled or failed batches)")
    if batch.problems:
        extra.append(f"{batch.problems:,} result lines unreadable (SELECT * FROM batch_problems)")
    more = f"; {'; '.join(extra)}" if extra else ""
    line = (
        f"  backend {name} (batch mode): {batch.created:,} batches created, {batch.read:,} read; "
        f"${spent:,.2f} at the batch price, ${batch.online_cost:,.2f} online: ${saved:,.2f} "
        f"saved{share}{more}"
    )
    if batch.not_made is None:
        return [line]
    return [
        line,
        f"  backend {name}: no more batches made after the provider refused one: "
        f"{batch.not_made} (a file too large: set a lower batch.max_bytes or max_requests)",
    ]


def _once(report: RunReport) -> str:
    """What must happen before the requests left can succeed, where a backend was stopped."""
    needs = []
    if any(b.refused for b in report.backends):
        needs.append("the key or model is put right")
    if any(b.quota for b in report.backends):
        needs.append("the quota resets")
    return f" (once {' and '.join(needs)})" if needs else ""


def error_line(error: ErrorCount) -> str:
    """One kind of stored error: where, how often, the server's words (one line, at most
    ``_MESSAGE_CHARACTERS``) and what to do."""
    where = f"HTTP {error.status}" if error.status is not None else "no response"
    code = f" {error.code}" if error.code else ""
    message = " ".join((error.message or "").split())
    if len(message) > _MESSAGE_CHARACTERS:
        message = message[: _MESSAGE_CHARACTERS - 1] + "…"
    said = f": {message}" if message else ""
    return (
        f"{error.configuration}: {error.count:,} × {error.kind} ({where}{code}){said} — "
        f"{what_to_do(error.kind, error.status, error.code)}"
    )


_MESSAGE_CHARACTERS = 160
