"""One batch-mode backend's share of the run: its calls as the provider's batches.

:class:`BatchWorker` is what a batch-mode backend's actor runs, and is tested without Ray: it
opens one HTTP session, makes the provider's :class:`~runner.batch.BatchApi` per model, and
runs a :class:`~runner.batch.BatchRunner` over the ledger it is given (the store actor's).
Its counters are a :class:`WorkerStats`, as an online worker's, with the open batches beside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from conditions import Configuration, Questions
from runner.backends import provider_named
from runner.batch import (
    BatchApi,
    BatchOutcome,
    BatchRunner,
    BatchSettings,
    Ledger,
    Where,
    batch_api,
)
from runner.distributed._worker import KeySource, WorkerStats, request_builder


@dataclass(frozen=True)
class BatchSpec:
    """What a batch-mode backend needs beyond its configurations."""

    backend: str
    settings: BatchSettings
    spool: Path  # where its JSONL files are written before upload (one at a time)
    simulated: bool  # on the run's own simulator


class BatchWorker:
    """Runs one backend's calls as batches, once per run (or once per restart)."""

    def __init__(
        self,
        configurations: Sequence[Configuration],
        questions: Questions,
        images: Path,
        cache: Path,
        key_for: KeySource,
        spec: BatchSpec,
    ) -> None:
        if not configurations:
            raise ValueError("a batch worker needs at least one configuration")
        first = configurations[0]
        self.configurations = tuple(configurations)
        self.provider = provider_named(first.provider)
        self.key = key_for(first)  # a missing key fails now, as online
        self.base_url = first.transport.base_url or self.provider.base_url
        self.spec = spec
        self._builder = request_builder(questions, images, cache)
        self._runner: BatchRunner | None = None
        self._stats = WorkerStats()

    async def run(self, ledger: Ledger) -> BatchOutcome:
        """Collect what earlier runs left open, send what is pending, collect it all."""
        transport = self.configurations[0].transport
        connector = aiohttp.TCPConnector(limit=transport.max_concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            def make(model: str, base_url: str) -> BatchApi:
                return batch_api(session, self.provider, model, base_url, self.key)

            where = Where(
                self.spec.backend,
                self.provider.name,
                self.base_url,
                transport.api_key_env or self.provider.key_variable,
                simulated=self.spec.simulated,
            )
            self._runner = BatchRunner(
                where, self.configurations, self._builder, ledger, make, self.spec.spool,
                self.spec.settings,
            )  # fmt: skip
            return await self._runner.run()

    def stats(self) -> WorkerStats:
        """Its counters: an online worker's (no HTTP rates), and the open batches."""
        runner = self._runner
        if runner is None:
            return self._stats
        outcome = runner.outcome
        stats = self._stats
        stats.attempts, stats.requests = outcome.attempts, outcome.finished
        stats.answered, stats.errored = outcome.answered, outcome.errored
        stats.input_tokens, stats.output_tokens = outcome.input_tokens, outcome.output_tokens
        stats.quota, stats.refused = outcome.quota, outcome.refused
        stats.batches = tuple(runner.open_batches())
        stats.batch = True
        return stats
