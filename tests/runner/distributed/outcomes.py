"""What a fault scenario compares: a run's answers and scores, and a ledger of everything a
store ever held, so that nothing stored may change or disappear later."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.runner.distributed.runs import assert_every_key_once, query

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Results:
    """What a run leaves: every answered attempt's text, and every score row."""

    answers: dict[Key, str]
    scores: dict[Key, tuple[Any, ...]]


def results(store: Path) -> Results:
    key = "(configuration, condition, budget, qid, attempt)"
    answers = query(store, f"SELECT {key}, answer FROM responses WHERE outcome = 'answer'")
    scores = query(store, f"SELECT {key}, scores FROM scores AS scores")
    return Results(dict(answers), {k: tuple(v.values()) for k, v in scores})


class Ledger:
    """What the store held after each run: nothing stored may change or disappear later."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.kept: dict[Key, str] = {}
        self.rows: set[tuple[Any, ...]] = set()  # every attempt row the store ever held

    def keep(self, answers: dict[Key, str]) -> None:
        self.kept |= answers
        self.rows |= set(
            query(
                self.store,
                "SELECT configuration, condition, budget, qid, attempt, started_at, outcome, "
                "transport_retries FROM responses",
            )
        )

    @property
    def tries_given_up(self) -> int:
        """Tries the client gave up on, as its records count them: an answered attempt's
        transport retries, and every try of an attempt that ended in an error (resent when
        the run resumes). Counted by the client, so no clock of this machine decides it."""
        return sum(retries + (outcome != "answer") for *_, outcome, retries in self.rows)

    def check_final(self, reference: Results) -> Results:
        final = results(self.store)
        lost = {k: a for k, a in self.kept.items() if final.answers.get(k) != a}
        assert not lost, f"stored answers lost or changed: {sorted(lost)[:5]}"
        twice = query(
            self.store,
            "SELECT configuration, condition, budget, qid, attempt FROM responses "
            "GROUP BY ALL HAVING count(*) > 1",
        )
        assert twice == []
        assert_every_key_once(self.store)
        assert final == reference  # attempts, answers and scores: those of the fault-free run
        return final
