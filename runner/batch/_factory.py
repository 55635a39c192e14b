"""Which batch wire talks to which provider."""

from __future__ import annotations

import aiohttp

from runner._errors import ConfigError
from runner.backends import ApiKey, Provider
from runner.batch._api import BatchApi
from runner.batch._gemini import GeminiBatches
from runner.batch._openai import OpenAIBatches


def batch_api(
    session: aiohttp.ClientSession, provider: Provider, model: str, base_url: str, key: ApiKey
) -> BatchApi:
    """The batch endpoints of ``provider`` at ``base_url``, for ``model``, on ``session``.

    Raises
    ------
    ConfigError
        The provider has no batch API that groundbench speaks.
    """
    if provider.batch == "openai":
        return OpenAIBatches(session, provider, model, base_url, key)
    if provider.batch == "gemini":
        return GeminiBatches(session, model, base_url, key)
    raise ConfigError(f"provider {provider.name} has no batch API that groundbench speaks")
