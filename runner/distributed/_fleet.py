"""Where a run's actors start, and how a dead backend's starts again.

The store and the simulator stay on the driver's node, and so does a simulated backend (the
simulator listens on its loopback); other backends take the cluster's live nodes in turn, and a
restart avoids the node its last actor died on; scorers spread. Every Ray call goes through
:mod:`._ray`.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conditions import Configuration
from runner._names import NAMESPACE, actor_name, run_tag
from runner.distributed import _ray
from runner.distributed._actors import (
    RemoteBackend,
    RemoteBatchBackend,
    RemoteScorer,
    RemoteSimulator,
    RemoteStore,
)
from runner.distributed._batch_worker import BatchSpec
from runner.distributed._lifeline import LifelineAddress
from runner.distributed._worker import BackendSetup
from runner.experiment import Experiment


@dataclass
class BackendActor:
    """How one backend's actor is started, and where it was last."""

    name: str
    configurations: tuple[Configuration, ...]
    simulated: bool  # on the built-in simulator, which listens on the driver node's loopback
    options: dict[str, Any]  # its actor's Ray options, placement aside
    args: tuple[Any, ...]  # its actor's constructor arguments
    batch: bool  # in batch mode: a RemoteBatchBackend (the feeder leases it a batch's lines)
    handle: Any = None
    node: str | None = None  # where its actor was started last


class Fleet:
    """One run's actor placement: its tag (in every actor's name), the driver's node (the
    store's, the simulator's), and the turn the cluster's nodes are taken in."""

    def __init__(self, experiment: Experiment, node: str) -> None:
        self.experiment = experiment
        self.node = node
        self.tag = run_tag(experiment.store)
        self.cache = experiment.store.with_suffix(".variants")  # the image variants
        self._turn = itertools.count()  # backends take the cluster's nodes in turn
        token = secrets.token_hex(3)
        self._scorer_names = (f"scorer-{token}-{n}" for n in itertools.count())

    async def start_store(self) -> Any:
        """The run's store actor, once it is up: its name is the experiment's, so a second run
        of the same experiment stops here."""
        options = RemoteStore.options(
            num_cpus=0,
            scheduling_strategy=_ray.pinned(self.node),
            name=actor_name(self.tag, "store"),
            namespace=NAMESPACE,
        )
        return await _ray.named(
            lambda: options.remote(self.experiment.store),
            "another run of this experiment is still going (its store actor is alive); "
            "wait for it or stop it",
        )

    def start_simulator(self, questions_ref: Any) -> Any:
        """The built-in simulator's actor, not serving yet (its ``start`` gives its URL); None
        where no backend is simulated."""
        experiment = self.experiment
        if not experiment.simulated:
            return None
        return RemoteSimulator.options(
            num_cpus=0, scheduling_strategy=_ray.pinned(self.node)
        ).remote(questions_ref, experiment.images, self.cache, experiment.simulator)

    def backends(
        self,
        configurations: Sequence[Configuration],
        simulator_url: str | None,
        questions_ref: Any,
        store: Any,
        lifeline: LifelineAddress,
    ) -> list[BackendActor]:
        """One actor per backend with a configuration in ``configurations``, each writing to
        the ``store`` actor and sending only while it hears the driver's ``lifeline``; none
        started yet (:meth:`place` starts one). Each backend's limits are its own transport's
        (a simulated one's at ``simulator_url``), one for all its configurations."""
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
            key = self.experiment.simulator_key if spec.simulated else None
            setup = BackendSetup(
                transport=spec.transport(simulator_url),
                configurations=members,
                images=self.experiment.images,
                cache=self.cache,
            )
            args: tuple[Any, ...] = (setup, questions_ref, store, key)
            batch = spec.mode == "batch"
            if batch:
                spool = self.experiment.store.with_suffix(".batches")
                args += (BatchSpec(name, spec.batch, spool, spec.simulated),)
            args += (lifeline,)
            actors.append(BackendActor(name, members, spec.simulated, options, args, batch))
        return actors

    def place(self, actor: BackendActor) -> Any:
        """Start ``actor`` (again, after it died). A simulated backend stays on the driver's
        node, by its simulator; others take the cluster's live nodes in turn (each backend's
        encoding and connections on a node of its own when there are enough), and a restart
        avoids the node its last actor died on."""
        actor.node = self.node if actor.simulated else self._next_node(avoid=actor.node)
        strategy = _ray.pinned(actor.node)
        remote = RemoteBatchBackend if actor.batch else RemoteBackend
        return remote.options(**actor.options, scheduling_strategy=strategy).remote(*actor.args)

    async def restarted(self, actor: BackendActor) -> Any:
        """A new actor for ``actor``'s backend, once the dead one's name is free."""
        _ray.kill(actor.handle)
        return await _ray.when_name_free(
            lambda: self.place(actor),
            lambda handle: handle.__ray_ready__.remote(),
            f"backend {actor.name}: cannot restart its actor",
        )

    def _next_node(self, avoid: str | None) -> str:
        others = sorted(n for n in _ray.alive_nodes() if n not in (self.node, avoid))
        order: list[str] = [*others, self.node]  # the driver's node last: it holds the store
        return order[next(self._turn) % len(order)]

    def start_scorers(self, scorer_ref: Any, wanted: int) -> list[Any]:
        # Each scorer holds a CPU; never ask for more than the cluster has, or some would wait
        # for ever.
        count = max(1, min(wanted, _ray.cluster_cpus()))
        return [
            RemoteScorer.options(
                num_cpus=1,
                # Ray's threads of the actor, not a backend's limit: node() answers while it
                # scores.
                max_concurrency=2,
                scheduling_strategy="SPREAD",
                # Named, so a watcher can find them; unique, since a scorer of a killed run
                # may still be dying when the next run starts.
                name=actor_name(self.tag, next(self._scorer_names)),
                namespace=NAMESPACE,
            ).remote(scorer_ref)
            for _ in range(count)
        ]
