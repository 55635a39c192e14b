"""Awaiting an actor's answer, with an error of ours raised inside the actor coming out as
itself: what every caller of an actor needs (the driver, and a port over the store actor that
another actor holds), kept apart from :mod:`._ray` so that :mod:`._actors`, which ``_ray``
imports, can use it too; and the node an actor runs on."""

from __future__ import annotations

from typing import Any

import ray
from ray.exceptions import RayTaskError

from runner._errors import told


async def call(ref: Any) -> Any:
    """Await an actor call; an error of ours raised inside the actor comes out as itself."""
    try:
        return await ref
    except RayTaskError as exc:
        raise cause(exc) from None


def cause(exc: RayTaskError) -> BaseException:
    """The error of ours that ``exc`` wraps, else ``exc``: what :func:`runner._errors.told`
    tells in a line (the mapping the command line uses too) comes out of the actor as itself,
    anything else (a bug) stays wrapped with the actor's traceback."""
    inner = exc.cause
    if isinstance(inner, BaseException) and told(inner) is not None:
        return inner
    return exc


def node_id() -> str:
    """The id of the Ray node this actor runs on (for placement checks and the cluster page)."""
    node: str = ray.get_runtime_context().get_node_id()
    return node


__all__ = ["call", "cause", "node_id"]
