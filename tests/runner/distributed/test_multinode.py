"""The run on a cluster of three Ray nodes on this machine, one worker node killed mid-run.

The cluster lives in a process of its own (``multinode.py``): this session's test process has
joined its own local Ray already.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conditions import DataRoot
from tests.runner.distributed.runs import assert_every_key_once, query

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


def test_a_run_spread_over_nodes_survives_a_worker_node_killed_mid_run(
    experiment_store: Path, small_root: DataRoot, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    out = tmp_path / "seen.json"
    settings.write_text(
        json.dumps(
            {"store": str(experiment_store), "root": str(small_root.root),
             "images": str(small_root.images), "tmp": str(tmp_path), "seed": 11,
             "kill_after": 30, "out": str(out)}
        )
    )  # fmt: skip
    # A Ray directory of its own (short, for Ray's socket paths): ray.cluster_utils.Cluster
    # notes its head in <RAY_TMPDIR>/ray/ray_current_cluster, where any ray.init() on the
    # machine with no address (a `groundbench demo` in the suite's other process) would join
    # it, and lose its objects when a node is killed.
    ray_tmp = Path(tempfile.mkdtemp(prefix="gb-nodes-", dir="/tmp"))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.runner.distributed.multinode", str(settings)],
            cwd=REPO, capture_output=True, text=True, timeout=420,
            env={**os.environ, "RAY_TMPDIR": str(ray_tmp)},
        )  # fmt: skip
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = json.loads(out.read_text())
    placement: dict[str, str] = seen["placement"]
    assert placement["store"] == seen["head"]  # the store stays with the driver and its file
    scorers = [role for role in placement if role.startswith("scorer-")]
    assert len(scorers) == 2
    assert placement["backend-a"] != placement["backend-b"]  # spread, one node each
    assert len({placement[s] for s in scorers}) == 2
    assert seen["killed"] in seen["workers"]
    # Mid-run: the killed backend had made 30 of its answers, most were yet to come.
    assert 30 <= seen["killed_at"] < seen["answered"] * 0.8
    assert not seen["failure"], seen["failure"]
    assert seen["complete"] and seen["unscored"] == 0, "\n".join(seen["lines"])
    killed = seen["killed_backend"]
    assert seen["restarts"] == {b: int(b == killed) for b in ("a", "b")}
    assert seen["paid_twice"] <= seen["in_flight"]
    assert_every_key_once(experiment_store)
    assert (
        query(
            experiment_store,
            "SELECT configuration, condition, budget, qid, attempt FROM responses "
            "GROUP BY ALL HAVING count(*) > 1",
        )
        == []
    )
    assert query(experiment_store, "SELECT count(*) FROM responses ANTI JOIN scores "
                 "USING (configuration, condition, budget, qid, attempt) "
                 "WHERE outcome = 'answer'") == [(0,)]  # fmt: skip
