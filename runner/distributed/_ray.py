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
import math
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import ray
from ray._raylet import Config  # type: ignore[attr-defined]  # in its .pyx, no stub
from ray.exceptions import RayActorError, RayTaskError
from ray.util import get_node_ip_address
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from runner._errors import ClusterError
from runner._names import NAMESPACE, actor_name, run_tag
from runner._port import Outcome
from runner.distributed._actors import CONTROL, QUERIES
from runner.distributed._address import (
    RunAddress,
    described,
    listening,
    note_path,
    read_note,
    same_place,
    silence,
    unproven,
)
from runner.distributed._feeder import RunFailed, WorkerLost
from runner.distributed._local_ray import (
    claim_early,
    plain_prefixes,
    settle_early,
    start_local,
)
from runner.distributed._remote import call as call  # the driver calls actors through _ray
from runner.distributed._remote import cause
from runner.store import (
    KEEP_EVERY_S,
    LEASE_S,
    QUERY_TIMEOUT_S,
    SNAPSHOT_TIMEOUT_S,
    Held,
    Pending,
    Result,
    StoreError,
    first_line,
)

NAME_WAIT_S = 20.0  # how long a named actor of an ended run may take to go away


def connect(address: str | None, *, attach: bool = False, namespace: str | None = None) -> bool:
    """Join the Ray cluster at ``address`` (else ``RAY_ADDRESS``, as under ``ray job submit``),
    else start a local Ray of this process's own, whatever else runs on the machine; ``attach``
    (watching or querying a run) always names its cluster. True if this call started Ray (the
    caller shuts it down)."""
    settle_early()  # a Ray the console script is starting, for this run (runner._launch)
    if ray.is_initialized():
        return claim_early()
    address = address or os.environ.get("RAY_ADDRESS") or None  # set but empty: not given
    if address is None:
        start_local(log_to_driver=not attach, namespace=namespace)
        return True
    plain_prefixes()
    # Ray's own notices (token set-up, start-up) would drown the progress lines; errors stay.
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": not attach}
    if namespace is not None:
        kwargs["namespace"] = namespace
    with _stderr_held() as held, _bounded_wait(attach):
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as exc:  # not running, a wrong address, or a token it wants
            held.seek(0)
            raise ClusterError(_unjoinable(address, exc, held.read())) from None
    return True


def attach(store: Path, address: str | None) -> RunAddress | None:
    """Join the cluster of the run of ``store``: at ``address`` if given, else the one the
    run noted beside its store, in the way that cluster asks (its token, where it wants one),
    else ``RAY_ADDRESS``. The note comes before ``RAY_ADDRESS``: it names the run's own
    cluster, the variable whatever cluster the shell was last pointed at. Returns the note
    followed (its namespace is the run's actors'), None where an address was given.

    Raises
    ------
    ClusterError
        No run is noted and no address given; the note is not this user's own 0600 file, or
        names a cluster it cannot show is the run's; nothing answers at the address, or not
        as a Ray cluster within :data:`ATTACH_WAIT_S`; or the cluster wants a token this
        process does not have or refuses the one it has.
    """
    try:
        note = read_note(store)
    except ClusterError:
        if address is None:
            raise
        note = None  # the user named the cluster: a note not followed changes nothing
    given = address or (os.environ.get("RAY_ADDRESS") or None if note is None else None)
    if given is not None and (note is None or not same_place(given, note.address)):
        _attach_at(given)
        return None
    if ray.is_initialized():  # this process's own cluster (a test's)
        return note
    if note is None:
        raise ClusterError(
            f"{store}: no run of this experiment is going on this machine (a run notes where "
            f"it can be reached in {note_path(store)} while it runs); for a run driven from "
            "another machine, give its cluster: --address HOST:PORT"
        )
    _follow(store, note, vouch=given is None)
    return note


