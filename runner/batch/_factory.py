"""Which batch wire talks to which provider."""

from __future__ import annotations

import aiohttp

from runner._errors import ConfigError
from runner.backends import ApiKey, Origin, Provider
from runner.batch import _anthropic, _gemini, _openai
from runner.batch._anthropic import AnthropicBatches
from runner.batch._api import BatchApi, BatchLimits
from runner.batch._gemini import GeminiBatches
from runner.batch._openai import OpenAIBatches


def batch_api(
    session: aiohttp.ClientSession,
    provider: Provider,
    model: str,
    base_url: str,
    key: ApiKey,
    *,
    origin: Origin,
) -> BatchApi:
    """The batch endpoints of ``provider`` at ``base_url``, for ``model``, on ``session``.
    ``key`` goes only to ``origin``, the configured base_url's: a ``base_url`` a store
    recorded is refused at the first request if it is elsewhere.

    Raises
    ------
    ConfigError
        The provider has no batch API that groundbench speaks.
    """
    # The parameters are the clients' own (OpenAIBatches' the same list): this picks the client,
    # the client builds its Peer (its wire's key header and classifier, its timeout and cap).
    if provider.batch == "openai":
        return OpenAIBatches(session, provider, model, base_url, key, origin=origin)
    if provider.batch == "gemini":
        return GeminiBatches(session, model, base_url, key, origin=origin)
    if provider.batch == "anthropic":
        return AnthropicBatches(session, model, base_url, key, origin=origin)
    raise ConfigError(f"provider {provider.name} has no batch API that groundbench speaks")


def batch_limits(provider: Provider) -> BatchLimits:
    """What one batch of ``provider``'s may hold, by its documentation (the same for every
    model): known before any session is open, so a backend's shape is.

    Raises
    ------
    ConfigError
        The provider has no batch API that groundbench speaks.
    """
    if provider.batch == "openai":
        return _openai.LIMITS.get(provider.name, _openai.LIMITS["openai"])
    if provider.batch == "gemini":
        return _gemini.LIMITS
    if provider.batch == "anthropic":
        return _anthropic.LIMITS
    raise ConfigError(f"provider {provider.name} has no batch API that groundbench speaks")
