"""Batch mode: a backend's calls as the provider's batch jobs, at half the online price.

Plain asyncio over aiohttp, no Ray. :class:`BatchApi` is a provider's batch endpoints
(``_openai``: OpenAI's files and batches, which DashScope copies; ``_gemini``: Gemini's
``batchGenerateContent``; ``_anthropic``: Anthropic's Message Batches, the requests inline).
``_runner``'s :class:`BatchRunner` is a backend's port in batch mode: the feeder leases it
calls, a batch a lease, and it makes, records, polls and reads each batch (each step in the
store's ledger before the next), and collects those a killed run left open.
:func:`cancel_batches` cancels a run's open batches (``groundbench batches --cancel``) with the
experiment's keys, sent only to the experiment's addresses.
"""

from runner.batch._api import ENDED, BatchApi, BatchLimits, BatchState, RemoteBatch, ResultLine
from runner.batch._cancel import (
    Cancelled,
    cancel_batches,
    cancellable,
    record_cancels,
    server_text,
)
from runner.batch._factory import batch_api, batch_limits
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
    "Cancelled",
    "Ledger",
    "MakeApi",
    "OpenBatch",
    "RemoteBatch",
    "ResultLine",
    "Where",
    "batch_api",
    "batch_limits",
    "cancel_batches",
    "cancellable",
    "record_cancels",
    "server_text",
]
