"""The scorers' work queue: answers stored and not yet scored, each handed out once.

It lives in memory beside the repository, in the one process that writes the file: an answer
joins it when the repository has stored it, and a scorer takes a few at a time. Nothing here is
saved; what it held is found again in the file (:meth:`Repository.unscored_answers
<runner.store.Repository.unscored_answers>`) when a store opens, or when a configuration's
scores are dropped, and the queue is filled from that anew.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from runner.store._rows import ResponseRow, ScoreJob


class ScoreQueue:
    """Answers waiting for a scorer, oldest first."""

    def __init__(self, jobs: Iterable[ScoreJob] = ()) -> None:
        self._jobs: deque[ScoreJob] = deque(jobs)

    def __len__(self) -> int:
        return len(self._jobs)

    def add_answers(self, stored: Iterable[ResponseRow]) -> None:
        """Queue the answers among ``stored`` (rows the repository has just stored); errors
        are not scored."""
        self._jobs.extend(
            ScoreJob.of(row.key, answer=row.answer or "")  # an answer always holds text
            for row in stored
            if row.outcome == "answer"
        )

    def take(self, limit: int) -> list[ScoreJob]:
        """Up to ``limit`` answered attempts for a scorer; each is handed out once."""
        count = min(limit, len(self._jobs))
        return [self._jobs.popleft() for _ in range(count)]

    def refill(self, jobs: Iterable[ScoreJob]) -> int:
        """Queue exactly ``jobs`` (every answer without a score, as the file says), dropping
        what was queued: a job handed out and never scored is among them again."""
        self._jobs = deque(jobs)
        return len(self._jobs)
