"""How a run ended, as data: what the driver returns and :mod:`runner.summary` writes out.

Plain frozen records, no Ray: the summary and its tests build them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner._port import Stop, Tally
from runner.distributed._feeder import Feed
from runner.store import ErrorCount, Progress


@dataclass(frozen=True, kw_only=True)
class BackendReport:
    """What one backend did this run: its configurations, what stopped it, what it spent."""

    name: str
    configurations: tuple[str, ...]
    restarts: int
    stop: Stop | None = None  # what stopped it (spent quota, a refusal, the cap), if anything did
    # What its workers did this run (less what a dead one did after its last outcome)
    tally: Tally = field(default_factory=Tally)
    spent: float = 0.0  # dollars this run: its tally's tokens at the price of its mode
    unknown_spent: float = 0.0  # of them, attempts with usage unknown (at their worst case)
    learnt_per_minute: float | None = None  # the limit its 429s taught, below the configured
    batch: BatchReport | None = None  # a batch-mode backend's batches

    @classmethod
    def of(cls, feed: Feed, batch: BatchReport | None) -> BackendReport:
        """What ``feed``'s backend did this run, as the feeder (or its batches) left it."""
        return cls(
            name=feed.name,
            configurations=feed.configurations,
            restarts=feed.restarts,
            stop=feed.stop,
            tally=feed.tally,
            spent=feed.tally.spent(feed.cost),
            unknown_spent=feed.tally.unknown_spent(feed.cost),
            learnt_per_minute=feed.learnt_per_minute,
            batch=batch,
        )


@dataclass(frozen=True)
class BatchReport:
    """What a batch-mode backend's batches did this run, and what they saved."""

    created: int  # batches created at the provider
    read: int  # batches whose results were stored
    unrun: int  # lines a batch never ran (expired, cancelled, failed): sent again or pending
    problems: int  # result lines that could not be read (batch_problems)
    online_cost: float  # what its answers would have cost online
    not_made: str | None = None  # a file or batch the provider refused: no more were made
    elsewhere: int = 0  # open batches recorded at another origin than base_url's: not collected
    elsewhere_why: str | None = None  # the first of them, and why


@dataclass(frozen=True)
class RunReport:
    """How a run ended: progress per configuration, and what stopped each backend."""

    progress: tuple[Progress, ...]
    backends: tuple[BackendReport, ...]
    elapsed_s: float
    # What the run did: every backend's tally and the pre-flight's calls
    tally: Tally
    unscored: int
    simulator_calls: int | None = None
    errors: tuple[ErrorCount, ...] = ()  # what keeps the requests left from completing
    spent_total: float = 0.0  # dollars of every answer in the store, this run's and earlier
    max_spend: float | None = None
    limit: int | None = None
    limited_requests: int = 0  # with a limit: its requests
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
    preflight_unknown_spent: float = 0.0  # of them, those kept whose usage was unknown

    @property
    def spent(self) -> float:
        return self.preflight_spent + sum(b.spent for b in self.backends)

    @property
    def unknown_spent(self) -> float:
        """Dollars of the attempts whose usage was unknown, counted at their worst case."""
        return self.preflight_unknown_spent + sum(b.unknown_spent for b in self.backends)

    @property
    def pending(self) -> int:
        return sum(p.pending for p in self.progress)
