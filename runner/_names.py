"""Names of a run's Ray actors, derived from its store's path, so that another process (the
monitor, ``groundbench sql`` during a run, tests) can find them; no Ray import here."""

from __future__ import annotations

import hashlib
from pathlib import Path

NAMESPACE = "groundbench"


def run_tag(store: Path) -> str:
    """A short name for one experiment's run, from its store's path."""
    return hashlib.sha256(str(Path(store).resolve()).encode()).hexdigest()[:12]


def actor_name(tag: str, role: str) -> str:
    """The name of a run's actor: another run of the same experiment cannot start beside it,
    and ``ray.get_actor(name, namespace=NAMESPACE)`` finds it."""
    return f"groundbench-{tag}-{role}"
