"""Every recorded error body maps to its class; throttle and quota are told apart by body."""

from __future__ import annotations

import pytest

from runner.backends import (
    PROVIDERS,
    CallError,
    Refused,
    classify_anthropic,
    classify_gemini,
    classify_openai,
    what_to_do,
)
from runner.backends._wire import ErrorBody

from .recorded import RECORDED, Recorded


def _classify(r: Recorded) -> CallError:
    by_wire = {"gemini": classify_gemini, "anthropic": classify_anthropic}
    classify = by_wire.get(r.wire, classify_openai)
    return classify(r.status, r.headers, ErrorBody.read(r.raw))


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
def test_each_recorded_error_maps_to_its_class(recorded: Recorded) -> None:
    error = _classify(recorded)
    assert error.kind == recorded.kind
    assert error.status == recorded.status
    assert error.retryable == (recorded.kind in ("rate-limited", "transient"))
    if recorded.retry_after is not None:
        assert error.retry_after == pytest.approx(recorded.retry_after)


# A wrong key, no permission, an unknown model: no call of the backend can succeed.
REFUSED = {
    "openai 401", "openai 404 model", "dashscope invalid key", "ark AuthenticationError",
    "ark InvalidEndpointOrModel.NotFound", "kimi invalid_authentication_error",
    "gemini API_KEY_INVALID", "gemini PERMISSION_DENIED", "gemini NOT_FOUND",
    "anthropic authentication_error", "anthropic permission_error", "anthropic not_found_error",
}  # fmt: skip


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
def test_a_refused_key_or_model_and_spent_quota_stop_the_backend(recorded: Recorded) -> None:
    error = _classify(recorded)
    assert isinstance(error, Refused) == (recorded.name in REFUSED)
    assert error.stops == (recorded.name in REFUSED or recorded.kind == "quota")


def test_a_gemini_key_refused_as_invalid_argument_says_so_in_its_code() -> None:
    r = next(r for r in RECORDED if r.name == "gemini API_KEY_INVALID")
    assert _classify(r).code == "API_KEY_INVALID"


def test_every_class_is_covered_for_every_wire_format() -> None:
    for wire in ("openai", "gemini", "anthropic"):
        kinds = {r.kind for r in RECORDED if r.wire == wire}
        assert kinds == {"rate-limited", "quota", "transient", "fatal"}, wire


def test_a_429_is_classified_by_its_body_not_its_status() -> None:
    by_kind = {r.kind for r in RECORDED if r.status == 429 and r.wire == "openai"}
    assert by_kind == {"rate-limited", "quota", "transient"}


def test_a_masked_key_in_an_error_body_is_redacted() -> None:
    r = next(r for r in RECORDED if r.name == "openai 401")
    message = str(_classify(r))
    assert "sk-proj" not in message and "[redacted]" in message


def _declared() -> list[tuple[str, str, str]]:
    """(provider, code, kind) for every code a provider unit declares."""
    out: list[tuple[str, str, str]] = []
    for p in PROVIDERS.values():
        for kind, names in (("quota", p.errors.quota), ("rate-limited", p.errors.rate),
                            ("transient", p.errors.transient)):  # fmt: skip
            out.extend((p.name, code, kind) for code in sorted(names))
    return out


@pytest.mark.parametrize(("provider", "code", "kind"), _declared())
@pytest.mark.parametrize("status", [400, 429])
def test_every_code_a_provider_declares_is_read_as_it_says(
    provider: str, code: str, kind: str, status: int
) -> None:
    body = ErrorBody({"error": {"code": code, "message": "m", "type": "t"}})
    assert classify_openai(status, {}, body).kind == kind, (provider, code)


def test_each_openai_wire_provider_declares_its_own_codes() -> None:
    for p in PROVIDERS.values():
        declared = p.errors.quota | p.errors.rate | p.errors.transient
        # Gemini reads rpc statuses, Anthropic typed errors; a server of one's own (no
        # endpoint of its own: vLLM, Ollama) documents no codes: its errors are read by status.
        hosted_openai = p.wire == "openai" and p.base_url is not None
        assert bool(declared) == hosted_openai, p.name


@pytest.mark.parametrize("recorded", RECORDED, ids=[r.name for r in RECORDED])
def test_what_to_do_about_a_refusal_names_the_key_the_access_or_the_model(
    recorded: Recorded,
) -> None:
    error = _classify(recorded)
    advice = what_to_do(error.kind, error.status, error.code)
    if recorded.name in REFUSED:
        wanted = {401: "key was refused", 403: "may not use", 404: "model or endpoint"}
        assert wanted.get(error.status or 0, "key was refused") in advice  # Gemini's 400 too
    elif error.kind == "quota":
        assert "quota is spent" in advice
    else:
        assert "key" not in advice  # a throttle, a fault, a bad request: never the key


def test_an_anthropic_error_is_read_by_its_type_before_its_status() -> None:
    # A type the status alone would misread: overload sent as a 429, a throttle as a 400.
    overloaded = ErrorBody({"type": "error", "error": {"type": "overloaded_error", "message": "m"}})
    throttled = ErrorBody({"type": "error", "error": {"type": "rate_limit_error", "message": "m"}})
    assert classify_anthropic(429, {}, overloaded).kind == "transient"
    assert classify_anthropic(400, {}, throttled).kind == "rate-limited"
    assert classify_anthropic(401, {}, ErrorBody.read(b"<html>")).stops  # no type: the status
