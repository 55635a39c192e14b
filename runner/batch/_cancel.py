"""Cancelling a run's open batches at their providers (``groundbench batches --cancel``).

A batch is cancelled with its experiment's backend's key, read from the variable the
experiment names and sent only to that backend's base_url: what the store records (a key
variable, an address, a provider) is only checked against the experiment's, never used, so a
store edited or copied elsewhere cannot send a key anywhere. One line per batch says what came
of it; the providers' new states go into the store when no run holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner._errors import ConfigError, RunnerError
from runner.batch._api import ENDED, RemoteBatch

if TYPE_CHECKING:
    from runner.backends import ApiKey, Origin, Provider
    from runner.experiment import Experiment
    from runner.store import BatchRecord

Echo = Callable[[str], None]  # a line at a time


@dataclass(frozen=True)
class Cancelled:
    """A batch asked to cancel, and the provider's answer (``None``: failed or refused)."""

    batch: BatchRecord
    remote: RemoteBatch | None


def cancellable(recorded: Sequence[BatchRecord]) -> list[BatchRecord]:
    """The recorded batches still open at their provider, which a cancel can reach."""
    return [
        b
        for b in recorded
        if b.open and b.remote_id and b.phase != "ended" and b.state not in ENDED
    ]


async def cancel_batches(
    experiment: Experiment, batches: Sequence[BatchRecord], *, echo: Echo
) -> list[Cancelled]:
    """Cancel each batch at its provider, one line each through ``echo``; its ``remote`` is
    ``None`` where it failed or was refused. Its key is the experiment's backend's, sent only
    to that backend's base_url."""
    import aiohttp

    from runner.backends import CallError, OffOrigin, key_from_env, what_to_do
    from runner.batch._factory import batch_api

    outcomes: list[Cancelled] = []
    async with aiohttp.ClientSession() as session:
        for b in batches:
            assert b.remote_id is not None
            remote: RemoteBatch | None = None
            key: ApiKey | None = None
            try:
                target = _cancel_target(experiment, b)
                key = key_from_env(target.key_variable)
                api = batch_api(
                    session, target.provider, b.model, b.base_url, key, origin=target.origin
                )
                remote = await api.cancel(b.remote_id)
            except OffOrigin as exc:  # nothing was sent: the line says both addresses
                line = exc.message
            except CallError as exc:
                if exc.status is None and exc.kind == "transient" and _loopback(b.base_url):
                    line = (
                        f"cannot reach {b.base_url}: the simulator that held it ended with its run"
                    )
                else:
                    line = f"{exc}; {what_to_do(exc.kind, exc.status, exc.code)}"
            except RunnerError as exc:
                line = str(exc)
            else:
                line = server_text(remote.provider_state, key)
            echo(f"batch {b.id} ({server_text(b.remote_id, key)}): {line}")
            outcomes.append(Cancelled(batch=b, remote=remote))
    return outcomes


def record_cancels(store: Path, outcomes: Sequence[Cancelled], *, echo: Echo) -> None:
    """The providers' new states of the batches cancelled, in the store if no run holds it
    (the next run reads them from the providers anyway)."""
    from runner.store import Repository, StoreError

    cancelled = [(o.batch, o.remote) for o in outcomes if o.remote is not None]
    if not cancelled:
        return
    try:
        with Repository(store, lock_wait_s=0) as writable:
            for b, remote in cancelled:
                writable.update_batch(
                    b.id, state=remote.state, provider_state=remote.provider_state
                )
    except StoreError as exc:
        echo(f"the new states are not recorded ({exc}); the next run reads them")


def server_text(text: str, key: ApiKey | None = None) -> str:
    """A text a server gave, as the ledger may hold it (uncut, from an older version), shown
    as one short line, the key (where it was read) and anything key-shaped redacted."""
    from runner.backends import one_line

    return one_line(text, key, limit=80)


@dataclass(frozen=True)
class _CancelTarget:
    """Where a batch's cancel goes and with which key: the experiment's backend's."""

    provider: Provider
    key_variable: str
    origin: Origin


def _cancel_target(experiment: Experiment, batch: BatchRecord) -> _CancelTarget:
    """The experiment's backend of ``batch``: its provider, key variable and origin. A store
    names a variable or an address only to be checked against the experiment's, never used.

    Raises
    ------
    ConfigError
        The experiment has no such backend, or names another provider or key variable than
        the store recorded, or its backend is the run's own simulator (gone with its run).
    OffOrigin
        The store records the batch at another origin than the backend's base_url.
    """
    from runner.backends import configured_origin, provider_named

    spec = experiment.backends.get(batch.backend)
    if spec is None:
        raise ConfigError(
            f"the experiment has no backend {batch.backend}, so no key or address for it; "
            "cancel it at the provider"
        )
    if spec.simulated:
        raise ConfigError("made on a run's own simulator, which ended with its run")
    if batch.provider != spec.provider:
        raise ConfigError(
            f"recorded for provider {batch.provider}, but backend {batch.backend} is "
            f"{spec.provider} in the experiment; cancel it at the provider"
        )
    provider = provider_named(spec.provider)
    variable = spec.api_key_env or provider.key_variable
    base_url = spec.base_url or provider.base_url
    if variable is None or base_url is None:  # a server of one's own: never a batch
        raise ConfigError(f"provider {provider.name} has no batch API; cancel it where it runs")
    if batch.api_key_env is not None and batch.api_key_env != variable:
        raise ConfigError(
            f"the store names key variable {batch.api_key_env}, but backend {batch.backend} "
            f"reads {variable} in the experiment: only the experiment's is read; if the store's "
            "is right, set api_key_env to it"
        )
    origin = configured_origin(f"backend {batch.backend}", base_url)
    origin.admit(batch.base_url)
    return _CancelTarget(provider=provider, key_variable=variable, origin=origin)


def _loopback(url: str) -> bool:
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"
