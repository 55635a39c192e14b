"""Batch mode: a backend's calls as the provider's batch jobs, at half the online price.

Plain asyncio over aiohttp, no Ray. :class:`BatchApi` is a provider's batch endpoints
(``_openai``: OpenAI's files and batches, which DashScope copies; ``_gemini``: Gemini's
``batchGenerateContent``); the run's policy over them — splitting, recording each batch in the
store before going on, polling, reading results into ``responses``, resume — is ``_runner``'s.
"""

from runner.batch._api import ENDED, BatchApi, BatchLimits, BatchState, RemoteBatch, ResultLine

__all__ = ["ENDED", "BatchApi", "BatchLimits", "BatchState", "RemoteBatch", "ResultLine"]