def _follow(store: Path, note: RunAddress, *, vouch: bool) -> None:
    """Join the cluster a note names; ``vouch``: the note alone chose it (no address typed),
    so it must be shown to be the run's before anything is sent there."""
    if not listening(note.address):
        raise ClusterError(
            f"{store}: the run noted in {note_path(store)} has ended: nothing answers at its "
            f"cluster's address ({described(note)}); `groundbench run` starts it again"
        )
    if vouch:
        _vouched(store, note)
    silent = silence(note.address, ATTACH_WAIT_S)
    if silent is not None:
        raise ClusterError(
            f"{store}: the run's Ray at {note.address} {silent}; try again once it answers, "
            "or give its cluster with --address"
        )
    if note.token_auth:
        _use_token(note.address)
    connect(note.address, attach=True, namespace=note.namespace)


def _vouched(store: Path, note: RunAddress) -> None:
    """Refuse, before a byte is sent there, a cluster the note cannot show is the run's: the
    note is a file anyone who can write beside the store may have written, and the cluster it
    names gets this user's Ray token."""
    why = unproven(note)
    if why is not None:
        raise ClusterError(
            f"{store}: not following {note_path(store)} to Ray at {note.address}: it cannot be "
            f"shown to be the run's cluster ({why}), so nothing was sent there; if it is the "
            f"run's, give it: --address {note.address}"
        )


def _attach_at(address: str) -> None:
    """Join the cluster at an address given by the user, as Ray would."""
    if _host_port(address):
        if not listening(address):
            raise ClusterError(
                f"nothing answers at {address}: check the address (`ray status` on the "
                "cluster's head prints it), or leave --address out on the run's machine to use "
                "the address the run noted"
            )
        silent = silence(address, ATTACH_WAIT_S)
        if silent is not None:
            raise ClusterError(
                f"the server at {address} {silent}: check the address (`ray status` on the "
                "cluster's head prints it)"
            )
    connect(address, attach=True)


def cluster_address() -> str:
    """The GCS address of the cluster this process has joined (``host:port``)."""
    address: str = ray.get_runtime_context().gcs_address
    return address


def token_auth() -> bool:
    """Whether this process's cluster asks for a token. Ray turns token authentication on
    through ``RAY_AUTH_MODE`` in the environment, and since 2.59 sets it there itself when
    ``ray.init()`` starts a local cluster."""
    return os.environ.get(AUTH_MODE, "").lower() == "token"


AUTH_MODE = "RAY_AUTH_MODE"


def _use_token(address: str) -> None:
    """Attach in token mode. Ray turns it on for a cluster it finds by itself ("auto") but
    never for an address it is given, so it must be asked; the token is read by Ray, from
    where Ray reads it."""
    if not _token_here():
        raise ClusterError(
            f"the run's Ray cluster at {address} uses token authentication and there is no "
            "token here: set RAY_AUTH_TOKEN to the cluster's token, or RAY_AUTH_TOKEN_PATH to "
            "a file that holds it, or put it in ~/.ray/auth_token (`ray get-auth-token` on "
            "the cluster's head prints it)"
        )
    os.environ[AUTH_MODE] = "token"
    # Ray's core reads its settings once, at import: the variable alone is not seen in this
    # process. Re-reading them is what Ray itself does when it turns token mode on for a
    # local cluster (ray._private.authentication.authentication_token_setup, Ray 2.59+).
    Config.initialize("")


