"""Laws of the error mapping, the redaction and the retry wait, over arbitrary input."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from tenacity import Future, RetryCallState, Retrying

from runner.backends import (
    ApiKey,
    Transient,
    classify_anthropic,
    classify_gemini,
    classify_openai,
    redact,
)
from runner.backends._retry import MAX_BACKOFF_S, waiting
from runner.backends._wire import ErrorBody

KINDS = {"rate-limited", "quota", "transient", "fatal"}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.builds(
        lambda code, message, status: json.dumps(
            {"error": {"code": code, "type": code, "message": message, "status": status}}
        ).encode(),
        st.sampled_from(
            [
                "insufficient_quota",
                "Arrearage",
                "rate_limit_exceeded",
                "x",
                None,
                5,
                "invalid_request_error",
                "overloaded_error",
                "authentication_error",
            ]
        ),
        st.text(max_size=40),
        st.sampled_from(["RESOURCE_EXHAUSTED", "INTERNAL", "FAILED_PRECONDITION", None]),
    ),
)
headers = st.dictionaries(
    st.sampled_from(["Retry-After", "retry-after-ms", "x-other"]), st.text(max_size=12), max_size=3
)


@given(st.integers(400, 599), headers, bodies)
def test_every_error_response_maps_to_one_of_four_classes(
    status: int, head: dict[str, str], body: bytes
) -> None:
    for classify in (classify_openai, classify_gemini, classify_anthropic):
        error = classify(status, head, ErrorBody.read(body))
        assert error.kind in KINDS and error.status == status
        assert error.retry_after is None or error.retry_after >= 0
        if status >= 500:
            assert error.kind != "fatal"  # a server fault is never the request's fault


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=8, max_size=40),
    st.text(max_size=60),
    st.text(max_size=60),
)
def test_redaction_never_leaves_the_key(secret: str, before: str, after: str) -> None:
    key = ApiKey(secret)
    assert secret not in redact(before + secret + after, key)


def test_a_key_spelt_like_the_marker_is_still_redacted() -> None:
    assert "redacted" not in redact("key redacted here", ApiKey("redacted"))


@given(
    backoff=st.floats(0.001, 10.0),
    attempt=st.integers(1, 12),
    retry_after=st.none() | st.floats(0.0, 100.0),
)
def test_a_retry_waits_what_the_server_said_else_within_the_backoff(
    backoff: float, attempt: int, retry_after: float | None
) -> None:
    state = RetryCallState(Retrying(), None, (), {})
    state.attempt_number = attempt
    error = Transient("503", status=503, retry_after=retry_after)
    state.outcome = Future.construct(attempt, error, has_exception=True)
    waited = waiting(backoff)(state)
    if retry_after is not None:
        assert waited == retry_after
    else:
        assert 0.0 <= waited <= min(MAX_BACKOFF_S, backoff * 2 ** (attempt - 1))
