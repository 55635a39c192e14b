"""One batch-mode backend's share of the run: its calls as the provider's batches.

:class:`BatchWorker` is what a batch-mode backend's actor runs, and is tested without Ray: a
:class:`~runner.batch.BatchRunner` over the ledger it is given (the store actor's port), with
one HTTP session opened lazily on the event loop that sends and the provider's
:class:`~runner.batch.BatchApi` per model on it. It is the feeder's port, as an online worker
is; its counters are a :class:`WorkerStats`, as an online worker's, with the open batches
beside.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from conditions import Questions
from runner._errors import ConfigError
from runner._port import Outcome, Shape
from runner.backends import configured_origin, provider_named
from runner.batch import (
    BatchApi,
    BatchOutcome,
    BatchRunner,
    BatchSettings,
    Ledger,
    Where,
    batch_api,
    batch_limits,
)
from runner.distributed._lifeline import Lifeline, LifelineAddress
from runner.distributed._worker import BackendSetup, KeySource, WorkerStats
from runner.store import Pending


@dataclass(frozen=True)
class BatchSpec:
    """What a batch-mode backend needs beyond its configurations."""

    backend: str
    settings: BatchSettings
    spool: Path  # where its JSONL files are written before upload (one at a time)
    simulated: bool  # on the run's own simulator


class BatchWorker:
    """One backend's calls as batches, leased by the feeder (see the module docstring)."""

    def __init__(
        self,
        setup: BackendSetup,
        questions: Questions,
        ledger: Ledger,
        key_for: KeySource,
        spec: BatchSpec,
        lifeline: LifelineAddress | None = None,
    ) -> None:
        # No batch made while the driver is silent, and no file uploaded nor batch made once
        # it is gone (None: an in-process run); the batches open are left for a later run.
        self._lifeline = Lifeline(lifeline, self.driver_gone)
        self._opening = asyncio.Lock()
        # One provider and one key per backend: its first configuration's are every one's.
        first = setup.configurations[0]
        self.configurations = setup.configurations
        self.provider = provider_named(first.provider)
        key = key_for(first)  # a missing key fails now, as online
        base_url = setup.transport.base_url or self.provider.base_url
        variable = setup.transport.api_key_env or self.provider.key_variable
        if key is None or base_url is None or variable is None:
            # Every provider with a batch API has an endpoint and a key; the experiment file
            # refuses batch mode for one without (a server of one's own).
            name = self.provider.name
            raise ConfigError(f"backend {spec.backend}: provider {name} has no batch API")
        self.key = key
        self.transport = setup.transport
        self.base_url = base_url
        # Where its key may go, whatever base a batch the store recorded names.
        self.origin = configured_origin(f"backend {spec.backend}", self.base_url)
        self.spec = spec
        self._session: aiohttp.ClientSession | None = None
        where = Where(
            spec.backend,
            self.provider.name,
            self.base_url,
            variable,
            simulated=spec.simulated,
        )
        self.runner = BatchRunner(
            where, self.configurations, setup.builder(questions), ledger,
            self._make_api, spec.spool, spec.settings, transport=setup.transport,
            limits=batch_limits(self.provider), heard=self._lifeline.heard,
        )  # fmt: skip
        self._stats = WorkerStats(batch=True)

    def _make_api(self, model: str, base_url: str) -> BatchApi:
        """The batch API of ``model`` at ``base_url``, on the session of the loop that sends
        (the runner asks for one only inside a lease or a collect, once it is open); its key
        goes to the configured origin only."""
        assert self._session is not None, "a batch API is made only once the session is open"
        return batch_api(
            self._session, self.provider, model, base_url, self.key, origin=self.origin
        )

    async def _ensure_open(self) -> None:
        """The lifeline to the driver, then the session: on the loop that sends, once."""
        async with self._opening:
            if self._session is None:
                await self._lifeline.start()  # a driver it cannot hear gets no batch made
                connector = aiohttp.TCPConnector(limit=self.transport.max_concurrency)
                self._session = aiohttp.ClientSession(connector=connector)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self._lifeline.close()

    @property
    def shape(self) -> Shape:
        """How the feeder leases it calls: a batch's lines at a time, its open batches' in
        all."""
        return self.runner.shape

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        """One batch of ``calls``, made, followed to its end and read."""
        await self._ensure_open()
        return await self.runner.lease(calls, input_bound)

    async def collect_open(self) -> Outcome:
        """The batches the ledger holds open for this backend, collected."""
        await self._ensure_open()
        return await self.runner.collect_open()

    async def resume_after_quota(self) -> None:
        await self.runner.resume_after_quota()

    def driver_gone(self, why: str) -> None:
        """Upload no file and create no batch from now on (see the online worker's)."""
        self.runner.driver_gone(why)

    def report(self) -> BatchOutcome:
        """What its batches did this run: the run's report."""
        return self.runner.outcome

    def stats(self) -> WorkerStats:
        """Its counters: an online worker's (no HTTP rates), and the open batches."""
        outcome = self.runner.outcome
        stats = self._stats
        stats.tally, stats.stop = outcome.tally, outcome.stop
        stats.batches = tuple(self.runner.open_batches())
        return stats