def _token_here() -> bool:
    """Whether Ray will find a token: RAY_AUTH_TOKEN, else the file at RAY_AUTH_TOKEN_PATH,
    else ~/.ray/auth_token (Ray's documented order)."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return True
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token"
    try:
        return bool(Path(path).read_text().strip())
    except OSError:
        return False


def _host_port(address: str) -> bool:
    """``host:port`` (not ``auto``, not a ``ray://`` client address)."""
    return "://" not in address and address.rpartition(":")[2].isdigit()


@contextlib.contextmanager
def _bounded_wait(attach: bool) -> Iterator[None]:
    """While attaching, Ray tries the cluster for 10 s rather than its 20 (it retries a
    cluster that refuses the token as one still starting); a run's own join keeps Ray's."""
    if not attach or WAIT_VARIABLE in os.environ:
        yield
        return
    os.environ[WAIT_VARIABLE] = str(ATTACH_WAIT_S)
    try:
        yield
    finally:
        os.environ.pop(WAIT_VARIABLE, None)


WAIT_VARIABLE = "RAY_gcs_server_port_wait_time_s"  # Ray's operator budget, in tries ~1 s apart
# Attaching: Ray's tries, and how long a server at the address has to answer before Ray is let
# at it (:func:`silence`). Read as each attach starts.
ATTACH_WAIT_S = 10


def _unjoinable(address: str, exc: ConnectionError, said: str) -> str:
    if "InvalidAuthToken" in said or "Unauthenticated" in said:
        if token_auth():
            return (
                f"the Ray cluster at {address} refused the token found here (RAY_AUTH_TOKEN, "
                "else RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token): it is not the cluster's; "
                "`ray get-auth-token` on the cluster's head prints the right one"
            )
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


def named_actor(name: str, namespace: str = NAMESPACE) -> Any:
    """The actor of that name in ``namespace`` (groundbench's), or None.

    An actor whose driver was just killed may still be named while Ray clears that job's
    class table: looking it up then fails inside Ray (an ``AssertionError`` on the class name,
    Ray 2.5x). It is going, so it is None, as an actor already gone is.
    """
    try:
        return ray.get_actor(name, namespace=namespace)
    except (ValueError, AssertionError):
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


def node_ip() -> str:
    """This node's address, as the cluster's other nodes reach it."""
    address: str = get_node_ip_address()  # type: ignore[no-untyped-call]
    return address


def pinned(node: str) -> NodeAffinitySchedulingStrategy:
    """Hard affinity to ``node``: Ray's SPREAD and soft affinity both left actors that ask for
    no CPU on the driver's node, and soft affinity to a node that just died fails the actor."""
    return NodeAffinitySchedulingStrategy(node_id=node, soft=False)


def alive_nodes() -> list[str]:
    return [n["NodeID"] for n in ray.nodes() if n["Alive"]]  # type: ignore[no-untyped-call]


def cluster_cpus() -> int:
    return int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]


# -- calling ------------------------------------------------------------------------------------


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


async def named(start: Callable[[], Any], failure: str) -> Any:
    """Start a named actor, without waiting for it to serve; while an actor of that name is
    still going away, try again for a while (Ray says the name is taken as it starts one)."""
    deadline = time.monotonic() + NAME_WAIT_S
    while True:
        try:
            return start()
        except ValueError as exc:  # Ray: the name is taken
            if time.monotonic() >= deadline:
                raise RunFailed(f"{failure}: {exc}") from None
            await asyncio.sleep(0.2)


# -- the feeder's ports over actors -------------------------------------------------------------


