"""Every touch of Ray outside the actor declarations: joining a cluster, finding named actors,
placing actors on nodes, calling them, and turning Ray's errors back into ours.

Ray wraps an exception raised inside an actor in ``RayTaskError`` and reports a dead actor as
``RayActorError``; the rest of the runner sees neither — an error of ours comes out as itself
(:func:`call`), a dead worker as :class:`WorkerLost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

import ray
from ray.exceptions import RayActorError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from conditions import ConditionsError
from runner._errors import ClusterError, RunnerError
from runner._names import NAMESPACE, actor_name, run_tag
from runner.distributed._actors import QUERIES
from runner.distributed._feeder import RunFailed, WorkerLost
from runner.distributed._worker import ChunkOutcome
from runner.store import QUERY_TIMEOUT_S, Pending, Result, StoreError, first_line
from scoring import ScoringError

NAME_WAIT_S = 20.0  # how long a named actor of an ended run may take to go away


def connect(address: str | None, *, attach: bool = False) -> bool:
    """Join the Ray cluster at ``address`` (else ``RAY_ADDRESS``, as under ``ray job submit``);
    a run with neither starts a local one, ``attach`` (watching or querying a run) looks for
    one on this machine. True if this call started Ray (the caller shuts it down)."""
    if ray.is_initialized():
        return False
    # Ray's own notices (token set-up, start-up) would drown the progress lines; errors stay.
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": not attach}
    address = address or os.environ.get("RAY_ADDRESS")
    if address is None and not attach:
        ray.init(include_dashboard=False, **kwargs)
        return True
    with _stderr_held() as held:
        try:
            ray.init(address=address or "auto", **kwargs)
        except ConnectionError as exc:  # not running, a wrong address, or a token it wants
            held.seek(0)
            raise ClusterError(_unjoinable(address or "auto", exc, held.read())) from None
    return True


def _unjoinable(address: str, exc: ConnectionError, said: str) -> str:
    if "InvalidAuthToken" in said or "Unauthenticated" in said:
        return (
            f"the Ray cluster at {address} refused this client's token (Ray: Authentication "
            "token is missing or incorrect): the cluster uses token authentication, so "
            "export RAY_AUTH_MODE=token here, with the cluster's token in RAY_AUTH_TOKEN or "
            "RAY_AUTH_TOKEN_PATH"
        )
    return (
        f"cannot join the Ray cluster at {address} ({first_line(exc)}): check that it is "
        "running and that the address is right"
    )


@contextlib.contextmanager
def _stderr_held() -> Iterator[IO[str]]:
    """This process's standard error, written to a file while the block runs and passed on
    after it. Ray's core writes a warning a second to it while it retries a cluster that
    refuses it; the caller reads them to say, in one line, what went wrong, and a failure
    drops them."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as held:
        os.dup2(held.fileno(), 2)
        failed = True
        try:
            yield held
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            if not failed:
                sys.stderr.write(held.read())


def shutdown() -> None:
    ray.shutdown()


def named_actor(name: str) -> Any:
    """The actor of that name in groundbench's namespace, or None."""
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None


def put(value: object) -> Any:
    """``value`` in the object store, to hand to many actors once."""
    return ray.put(value)


def kill(handle: Any) -> None:
    ray.kill(handle, no_restart=True)


# -- placement ----------------------------------------------------------------------------------


def driver_node() -> str:
    node: str = ray.get_runtime_context().get_node_id()
    return node


def pinned(node: str) -> NodeAffinitySchedulingStrategy:
    """Hard affinity to ``node``: Ray's SPREAD and soft affinity both left actors that ask for
    no CPU on the driver's node, and soft affinity to a node that just died fails the actor."""
    return NodeAffinitySchedulingStrategy(node_id=node, soft=False)


def alive_nodes() -> list[str]:
    return [n["NodeID"] for n in ray.nodes() if n["Alive"]]  # type: ignore[no-untyped-call]


