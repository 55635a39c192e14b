"""Batch mode: a backend's calls as the provider's batch jobs, at half the online price.

Plain asyncio over aiohttp, no Ray. :class:`BatchApi` is a provider's batch endpoints
(``_openai``: OpenAI's files and batches, which DashScope copies; ``_gemini``: Gemini's
``batchGenerateContent``); the run's policy over them — splitting, recording each batch in the
store before going on, polling, reading results into ``responses``, resume — is ``_runner``'s.
"""

from runner.batch._api import ENDED, BatchApi, BatchLimits, BatchState, RemoteBatch, ResultLine
from runner.batch._factory import batch_api
from runner.batch._ledger import StoreLedger
from runner.batch._runner import (
    BatchOutcome,
    BatchRunner,
    BatchSettings,
    Ledger,
    MakeApi,
    OpenBatch,
    Where,
)

__all__ = [
    "ENDED",
    "BatchApi",
    "BatchLimits",
    "BatchOutcome",
    "BatchRunner",
    "BatchSettings",
    "BatchState",
    "Ledger",
    "MakeApi",
    "OpenBatch",
    "RemoteBatch",
    "ResultLine",
    "StoreLedger",
    "Where",
    "batch_api",
]