class ActorBackend:
    """A backend actor, online or in batch mode, as the feeder's :class:`CallPort`."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def lease(self, calls: list[Pending], input_bound: int | None = None) -> Outcome:
        outcome: Outcome = await lost_if_dead(self.handle.lease.remote(calls, input_bound))
        return outcome

    async def collect_open(self) -> Outcome:
        outcome: Outcome = await lost_if_dead(self.handle.collect_open.remote())
        return outcome

    async def resume_after_quota(self) -> None:
        await call(self.handle.resume_after_quota.remote())


# -- a running store, from another process ------------------------------------------------------


def query_running_store(
    path: Path,
    sql: str,
    timeout_s: float = QUERY_TIMEOUT_S,
    address: str | None = None,
    token: str | None = None,
) -> Result:
    """``sql`` through the store actor of the run that holds ``path``, in the actor's query
    threads. While it waits, this client says so every ``KEEP_EVERY_S``: killed or cut off, it
    says nothing more, and the store stops the query (Ray stops no actor thread whose caller
    died). Stopped here (Ctrl-C), it cancels the query, as the actor's ``cancel(token)`` does.

    Raises
    ------
    StoreError
        No run of ``path`` is reachable, the store runs as many queries as it takes, or the
        query fails.
    """
    store, _ = _running_store(path, address)
    token = token or secrets.token_hex(8)
    answer = store.query.options(concurrency_group=QUERIES).remote(sql, timeout_s, token)
    try:
        return cast(Result, ray.get(_kept(store, answer, token, timeout_s)))
    except RayTaskError as exc:
        raise cause(exc) from None
    except BaseException:
        store.cancel.options(concurrency_group=CONTROL).remote(token)
        raise


def _running_store(path: Path, address: str | None) -> tuple[Any, RunAddress | None]:
    """The store actor of the run that holds ``path``, and the note followed to it (see
    :func:`attach`).

    Raises
    ------
    ClusterError
        No cluster of the run can be reached.
    StoreError
        No run of ``path`` is going on the cluster reached.
    """
    note = attach(path, address)
    namespace = note.namespace if note is not None else NAMESPACE
    store = named_actor(actor_name(run_tag(path), "store"), namespace)
    if store is None:
        raise StoreError(
            f"{path}: another process holds the file, and no groundbench run of it is going "
            "on the Ray cluster reached; once that process lets the file go, try again"
        )
    return store, note


def snapshot_running_store(path: Path, address: str | None = None) -> Held:
    """A copy of every table and view of the store of the run that holds ``path``, made in one
    transaction (``report`` and ``show`` during a run), as :func:`query_running_store` runs a
    query: in a query's slot, kept alive while this client waits, cancelled if it stops. What
    came back is checked by the caller (:func:`runner.store.reading`).

    Raises
    ------
    StoreError
        No run of ``path`` is reachable, its store runs as many queries as it takes, cannot
        take a snapshot (an older groundbench), or stopped while taking it.
    """
    store, note = _running_store(path, address)
    token = secrets.token_hex(8)
    try:
        answer = store.snapshot.options(concurrency_group=QUERIES).remote(SNAPSHOT_TIMEOUT_S, token)
    except AttributeError:  # a run of a groundbench that takes no snapshot
        raise StoreError(
            f"{path}: the run that holds the file takes no snapshot (an older groundbench); "
            "report once the run has ended"
        ) from None
    try:
        copy = ray.get(_kept(store, answer, token, SNAPSHOT_TIMEOUT_S))
    except RayTaskError as exc:
        inner = cause(exc)
        if inner is not exc:  # an error of ours: a full pool, a time limit, a closed store
            raise inner from None
        why = first_line(exc.cause) if isinstance(exc.cause, Exception) else "it failed"
        raise StoreError(
            f"{path}: the run's store could not take a snapshot ({why}); report once the run "
            "has ended"
        ) from None
    except RayActorError:
        raise StoreError(
            f"{path}: the run's store stopped while taking a snapshot (the run ended?); "
            "report again"
        ) from None
    except BaseException:
        store.cancel.options(concurrency_group=CONTROL).remote(token)
        raise
    return Held(copy, note.pid if note is not None else None)


def _kept(store: Any, answer: Any, token: str, timeout_s: float) -> Any:
    """``answer`` once ready, saying to ``store`` every ``KEEP_EVERY_S`` that this client still
    waits for it; the store ends the query by its time limit, so the wait is bounded too.

    Raises
    ------
    StoreError
        No answer well past the query's limit (the store stopped serving).
    """
    for _ in range(math.ceil((timeout_s + LEASE_S) / KEEP_EVERY_S) + 1):
        ready, _ = ray.wait([answer], timeout=KEEP_EVERY_S)
        if ready:
            return answer
        store.keep.options(concurrency_group=CONTROL).remote(token)
    store.cancel.options(concurrency_group=CONTROL).remote(token)
    raise StoreError(
        f"the run's store gave no answer within {timeout_s + LEASE_S:g} s, past the query's "
        "limit; try again, or query the store once the run has ended"
    )
