"""Error responses as the providers send them (bodies from their documentation and from
published error reports; request ids shortened), with the class each must map to."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runner.backends import ErrorKind


@dataclass(frozen=True)
class Recorded:
    name: str
    wire: str  # "openai", "gemini" or "anthropic"
    status: int
    body: Any  # a JSON document, or raw bytes
    kind: ErrorKind
    headers: dict[str, str] = field(default_factory=dict)
    retry_after: float | None = None

    @property
    def raw(self) -> bytes:
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()


def _oa(message: str, type_: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _g(status: int, rpc: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": rpc, "details": list(details)}}


def _a(type_: str, message: str) -> dict[str, Any]:
    """Anthropic's error shape (docs.claude.com/en/api/errors)."""
    return {"type": "error", "error": {"type": type_, "message": message},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}  # fmt: skip


def _quota_failure(quota_id: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                        "quotaId": quota_id}],
    }  # fmt: skip


def _retry(delay: str) -> dict[str, Any]:
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}


RECORDED: tuple[Recorded, ...] = (
    # -- OpenAI ----------------------------------------------------------------------------
    Recorded("openai insufficient_quota", "openai", 429, _oa(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota", "insufficient_quota"), "quota"),
    Recorded("openai credit_balance_exhausted", "openai", 429, _oa(
        "Your credit balance is exhausted.", "insufficient_quota",
        "credit_balance_exhausted"), "quota"),
    Recorded("openai organization_spend_limit_exceeded", "openai", 429, _oa(
        "Your organization has reached its monthly spend limit.", "insufficient_quota",
        "organization_spend_limit_exceeded"), "quota"),
    Recorded("openai project_spend_limit_exceeded", "openai", 429, _oa(
        "This project has reached its spend limit.", "insufficient_quota",
        "project_spend_limit_exceeded"), "quota"),
    Recorded("openai billing_hard_limit_reached", "openai", 400, _oa(
        "Billing hard limit has been reached", "invalid_request_error",
        "billing_hard_limit_reached"), "quota"),
    Recorded("openai rate_limit_exceeded", "openai", 429, _oa(
        "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): "
        "Limit 500, Used 500, Requested 1. Please try again in 120ms.", "requests",
        "rate_limit_exceeded"), "rate-limited",
        headers={"retry-after-ms": "120", "retry-after": "1"}, retry_after=0.12),
    Recorded("openai 401", "openai", 401, _oa(
        "Incorrect API key provided: sk-proj-ab***xy. You can find your API key at "
        "https://platform.openai.com/account/api-keys.", "invalid_request_error",
        "invalid_api_key"), "fatal"),
    Recorded("openai 404 model", "openai", 404, _oa(
        "The model `gpt-9` does not exist or you do not have access to it.",
        "invalid_request_error", "model_not_found"), "fatal"),
    Recorded("openai 400", "openai", 400, _oa(
        "Invalid 'max_tokens': integer above maximum value.", "invalid_request_error",
        "integer_above_max_value"), "fatal"),
    Recorded("openai 500", "openai", 500, _oa(
        "The server had an error while processing your request.", "server_error", None),
        "transient"),
    Recorded("openai 503 html", "openai", 503, b"<html><body>Service Unavailable</body></html>",
             "transient"),
    Recorded("openai 502 empty", "openai", 502, b"", "transient"),
    # -- DashScope (Qwen), compatible mode --------------------------------------------------
    Recorded("dashscope Arrearage", "openai", 400, _oa(
        "Access denied, please make sure your account is in good standing.", "Arrearage",
        "Arrearage"), "quota"),
    Recorded("dashscope AllocationQuota.FreeTierOnly", "openai", 403, _oa(
        "The free tier of the model has been exhausted. If you wish to continue access the "
        'model on a paid basis, please disable the "use free tier only" mode in the '
        "management console.", "AllocationQuota.FreeTierOnly",
        "AllocationQuota.FreeTierOnly"), "quota"),
    Recorded("dashscope Throttling.AllocationQuota plan spent", "openai", 429, _oa(
        "Free allocated quota exceeded.", "Throttling.AllocationQuota",
        "Throttling.AllocationQuota"), "quota"),
    Recorded("dashscope Throttling.AllocationQuota per minute", "openai", 429, _oa(
        "Allocated quota exceeded, please increase your quota limit.",
        "Throttling.AllocationQuota", "Throttling.AllocationQuota"), "rate-limited"),
    Recorded("dashscope Throttling.RateQuota", "openai", 429, _oa(
        "Requests rate limit exceeded, please try again later.", "Throttling.RateQuota",
        "Throttling.RateQuota"), "rate-limited", headers={"Retry-After": "2"}, retry_after=2.0),
    Recorded("dashscope insufficient_quota", "openai", 429, _oa(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota", "insufficient_quota"), "quota"),
    Recorded("dashscope InvalidParameter", "openai", 400, _oa(
        "<400> InternalError.Algo.InvalidParameter: Range of input length should be "
        "[1, 129024]", "invalid_request_error", "invalid_parameter_error"), "fatal"),
    Recorded("dashscope invalid key", "openai", 401, _oa(
        "Incorrect API key provided. ", "invalid_request_error", "invalid_api_key"), "fatal"),
    # -- Volcengine Ark (Doubao) ------------------------------------------------------------
    Recorded("ark AccountOverdueError", "openai", 403, {"error": {
        "code": "AccountOverdueError", "message": "The request failed because your account "
        "has an overdue balance. Request ID: 0217", "param": "", "type": "Forbidden"}},
        "quota"),
    Recorded("ark RateLimitExceeded.EndpointRPMExceeded", "openai", 429, {"error": {
        "code": "RateLimitExceeded.EndpointRPMExceeded", "message": "The request failed "
        "because you have exceeded the RPM limit of the endpoint. Request ID: 0217",
        "param": "", "type": "TooManyRequests"}}, "rate-limited"),
    Recorded("ark ServerOverloaded", "openai", 429, {"error": {
        "code": "ServerOverloaded", "message": "The service is currently unable to handle "
        "additional requests due to server overload. Request ID: 0217", "param": "",
        "type": "TooManyRequests"}}, "transient"),
    Recorded("ark AuthenticationError", "openai", 401, {"error": {
        "code": "AuthenticationError", "message": "The API key in the request is missing or "
        "invalid. Request ID: 0217", "param": "", "type": "Unauthorized"}}, "fatal"),
    Recorded("ark InvalidEndpointOrModel.NotFound", "openai", 404, {"error": {
        "code": "InvalidEndpointOrModel.NotFound", "message": "The model or endpoint "
        "doubao-x does not exist or you do not have access to it.", "param": "",
        "type": "NotFound"}}, "fatal"),
    Recorded("ark InternalServiceError", "openai", 500, {"error": {
        "code": "InternalServiceError", "message": "The service encountered an unexpected "
        "internal error. Request ID: 0217", "param": "", "type": "InternalServerError"}},
        "transient"),
    # -- Moonshot (Kimi) --------------------------------------------------------------------
    Recorded("kimi exceeded_current_quota_error", "openai", 429, {"error": {
        "message": "Your account org-x <ak-x> is suspended, please check your plan and "
        "billing details", "type": "exceeded_current_quota_error"}}, "quota"),
    Recorded("kimi rate_limit_reached_error", "openai", 429, {"error": {
        "message": "Your account org-x <ak-x> request reached organization max RPM: 200, "
        "please try again after 1 seconds", "type": "rate_limit_reached_error"}},
        "rate-limited"),
    Recorded("kimi engine_overloaded_error", "openai", 429, {"error": {
        "message": "The engine is currently overloaded, please try again later",
        "type": "engine_overloaded_error"}}, "transient"),
    Recorded("kimi invalid_authentication_error", "openai", 401, {"error": {
        "message": "Invalid Authentication", "type": "invalid_authentication_error"}},
        "fatal"),
    # -- Gemini -----------------------------------------------------------------------------
    Recorded("gemini per-day quota", "gemini", 429, _g(
        429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan "
        "and billing details.", _quota_failure("GenerateRequestsPerDayPerProjectPerModel"),
        _retry("20s")), "quota"),
    Recorded("gemini free-tier per-day quota", "gemini", 429, _g(
        429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", _quota_failure(
            "GenerateRequestsPerDayPerProjectPerModel-FreeTier")), "quota"),
    Recorded("gemini per-minute throttle", "gemini", 429, _g(
        429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan "
        "and billing details.", _quota_failure("GenerateRequestsPerMinutePerProjectPerModel"),
        _retry("20.04466179s")), "rate-limited", retry_after=20.04466179),
    Recorded("gemini bare RESOURCE_EXHAUSTED", "gemini", 429, _g(
        429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        "rate-limited"),
    Recorded("gemini FAILED_PRECONDITION", "gemini", 400, _g(
        400, "FAILED_PRECONDITION", "User location is not supported for the API use without "
        "a billing account linked."), "quota"),
    Recorded("gemini API_KEY_INVALID", "gemini", 400, _g(
        400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
         "domain": "googleapis.com",
         "metadata": {"service": "generativelanguage.googleapis.com"}},
        {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US",
         "message": "API key not valid. Please pass a valid API key."}), "fatal"),
    Recorded("gemini INVALID_ARGUMENT", "gemini", 400, _g(
        400, "INVALID_ARGUMENT", "Unable to process input image. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting"), "fatal"),
    Recorded("gemini PERMISSION_DENIED", "gemini", 403, _g(
        403, "PERMISSION_DENIED", "Permission denied on resource project x."), "fatal"),
    Recorded("gemini NOT_FOUND", "gemini", 404, _g(
        404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta."), "fatal"),
    Recorded("gemini INTERNAL", "gemini", 500, _g(
        500, "INTERNAL", "An internal error has occurred."), "transient"),
    Recorded("gemini UNAVAILABLE", "gemini", 503, _g(
        503, "UNAVAILABLE", "The model is overloaded. Please try again later."), "transient"),
    Recorded("gemini DEADLINE_EXCEEDED", "gemini", 504, _g(
        504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
        "transient"),
    # -- Anthropic (error types from docs.claude.com/en/api/errors) ------------------------
    Recorded("anthropic rate_limit_error", "anthropic", 429, _a(
        "rate_limit_error", "This request would exceed the rate limit for your organization "
        "of 50 requests per minute."), "rate-limited", headers={"retry-after": "7"},
        retry_after=7.0),
    Recorded("anthropic overloaded_error", "anthropic", 529, _a(
        "overloaded_error", "Overloaded"), "transient"),
    Recorded("anthropic api_error", "anthropic", 500, _a(
        "api_error", "Internal server error"), "transient"),
    Recorded("anthropic timeout_error", "anthropic", 504, _a(
        "timeout_error", "Request timed out"), "transient"),
    Recorded("anthropic authentication_error", "anthropic", 401, _a(
        "authentication_error", "invalid x-api-key"), "fatal"),
    Recorded("anthropic permission_error", "anthropic", 403, _a(
        "permission_error", "Your API key does not have permission to use the specified "
        "resource."), "fatal"),
    Recorded("anthropic not_found_error", "anthropic", 404, _a(
        "not_found_error", "model: claude-9"), "fatal"),
    Recorded("anthropic invalid_request_error", "anthropic", 400, _a(
        "invalid_request_error", "messages.0.content.0.image.source.base64: image exceeds 5 "
        "MB maximum"), "fatal"),
    Recorded("anthropic request_too_large", "anthropic", 413, _a(
        "request_too_large", "Request exceeds the maximum allowed number of bytes."), "fatal"),
    Recorded("anthropic billing_error", "anthropic", 402, _a(
        "billing_error", "There is an issue with your billing or payment information."),
        "quota"),
    Recorded("anthropic credit balance too low", "anthropic", 400, _a(
        "invalid_request_error", "Your credit balance is too low to access the Anthropic API. "
        "Please go to Plans & Billing to upgrade or purchase credits."), "quota"),
)  # fmt: skip
