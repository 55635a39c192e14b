"""A run on a three-node Ray cluster on this machine, one worker node killed mid-run.

Run by ``test_multinode.py`` in a process of its own (a process joins one Ray; the test
session's is another): ``python -m tests.runner.distributed.multinode SETTINGS.json``. It
starts the cluster (``ray.cluster_utils.Cluster``: a head and two worker nodes, one CPU each),
a slow simulator on loopback for each backend, and the run in a thread; it notes where every
actor runs, and once the backend on a worker node has made ``kill_after`` answers (of its 135)
kills that node; it writes what it saw as JSON to the settings' ``out`` for the test to judge.
Each simulator pauses at ``kill_after`` answers of its backend until the kill is done: on a
busy machine, a backend had answered all its calls by the time the actors were located (or
the other had started late, and the two's count reached the mark only then), and nothing was
left to restart.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from conditions import DataRoot, load_cohort
from runner._names import NAMESPACE, actor_name, run_tag
from runner.distributed import RunReport
from runner.simulator import Faults, SimSpec
from tests.runner.distributed.conftest import KEY, KEY_ENV, simulator_thread, write_experiment
from tests.runner.distributed.runs import run_once, until

IN_FLIGHT = 4
ONE_CPU: dict[str, Any] = {"num_cpus": 1, "include_dashboard": False}


def main(settings: dict[str, Any]) -> dict[str, Any]:
    root = DataRoot.at(settings["root"], settings["images"])
    store, tmp = Path(settings["store"]), Path(settings["tmp"])
    os.environ[KEY_ENV] = KEY  # every node's workers inherit it, as a cluster's nodes would
    cluster = Cluster(initialize_head=True, head_node_args=ONE_CPU)
    workers = [cluster.add_node(**ONE_CPU) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
    head = ray.get_runtime_context().get_node_id()
    cohort = load_cohort(store)
    spec = SimSpec(seed=settings["seed"], faults=Faults(latency_s=(0.2, 0.4)))
    try:
        with (
            simulator_thread(cohort, root, tmp / "va", spec) as (url_a, sim_a),
            simulator_thread(cohort, root, tmp / "vb", spec) as (url_b, sim_b),
        ):
            sims = {"a": sim_a, "b": sim_b}
            for each in sims.values():
                each.pause_after = settings["kill_after"]
            path = _experiment(tmp, store, root, url_a, url_b)
            result: list[RunReport] = []
            lines: list[str] = []
            failure: list[str] = []

            def go() -> None:
                try:
                    result.append(run_once(path, lines))
                except Exception as exc:  # reported to the test, which prints it
                    failure.append(f"{type(exc).__name__}: {exc}")

            runner = threading.Thread(target=go, daemon=True)
            runner.start()
            placement = _placement(store)
            # SPREAD puts the two backends on two nodes: kill a worker node that holds one.
            killed = next(b for b in ("a", "b") if placement[f"backend-{b}"] != head)
            victim = next(n for n in workers if n.node_id == placement[f"backend-{killed}"])
            sim = sims[killed]
            until(lambda: sim.stats.answered >= settings["kill_after"])
            killed_at = sim.stats.answered
            cluster.remove_node(victim, allow_graceful=False)
            for other in sims.values():  # the killed node's calls too: their client is gone
                other.pause_after, other.paused = None, False
            runner.join(240)
            report = result[0] if result else None
            return {
                "head": head,
                "workers": [n.node_id for n in workers],
                "placement": placement,
                "killed": victim.node_id,
                "killed_backend": killed,
                "killed_at": killed_at,
                "answered": sim.stats.answered,
                "complete": report is not None and report.complete,
                "restarts": {b.name: b.restarts for b in report.backends} if report else {},
                "unscored": report.unscored if report else None,
                "paid_twice": sim_a.stats.paid_twice + sim_b.stats.paid_twice,
                "lines": lines,
                "failure": failure,
                "in_flight": IN_FLIGHT * 2,
            }
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]


def _experiment(tmp: Path, store: Path, root: DataRoot, url_a: str, url_b: str) -> Path:
    def backend(model: str, url: str) -> dict[str, object]:
        return {
            "provider": "qwen", "model": model, "base_url": url, "api_key_env": KEY_ENV,
            "requests_per_minute": 60000, "max_concurrency": IN_FLIGHT,
        }  # fmt: skip

    return write_experiment(
        tmp / "exp.toml", store, root,
        {"a": backend("qwen3-vl-plus", url_a), "b": backend("qwen3-vl-max", url_b)},
        [{"name": "qa", "backend": "a", "conditions": ["base"]},
         {"name": "qb", "backend": "b", "conditions": ["base"]}],
    )  # fmt: skip


def _placement(store: Path) -> dict[str, str]:
    """The node of every actor of the run, by role (``store``, ``backend-a``, ``scorer-…``)."""
    prefix = actor_name(run_tag(store), "")
    deadline = time.monotonic() + 30
    while True:
        named = [
            a["name"]
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == NAMESPACE and a["name"].startswith(prefix)
        ]
        roles = {name.removeprefix(prefix) for name in named}
        scorers = sum(role.startswith("scorer-") for role in roles)
        if {"store", "backend-a", "backend-b"} <= roles and scorers == 2:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    nodes: dict[str, str] = {}
    for name in named:
        actor = ray.get_actor(name, namespace=NAMESPACE)
        nodes[name.removeprefix(prefix)] = str(ray.get(actor.node.remote(), timeout=30))
    return nodes


if __name__ == "__main__":
    settings = json.loads(Path(sys.argv[1]).read_text())
    Path(settings["out"]).write_text(json.dumps(main(settings)))
