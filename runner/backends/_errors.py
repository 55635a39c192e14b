"""How a call to a provider failed, in four classes that decide what happens next.

========================= ==================== ==========================================
class                     retried?             examples
========================= ==================== ==========================================
:class:`RateLimited`      yes, after a pause   429 throttles; the server's retry-after
:class:`QuotaExhausted`   never: terminal      spend limit, arrears, free tier used up
:class:`Transient`        yes, with backoff    5xx, overload, timeouts, resets, bad bodies
:class:`Fatal`            never                401, 403, 404, other 400s
========================= ==================== ==========================================

Several providers send 429 for throttles and for exhausted quota alike, so the wire formats
classify by the body, not the status. Messages are redacted of the API key before an error is
made (:func:`runner.backends._secrets.redact`), so printing one never leaks it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from runner._errors import RunnerError

ErrorKind = Literal["rate-limited", "quota", "transient", "fatal"]


class CallError(RunnerError):
    """A call that produced no usable response."""

    kind: ClassVar[ErrorKind]
    retryable: ClassVar[bool]

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retry_after: float | None = None,
        sent: bool = True,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.retry_after = retry_after
        self.sent = sent  # False: refused before any byte left (the backend had stopped)
        self.latency_s: float | None = None  # of the exchange that failed, when there was one
        self.transport_retries = 0  # retries made before this error ended the attempt

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no response"
        code = f" {self.code}" if self.code else ""
        return f"{self.kind} ({where}{code}): {self.message}"


class RateLimited(CallError):
    """The provider throttled the call; ``retry_after`` is the server's wait, when it gave one."""

    kind = "rate-limited"
    retryable = True


class QuotaExhausted(CallError):
    """The account can make no more calls (spend limit, arrears, daily quota): terminal."""

    kind = "quota"
    retryable = False


class Transient(CallError):
    """A failure that another try may not meet: 5xx, overload, timeout, reset, broken body."""

    kind = "transient"
    retryable = True


class Fatal(CallError):
    """The request itself is refused (auth, unknown model, bad parameter): never retried."""

    kind = "fatal"
    retryable = False


class TooLarge(Fatal):
    """The response body ran past the backend's ``max_response_bytes``: stored as a fatal error
    (code ``response-too-large``) and never parsed; read no further than the cap."""

    def __init__(self, limit: int, status: int) -> None:
        super().__init__(
            f"the response ran past max_response_bytes = {limit:,} bytes and was dropped "
            "unread; raise the limit if such answers are expected",
            status=status,
            code="response-too-large",
        )
