"""The deployment files in ops/: well-formed, in agreement with each other and with the package.

They cannot be run here (no cloud, no Kubernetes); what can go wrong silently is checked: a
Ray version that differs between image and manifests (Ray refuses mixed versions), an image
that leaves out a package, keys that would reach a file, a store on a shared volume.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

OPS = Path(__file__).resolve().parents[2] / "ops"
ROOT = OPS.parent


def _yaml(name: str) -> Any:
    return yaml.safe_load((OPS / name).read_text())


@pytest.fixture(scope="module")
def cluster() -> Any:
    return _yaml("cluster.yaml")


@pytest.fixture(scope="module")
def rayjob() -> Any:
    return _yaml("rayjob.yaml")


def _ray_version_of_image() -> str:
    found = re.search(r"^ARG RAY_VERSION=(\S+)$", (OPS / "Dockerfile").read_text(), re.M)
    assert found, "the Dockerfile names no RAY_VERSION"
    return found.group(1)


def test_image_and_manifests_run_one_ray_version(cluster: Any, rayjob: Any) -> None:
    version = _ray_version_of_image()
    assert rayjob["spec"]["rayClusterSpec"]["rayVersion"] == version
    image = cluster["docker"]["image"]
    pods = _pods(rayjob)
    assert {c["image"] for pod in pods.values() for c in pod["containers"]} == {image}


def test_the_image_holds_every_package_and_the_cluster_extra() -> None:
    text = (OPS / "Dockerfile").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    for package in packages:
        assert re.search(rf"^COPY .*\b{package} \./{package}$", text, re.M), package
    assert "cluster" in project["project"]["optional-dependencies"]
    assert '".[cluster]"' in text


def test_the_cluster_config_starts_ray_with_the_keys_and_ships_the_images(cluster: Any) -> None:
    assert cluster["head_node_type"] in cluster["available_node_types"]
    assert "/data/images" in cluster["file_mounts"]
    for commands in (cluster["head_start_ray_commands"], cluster["worker_start_ray_commands"]):
        start = next(c for c in commands if "ray start" in c)
        assert start.index(". ~/.groundbench-keys") < start.index("ray start")


def test_the_rayjob_runs_the_grid_with_keys_on_every_pod_and_the_store_on_the_head(
    rayjob: Any,
) -> None:
    assert (rayjob["apiVersion"], rayjob["kind"]) == ("ray.io/v1", "RayJob")
    assert rayjob["spec"]["entrypoint"].startswith("groundbench run ")
    pods = _pods(rayjob)
    for pod in pods.values():
        (container,) = pod["containers"]
        assert {"secretRef": {"name": "groundbench-keys"}} in container["envFrom"]
    claims = {
        role: {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
        for role, pod in pods.items()
    }
    assert claims == {
        "head": {"groundbench-data", "groundbench-store"},
        "workers": {"groundbench-data"},
    }


def test_no_secret_is_written_in_ops() -> None:
    for path in OPS.iterdir():
        text = path.read_text()
        assert not re.search(r"(sk-[A-Za-z0-9]{8}|AIza[0-9A-Za-z_\-]{10})", text), path.name


def _pods(rayjob: Any) -> dict[str, Any]:
    spec = rayjob["spec"]["rayClusterSpec"]
    pods = {"head": spec["headGroupSpec"]["template"]["spec"]}
    for group in spec["workerGroupSpecs"]:
        pods[group["groupName"]] = group["template"]["spec"]
    return pods
