"""A run's store: the repository of its file, the scorers' queue, and users' queries.

Three parts, one job each, held together here for the process that writes the file (the store
actor, or a run served in one process):

- :class:`~runner.store.Repository`: the DuckDB file (migrations, writes, reads);
- :class:`~runner.store.ScoreQueue`: answers stored and not yet scored, handed to scorers;
- :class:`~runner.store.QueryService`: users' queries and snapshots beside the run's writes.

Callers use the part they need (``store.repository.progress()``, ``store.score_queue.take(n)``,
``store.queries.answer(sql)``). The store itself only keeps the queue in step with the file: an
answer stored joins the queue, and when a reading changes and scores are dropped, or the file
is opened, the queue is filled from what the file holds unscored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Self

import pyarrow as pa

from runner.store._queries import QueryService
from runner.store._repository import Repository
from runner.store._rows import GridRow, Registration, ResponseRow
from runner.store._score_queue import ScoreQueue


class Store:
    """The run's store of one experiment file, open for writing by this process alone.

    Raises
    ------
    StoreError
        As :class:`Repository`: the file is locked, not a DuckDB file, or too new.
    """

    def __init__(self, path: Path | str, *, lock_wait_s: float = 15.0) -> None:
        self.repository = Repository(path, lock_wait_s=lock_wait_s)
        self.score_queue = ScoreQueue(self.repository.unscored_answers())
        self.queries = QueryService(self.repository.connection, self.repository.path)

    @property
    def path(self) -> Path:
        return self.repository.path

    def close(self) -> None:
        self.repository.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def register(
        self,
        configurations: Sequence[Registration],
        grid: Iterable[GridRow] | pa.Table,
        images: Path | None = None,
        experiment: Path | None = None,
    ) -> list[tuple[str, str | None, int]]:
        """:meth:`Repository.register`; answers whose scores it dropped are queued again."""
        reread = self.repository.register(configurations, grid, images, experiment)
        if reread:  # committed: the scores are gone, so their answers wait for scoring again
            self.requeue_unscored()
        return reread

    def write_responses(self, rows: Sequence[ResponseRow]) -> int:
        """:meth:`Repository.write_responses`, the answers stored queued for scoring; how many
        keys it set or replaced."""
        stored = self.repository.write_responses(rows)
        self.score_queue.add_answers(stored)  # committed: a scorer may take them now
        return len(stored)

    def requeue_unscored(self) -> int:
        """Queue every stored answer that has no score (a scorer died, or a run was killed)."""
        return self.score_queue.refill(self.repository.unscored_answers())