def cluster_cpus() -> int:
    return int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]


# -- calling ------------------------------------------------------------------------------------


async def call(ref: Any) -> Any:
    """Await an actor call; an error of ours raised inside the actor comes out as itself."""
    try:
        return await ref
    except RayTaskError as exc:
        raise cause(exc) from None


def cause(exc: RayTaskError) -> BaseException:
    """The error of ours that ``exc`` wraps, else ``exc``."""
    inner = exc.cause
    if isinstance(inner, RunnerError | ConditionsError | ScoringError):
        return inner
    return exc


async def lost_if_dead(ref: Any) -> Any:
    """:func:`call`, with a dead actor as :class:`WorkerLost`."""
    try:
        return await call(ref)
    except RayActorError as exc:
        raise WorkerLost(str(exc).splitlines()[0]) from None


async def quietly(ref: Any) -> None:
    """Await ``ref`` for at most 10 s, whatever happens: tearing down, the actor may be gone."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.wrap_future(ref.future()), timeout=10)


def is_gone(exc: BaseException, closed: type[BaseException]) -> bool:
    """Whether ``exc`` says the actor called has gone, or answered with ``closed``."""
    if isinstance(exc, RayTaskError):
        return isinstance(exc.cause, closed)
    return isinstance(exc, RayActorError | closed)


async def when_name_free(
    start: Callable[[], Any], ready: Callable[[Any], Any], failure: str
) -> Any:
    """Start a named actor and wait until ``ready`` says it serves; while an actor of that
    name (a killed run's, a dead backend's) is still going away, try again for a while."""
    deadline = time.monotonic() + NAME_WAIT_S
    while True:
        try:
            handle = start()
            await call(ready(handle))
            return handle
        except ValueError as exc:  # Ray: the name is taken
            if time.monotonic() >= deadline:
                raise RunFailed(f"{failure}: {exc}") from None
            await asyncio.sleep(0.2)


# -- the feeder's ports over actors -------------------------------------------------------------


class ActorBackend:
    """A backend actor as the feeder's :class:`BackendPort`."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def run(self, chunk: list[Pending]) -> ChunkOutcome:
        outcome: ChunkOutcome = await lost_if_dead(self.handle.run.remote(chunk))
        return outcome

    async def resume_after_quota(self) -> None:
        await call(self.handle.resume_after_quota.remote())


class ActorStore:
    """The store actor as the feeder's :class:`PendingSource`."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def pending(self, configurations: Sequence[str]) -> list[Pending]:
        calls: list[Pending] = await call(self.handle.pending.remote(list(configurations)))
        return calls

    async def unscored(self) -> int:
        left: int = await call(self.handle.unscored.remote())
        return left

    async def requeue_unscored(self) -> None:
        await call(self.handle.requeue_unscored.remote())


# -- a running store, from another process ------------------------------------------------------


def query_running_store(
    path: Path,
    sql: str,
    timeout_s: float = QUERY_TIMEOUT_S,
    address: str | None = None,
    token: str | None = None,
) -> Result:
    """``sql`` through the store actor of the run that holds ``path``, in the actor's query
    threads; interrupted there if this client stops waiting (Ctrl-C), or by the actor's
    ``cancel(token)``.

    Raises
    ------
    StoreError
        No run of ``path`` is reachable, or the query fails.
    """
    connect(address, attach=True)
    store = named_actor(actor_name(run_tag(path), "store"))
    if store is None:
        raise StoreError(
            f"{path}: another process holds the file, and no groundbench run of it is "
            "reachable on this Ray cluster"
        )
    token = token or secrets.token_hex(8)
    answer = store.query.options(concurrency_group=QUERIES).remote(sql, timeout_s, token)
    try:
        return cast(Result, ray.get(answer))
    except RayTaskError as exc:
        raise cause(exc) from None
    except BaseException:
        store.cancel.options(concurrency_group=QUERIES).remote(token)
        raise
