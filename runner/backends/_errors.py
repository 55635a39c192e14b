"""How a call to a provider failed, in four classes that decide what happens next.

========================= ==================== ==========================================
class                     retried?             examples
========================= ==================== ==========================================
:class:`RateLimited`      yes, after a pause   429 throttles; the server's retry-after
:class:`QuotaExhausted`   never: terminal      spend limit, arrears, free tier used up
:class:`Transient`        yes, with backoff    5xx, overload, timeouts, resets, bad bodies
:class:`Unreadable`       next run (billed)    a 2xx whose answer cannot be read
:class:`Refused`          never: terminal      401, 403, 404: a wrong key, no permission,
                                               an unknown model
:class:`Fatal`            never                other 4xx: a request the server refuses
========================= ==================== ==========================================

A terminal error (``stops``) stops its backend: no call of it can succeed, so every later
call is refused before it is sent and stays pending for a later run. A 2xx response is billed
whether or not its answer can be read: an :class:`Unreadable` one ends its attempt, so that no
retry is paid for beyond the worst case reserved for the call.

Several providers send 429 for throttles and for exhausted quota alike, so the wire formats
classify by the body, not the status. Messages are redacted of the API key before an error is
made (:func:`runner.backends._secrets.redact`), so printing one never leaks it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from runner._errors import RunnerError
from runner.backends._usage import Bill, Usage

ErrorKind = Literal["rate-limited", "quota", "transient", "fatal"]


class CallError(RunnerError):
    """A call that produced no usable response."""

    kind: ClassVar[ErrorKind]
    retryable: ClassVar[bool]
    stops: ClassVar[bool] = False  # no later call of the backend can succeed
    stopped_because: ClassVar[str] = ""  # why, when it stops its backend

    def __init_subclass__(
        cls,
        *,
        kind: ErrorKind | None = None,
        retryable: bool | None = None,
        stopped_because: str | None = None,
        **rest: object,
    ) -> None:
        """A class of the table in the module docstring, declared in its ``class`` line: its
        ``kind``, whether it is ``retryable``, and why it stops its backend, if it does (a
        subclass that says nothing keeps its parent's)."""
        super().__init_subclass__(**rest)
        if kind is not None:
            cls.kind = kind
        if retryable is not None:
            cls.retryable = retryable
        if stopped_because is not None:
            cls.stops, cls.stopped_because = True, stopped_because

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
        # What the call was billed, where a server answered it with a 2xx (Client.send).
        self.billed = Bill()

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no response"
        code = f" {self.code}" if self.code else ""
        return f"{self.kind} ({where}{code}): {self.message}"


class RateLimited(CallError, kind="rate-limited", retryable=True):
    """The provider throttled the call; ``retry_after`` is the server's wait, when it gave one."""


class QuotaExhausted(CallError, kind="quota", retryable=False, stopped_because="its quota ran out"):
    """The account can make no more calls (spend limit, arrears, daily quota): terminal."""


class Transient(CallError, kind="transient", retryable=True):
    """A failure that another try may not meet: 5xx, overload, timeout, reset, broken body."""


class Unreadable(Transient, retryable=False):
    """A 2xx response whose answer cannot be read (no JSON, no message, a broken part). The
    provider billed it, so it carries the usage the body reported, read before the answer
    (unknown where there is none to read), and it is never tried again within its attempt:
    stored as a transient error, it is sent again by the next run."""

    def __init__(
        self, message: str, *, usage: Usage | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.usage = usage if usage is not None else Usage()  # None: nothing to read


class Fatal(CallError, kind="fatal", retryable=False):
    """The request itself is refused (auth, unknown model, bad parameter): never retried."""


class Refused(Fatal, stopped_because="its key, permission or model was refused"):
    """The key, the account's permission or the model is refused (401, 403, 404, or a code
    that says so): stored as a fatal error, and, as no call of the backend can succeed, it
    stops the backend."""


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


def what_to_do(kind: str, status: int | None, code: str | None) -> str:
    """What a user can do about a stored error of class ``kind`` (a record's outcome), its
    HTTP ``status`` (``None``: no response) and ``code``."""
    if code == "response-too-large":
        return "raise the backend's max_response_bytes if answers this long are expected"
    if code == "off-origin":
        return "nothing was sent; set base_url to that address if it is yours"
    if code == "redirect":
        return "set base_url to the address the server redirects to, if it is right"
    if code == "bad-id":  # runner.batch._ids: an id no documented provider gives
        return "the server's ids are not its API's: check that base_url is the provider's"
    if kind == "quota":
        return "the account's quota is spent: top it up or raise its limit, then run again"
    if kind == "rate-limited":
        return "throttled past every retry: lower requests_per_minute, then run again"
    if kind == "transient":
        return _transient(status)
    if status == 401 or (code or "").upper() in ("INVALID_API_KEY", "API_KEY_INVALID"):
        return "the key was refused: check the backend's key variable (api_key_env)"
    if status == 403:
        return "the key may not use this model or region: check the account's access"
    if status == 404:
        return "the model or endpoint is unknown: check model and base_url"
    return "the server refused the request: read the message; a setting may not suit the model"


def _transient(status: int | None) -> str:
    """What to do about a transient error, by how far the call got."""
    if status is None:
        return "the server could not be reached: check base_url and the network, then run again"
    if 200 <= status < 300:
        return (
            "the server answered with nothing to read, and billed it (counted in the spend): run "
            "again later; if every answer is so, check that base_url speaks this provider's API"
        )
    return "the server failed or timed out: run again later (raise timeout_s if it timed out)"
