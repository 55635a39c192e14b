"""Talking to providers: wire formats, error classes, rate limits, retries and attempts.

Plain asyncio over aiohttp and tenacity; the distributed run wraps a :class:`Client` in a Ray
actor, but nothing here knows about Ray.

- :class:`Client` sends one attempt of a request through the backend's :class:`RateLimiter`,
  retrying transport failures; :func:`ask` makes the attempts of PROTOCOL §6 and records each.
- Every request a provider receives, online or batch, goes by one HTTP exchange
  (``_exchange.py``) and is retried by one :class:`RetryPolicy` (``_retry.py``).
- :class:`OpenAIChat`, :class:`GeminiGenerate` and :class:`AnthropicMessages` are the wire
  formats; ``PROVIDERS`` says which provider speaks which, where, and with which key
  variable (a server of one's own, ``openai-compatible``, has neither endpoint nor key of
  its own).
- :func:`served_models` lists what such a server serves (``GET {base_url}/models``), which the
  pre-flight compares the configured model with (:class:`ModelCheck`).
- Failures are :class:`CallError` subclasses: :class:`RateLimited`, :class:`QuotaExhausted`
  (terminal), :class:`Transient`, :class:`Refused` (terminal), :class:`Fatal`.
"""

from runner.backends._anthropic import AnthropicMessages, classify_anthropic
from runner.backends._attempts import (
    BEST_EFFORT_ATTEMPTS,
    HEADLINE_ATTEMPTS,
    Sender,
    answer_record,
    ask,
    attempts_allowed,
    error_record,
    parses,
)
from runner.backends._client import (
    DEFAULT_OUTPUT_ESTIMATE,
    Client,
    Exchange,
    call_id,
    configured_key,
    configured_origin,
    decodings,
    key_for,
    redact_reply,
    rough_input_tokens,
    wire_format,
    worst_of,
)
from runner.backends._errors import (
    CallError,
    ErrorKind,
    Fatal,
    QuotaExhausted,
    RateLimited,
    Refused,
    TooLarge,
    Transient,
    Unreadable,
    what_to_do,
)
from runner.backends._gemini import GeminiGenerate, classify_gemini
from runner.backends._limits import Account, LimiterStats, RateLimiter, Slot, parse_reset
from runner.backends._openai import OpenAIChat, classify_openai
from runner.backends._origin import OffOrigin, Origin
from runner.backends._providers import PROVIDERS, Provider, provider_named, thinking_fields
from runner.backends._records import AttemptRecord, Outcome
from runner.backends._retry import RetryPolicy, waiting
from runner.backends._secrets import (
    FRAGMENT,
    KEY_SHAPED,
    ApiKey,
    clip,
    holds_key,
    key_from_env,
    one_line,
    redact,
)
from runner.backends._served import ModelCheck, check_model, served_models
from runner.backends._usage import INPUT_MARGIN, MAX_COUNT, Bill, Usage, Worst
from runner.backends._wire import ErrorBody, Reply, WireFormat, retry_after

__all__ = [
    "BEST_EFFORT_ATTEMPTS",
    "DEFAULT_OUTPUT_ESTIMATE",
    "FRAGMENT",
    "HEADLINE_ATTEMPTS",
    "INPUT_MARGIN",
    "KEY_SHAPED",
    "MAX_COUNT",
    "PROVIDERS",
    "Account",
    "AnthropicMessages",
    "ApiKey",
    "AttemptRecord",
    "Bill",
    "CallError",
    "Client",
    "ErrorBody",
    "ErrorKind",
    "Exchange",
    "Fatal",
    "GeminiGenerate",
    "LimiterStats",
    "ModelCheck",
    "OffOrigin",
    "OpenAIChat",
    "Origin",
    "Outcome",
    "Provider",
    "QuotaExhausted",
    "RateLimited",
    "RateLimiter",
    "Refused",
    "Reply",
    "RetryPolicy",
    "Sender",
    "Slot",
    "TooLarge",
    "Transient",
    "Unreadable",
    "Usage",
    "WireFormat",
    "Worst",
    "answer_record",
    "ask",
    "attempts_allowed",
    "call_id",
    "check_model",
    "classify_anthropic",
    "classify_gemini",
    "classify_openai",
    "clip",
    "configured_key",
    "configured_origin",
    "decodings",
    "error_record",
    "holds_key",
    "key_for",
    "key_from_env",
    "one_line",
    "parse_reset",
    "parses",
    "provider_named",
    "redact",
    "redact_reply",
    "retry_after",
    "rough_input_tokens",
    "served_models",
    "thinking_fields",
    "waiting",
    "what_to_do",
    "wire_format",
    "worst_of",
]
