"""One request identity: :class:`RequestKey` and the key of an attempt at it."""

from __future__ import annotations

from conditions import BOX, AttemptKey, RequestKey


def _key(qid: str = "q1", budget: int = 8) -> RequestKey:
    return RequestKey(configuration="cfg", condition="base", budget=budget, qid=qid)


def test_an_attempt_key_names_its_request_and_its_number() -> None:
    key = _key()
    attempt = key.attempt(2)
    assert attempt == AttemptKey(
        configuration="cfg", condition="base", budget=8, qid="q1", attempt=2
    )
    assert attempt.request == key
    assert key.attempt(0) != attempt and key.attempt(0).request == key


def test_keys_sort_as_the_store_orders_its_rows_budget_before_question() -> None:
    keys = [_key("q1", 16), _key("q2", 8), _key("q1", 8)]
    assert [(k.budget, k.qid) for k in sorted(keys)] == [(8, "q1"), (8, "q2"), (16, "q1")]
    attempts = sorted(k.attempt(0) for k in keys)
    assert [a.request for a in attempts] == sorted(keys)


def test_a_box_request_is_its_budget() -> None:
    assert _key(budget=BOX).is_box and not _key().is_box
