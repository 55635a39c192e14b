"""The driver: the run's lifecycle on Ray — start the actors, let the feeder drive them, report,
and end cleanly.

What a run asks is settled before any actor starts (:mod:`runner.plan`, and :mod:`._prepare`
while Ray starts); which calls go where, and what happens when an actor dies or a quota runs out,
is the feeder's policy (:mod:`._feeder`); where the actors start, and start again, is
:mod:`._fleet`'s; every Ray call goes through :mod:`._ray`. The store is the only record of what
is done; the report (:mod:`._report`, written out by :mod:`runner.summary`) says what is left and
how to resume.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conditions import RequestKey
from runner._names import NAMESPACE
from runner._port import Shape, Tally
from runner._sigterm import sigterm_as_ctrl_c
from runner.backends import Account
from runner.batch import BatchOutcome
from runner.distributed import _address, _ray
from runner.distributed._feeder import (
    Feed,
    Feeder,
    FeedPolicy,
    forget,
    score_to_the_end,
)
from runner.distributed._fleet import BackendActor, Fleet
from runner.distributed._lifeline import LifelineAddress, LifelineServer
from runner.distributed._options import Echo, RunOptions, Show
from runner.distributed._prepare import beside, prepared
from runner.distributed._report import BackendReport, BatchReport, RunReport
from runner.distributed._scorer import scorer_for
from runner.distributed._spend import SpendCap, worst_case
from runner.distributed._store_port import StorePort
from runner.distributed._watch import LiveView
from runner.estimate import Limited
from runner.experiment import Experiment
from runner.monitor import echoing
from runner.plan import (
    RunPlan,
    checked_configurations,
    first_questions,
)
from runner.preflight import PreflightReport
from runner.store import Pending, grid_table, response_row
from runner.summary import summary_lines

# How far the run's start has got, one DEBUG line a step; ``benchmarks/startup.py`` turns it on
# to split the time to the first call.
STARTUP = logging.getLogger("runner.distributed.startup")


def run_experiment(
    experiment: Experiment,
    options: RunOptions | None = None,
    echo: Echo = print,
    experiment_file: Path | None = None,
    show: Show | None = None,
    summarise: bool = True,
) -> RunReport:
    """Run every pending call of ``experiment`` and score the answers; see the module docstring.

    ``show`` receives the live view every ``options.progress_every_s`` (default: its plain
    lines, through ``echo``); ``echo`` gets the run's messages and its closing summary (unless
    ``summarise`` is false: the caller writes :func:`summary_lines` of the report, below a live
    view it has closed).

    Joins the Ray cluster at ``options.address`` (or ``RAY_ADDRESS``, as under ``ray job
    submit``), else starts a local one; one already initialised in this process is used as is.
    """
    options = options if options is not None else RunOptions()
    STARTUP.debug("imported")  # the command's imports, and the experiment read
    # Read once, into the run's plan. What a backend's actor would refuse fails before Ray
    # starts, and so does a changed protocol, which the store would refuse.
    configurations = checked_configurations(experiment)
    # Ray takes seconds to start, most of them spent waiting on its own processes: the
    # questions are read (or built) into the plan and the pre-flight's calls made meanwhile,
    # on a thread.
    preparing = beside(lambda: prepared(experiment, options, echo, configurations))
    preparing.add_done_callback(lambda _: STARTUP.debug("prepared"))
    started_ray = False
    try:
        try:
            started_ray = _ray.connect(options.address)
            STARTUP.debug("ray")
        except Exception:
            preparing.result()  # its error, if any, is the one a user would have seen first
            raise
        # Ray's core worker has just taken SIGTERM (a stack dump, then abort): it ends the
        # run as Ctrl-C does, everything stored kept.
        with sigterm_as_ctrl_c():
            ready = preparing.result()
            run = _Run(ready.plan, options, echo, experiment_file, show or echoing(echo))
            run.summarise = summarise
            run.accounts = ready.accounts
            if ready.estimate is not None:
                run.estimated(ready.estimate)
            return asyncio.run(run.go())
    finally:
        if started_ray:
            _ray.shutdown()


class _Run:
    def __init__(
        self,
        plan: RunPlan,
        options: RunOptions,
        echo: Echo,
        experiment_file: Path | None,
        show: Show,
    ) -> None:
        self.show = show
        self.plan = plan
        self.experiment = plan.experiment
        self.questions = plan.questions
        self.options = options
        self.echo = echo
        self.experiment_file = experiment_file
        self.fleet = Fleet(plan.experiment, _ray.driver_node())
        self.store: Any = None
        self.simulator: Any = None
        self.actors: list[BackendActor] = []
        self.feeds: list[Feed] = []
        self.scorers: list[Any] = []
        self.scoring: list[asyncio.Task[Any]] = []  # every scorer run started
        self.estimate: PreflightReport | None = None  # the pre-flight's: the cost per call
        self.cap = SpendCap(options.max_spend) if options.max_spend is not None else None
        self.allowed: frozenset[RequestKey] | None = None  # with --limit: the requests to send
        self.preflight_spent = 0.0
        self.accounts: Mapping[str, Account] = {}  # by backend: calls already made on it
        self._batches: dict[str, BatchReport] = {}  # batch-mode backends' reports
        self.summarise = True  # the run writes its summary through echo

    def estimated(self, estimate: PreflightReport) -> None:
        """The pre-flight's (or the cap's) estimate: the cost per call the cap starts from;
        what the pre-flight's own calls cost is this run's spend."""
        self.estimate = estimate
        self.preflight_spent = estimate.spent
        if self.cap is not None:
            self.cap.spent += estimate.spent

    async def go(self) -> RunReport:
        begun = time.monotonic()
        self.store = await self.fleet.start_store()
        note = _address.here(
            _ray.cluster_address(), NAMESPACE, _ray.token_auth(), self.experiment_file
        )
        try:
            # The backends send only while they hear the driver: killed, it is heard no more.
            async with LifelineServer.start(_ray.node_ip()) as lifeline:
                return await self._go(begun, note, lifeline.address)
        finally:
            _address.remove_note(self.experiment.store, note)
            # Whatever happened, no actor of this run outlives it (their names would block
            # the next run of the experiment), and no scorer run is left to report its
            # actor's death after the run has ended.
            forget(self.scoring)
            for b in self.actors:
                if b.handle is not None:  # started (a backend starts once the first serves)
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

    async def _go(
        self, begun: float, note: _address.RunAddress, lifeline: LifelineAddress
    ) -> RunReport:
        # The first backend's actor starts while the store opens (the others once it serves,
        # _start_backends): each is a Python process that imports the runner, seconds on a
        # small machine, and the first call waits for both.
        opening = self.store.open.remote()
        questions_ref = _ray.put(self.questions)
        self.simulator = self.fleet.start_simulator(questions_ref)  # None: no backend simulated
        url = await _ray.call(self.simulator.start.remote()) if self.simulator is not None else None
        configurations = self.plan.at(url)
        # Backends build requests: the questions are all they need of the cohort.
        asking_ref = _ray.put(self.questions.for_asking())
        self.actors = self.fleet.backends(configurations, url, asking_ref, self.store, lifeline)
        later = self._start_backends()
        # Opening is the store actor's readiness: its errors (lock, schema) come back whole,
        # before the run says where it is or registers anything.
        await _ray.call(opening)
        STARTUP.debug("store")
        self._note_where(note)
        grid = self.plan.grid
        registering = self.store.register.remote(
            list(grid.registrations),
            grid_table(grid.rows),
            self.experiment.images,
            # Absolute here: the store's actor may run in another folder, or on another node.
            self.experiment_file.absolute() if self.experiment_file is not None else None,
        )
        reread = await _ray.call(registering)
        STARTUP.debug("grid")
        for name, was, answers in reread:
            self.echo(
                f"configuration {name}: its answers are read by {self.experiment.reading(name)} "
                f"now (were {was}): {answers:,} scores made again, no call sent again"
            )
        await self._keep_preflight()
        attempts = {r.name: r.attempts for r in grid.registrations}
        boxes = self.experiment.boxes
        reader = boxes.reading if boxes is not None else None
        scorer_ref = _ray.put(scorer_for(self.questions, self.experiment.conventions, reader))
        limited = None
        if self.options.limit is not None:
            self.allowed = first_questions(grid.rows, self.questions, self.options.limit)
            limited = await self._limited()
        store = StorePort.of_actor(self.store, self.allowed)
        feeder = Feeder(store, self._policy(), self.echo, cap=self.cap)
        view = LiveView(self.store, self._handles, self.experiment, self.show, begun, limited)
        watcher = asyncio.create_task(view.every(self.options.progress_every_s))
        try:
            driving = await self._fed(feeder, attempts, later)
            # The scorers start once every backend serves, not once answers land: answers are
            # scored live from the first, however slowly a busy machine starts processes.
            self.scorers = self.fleet.start_scorers(scorer_ref, self.experiment.scorers)
            scoring = [self._scoring(s) for s in self.scorers]
            await asyncio.gather(*driving)
            await self._batch_reports()
            await _ray.call(self.store.finish.remote())
            unscored = await score_to_the_end(
                store, scoring, lambda i, lost: self._score_again(i, lost, scorer_ref)
            )
        finally:
            watcher.cancel()
        await view.once()  # the view's last frame: the run as it ends
        return await self._report(begun, unscored)

    async def _keep_preflight(self) -> None:
        """Store the pre-flight's calls as the grid's attempts they were (none is sent
        again), once the grid is registered and before the feeder reads what is left."""
        records = self.estimate.records if self.estimate is not None else ()
        if records:
            await _ray.call(self.store.write_responses.remote([response_row(r) for r in records]))

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
            backends=tuple(BackendReport.of(f, self._batches.get(f.name)) for f in self.feeds),
            elapsed_s=time.monotonic() - begun,
            tally=sum((f.tally for f in self.feeds), self._preflight_tally()),
            unscored=unscored,
            simulator_calls=calls,
            errors=errors,
            spent_total=self.experiment.spent_on(progress),
            max_spend=self.options.max_spend,
            limit=self.options.limit,
            limited_requests=len(self.allowed) if self.allowed is not None else 0,
            limited_left=await self._limited_left(),
            held=await _ray.call(self.store.held.remote()),
            preflight_spent=self.preflight_spent,
            preflight_unknown_spent=self._preflight_unknown_spent(),
        )
        if self.summarise:  # else the caller writes it, once its live view has closed
            for line in summary_lines(report, self.experiment_file, self.experiment):
                self.echo(line)
        return report

    def _preflight_tally(self) -> Tally:
        """What the pre-flight's calls did: its HTTP calls, and its calls kept as the grid's
        attempts (a parseable answer finished its request; one that does not parse is
        attempted again by the grid)."""
        if self.estimate is None:
            return Tally()
        records = self.estimate.records
        finished = Tally(finished=sum(bool(r.parseable) for r in records))
        calls = sum(self.estimate.traffic.values(), Tally())
        return sum((Tally.of(r) for r in records), calls + finished)

    def _preflight_unknown_spent(self) -> float:
        """Dollars of the pre-flight's kept calls whose usage was unknown (their worst case)."""
        records = self.estimate.records if self.estimate is not None else ()
        cost = [(self.plan.backend(r.configuration).prices.cost, r) for r in records]
        return sum(c(r.input_tokens or 0, r.output_tokens or 0) for c, r in cost if r.usage_unknown)

    async def _limited_left(self) -> int:
        if self.allowed is None:
            return 0
        names = [c.name for c in self.experiment.configurations]
        left: list[Pending] = await _ray.call(self.store.pending.remote(names))
        return sum(p.request in self.allowed for p in left)

    async def _limited(self) -> Limited:
        """The live view's totals under ``--limit``: its requests, and how far they and the
        grid are as the feeding starts (the pre-flight's calls kept)."""
        assert self.allowed is not None
        progress = await _ray.call(self.store.progress.remote())
        complete = sum(p.complete for p in progress)
        limited = Limited(len(self.allowed), await self._limited_left(), complete)
        await _ray.call(self.store.limit.remote(limited))  # for a monitor in another process
        return limited

    # -- backends ---------------------------------------------------------------------------

    def _start_backends(self) -> list[BackendActor]:
        """Start the first backend's actor, beside the store's; the others are returned, to
        start once it serves (:meth:`_fed`). Each actor's process imports the runner before it
        serves: on a 2-core machine, five importing at once took seconds each, and the first
        call waited for the last of them. Under a spending cap every actor starts now and all
        are fed together, so that the first lease is cut to its backend's share of the cap."""
        now = self.actors if self.cap is not None else self.actors[:1]
        for actor in now:
            actor.handle = self.fleet.place(actor)
        return self.actors[len(now) :]

    async def _fed(
        self, feeder: Feeder, attempts: dict[str, int], later: list[BackendActor]
    ) -> list[asyncio.Task[None]]:
        """Every backend being fed, each from when its actor serves: those started, then the
        ``later`` ones, started once those serve. A backend that cannot serve (its first
        answer, the shape, is an error) fails the run, and the feeding started is stopped."""
        started = self.actors[: len(self.actors) - len(later)]
        self.feeds = [await self._feed_of(actor, attempts) for actor in started]
        driving = [asyncio.create_task(feeder.drive(feed)) for feed in self.feeds]
        STARTUP.debug("fed")
        for actor in later:
            actor.handle = self.fleet.place(actor)
        try:
            for actor in later:
                self.feeds.append(await self._feed_of(actor, attempts))
                driving.append(asyncio.create_task(feeder.drive(self.feeds[-1])))
        except BaseException:
            forget(driving)
            raise
        return driving

    async def _feed_of(self, actor: BackendActor, attempts: dict[str, int]) -> Feed:
        """The feeder's view of ``actor``'s backend: its port, shape, prices and, under a
        spending cap, the worst case of its calls."""

        async def restart() -> _ray.ActorBackend:
            actor.handle = await self.fleet.restarted(actor)
            return _ray.ActorBackend(actor.handle)

        names = tuple(c.name for c in actor.configurations)
        prices = self.experiment.backends[actor.name].prices
        cost = prices.batch_cost if actor.batch else prices.cost
        # The shape is the actor's first answer: its errors (a missing key) come back whole.
        shape: Shape = await _ray.call(actor.handle.shape.remote())
        account = self.accounts.get(actor.name)
        if account is not None and not actor.batch:  # a check's and the pre-flight's count
            made = self.estimate.traffic.get(actor.name) if self.estimate is not None else None
            await _ray.call(actor.handle.inherit.remote(account, made))
        worst = None
        if self.cap is not None:
            estimated = self.estimate.input_per_call(names) if self.estimate is not None else 0.0
            worst = worst_case(cost, actor.configurations, attempts, estimated, shape.one_attempt)
        port = _ray.ActorBackend(actor.handle)
        return Feed(actor.name, names, port, restart, shape, cost=cost, worst=worst)

    async def _batch_reports(self) -> None:
        """What each batch-mode backend's batches did (its actor's counters: a restart
        starts them again)."""
        for actor, feed in zip(self.actors, self.feeds, strict=True):
            if actor.batch:
                outcome: BatchOutcome = await _ray.call(actor.handle.report.remote())
                prices = self.experiment.backends[actor.name].prices
                self._batches[actor.name] = BatchReport(
                    outcome.created, outcome.read, outcome.unrun, outcome.problems,
                    feed.tally.spent(prices.cost), outcome.not_made,
                    outcome.elsewhere, outcome.elsewhere_why,
                )  # fmt: skip

    def _scoring(self, scorer: Any) -> asyncio.Task[Any]:
        # A task now, so scoring runs while the backends are fed.
        task = asyncio.ensure_future(_ray.lost_if_dead(scorer.score_until_done.remote(self.store)))
        self.scoring.append(task)
        return task

    def _score_again(self, i: int, lost: bool, scorer_ref: Any) -> asyncio.Task[Any]:
        if lost:  # a fresh scorer for the one that died
            self.scorers[i] = self.fleet.start_scorers(scorer_ref, 1)[0]
        return self._scoring(self.scorers[i])

    def _handles(self) -> dict[str, Any]:
        """Each backend's actor now (the live view reads their counters)."""
        return {b.name: b.handle for b in self.actors}
