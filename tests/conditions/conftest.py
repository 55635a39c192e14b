"""Data roots for the conditions tests: the real one-image fixture, and synthetic sets."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conditions import Cohort, CohortSpec, DataRoot, SynthSpec, build_cohort, generate_synthetic

FIXTURE = "coco-000000039769"


def fixture_root(shared_data: Path, into: Path) -> DataRoot:
    """A data root whose ``refcoco/`` is a copy of the real fixture (its image beside it)."""
    shutil.copytree(shared_data / FIXTURE, into / "refcoco")
    return DataRoot.at(into, into / "refcoco")


@pytest.fixture
def real_root(shared_data: Path, tmp_path: Path) -> DataRoot:
    """A fresh, writable copy of the real fixture, laid out as a RefCOCO data root."""
    return fixture_root(shared_data, tmp_path)


@pytest.fixture(scope="session")
def real_cohort(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    root = fixture_root(shared_data, tmp_path_factory.mktemp("real"))
    return build_cohort(root, CohortSpec(sources=("refcoco",)))


SMALL = SynthSpec(seed=3, images=80)


@pytest.fixture(scope="session")
def small_root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    """A small synthetic data root (80 images), shared read-only by the tests."""
    out = tmp_path_factory.mktemp("synth-small")
    generate_synthetic(out, SMALL)
    return DataRoot.at(out)


@pytest.fixture(scope="session")
def small_cohort(small_root: DataRoot) -> Cohort:
    return build_cohort(small_root, CohortSpec(seed=0, per_source=15, matched=15))


@pytest.fixture(scope="session")
def full_root(tmp_path_factory: pytest.TempPathFactory) -> DataRoot:
    """The default synthetic data root: room for a full 1,500-question cohort."""
    out = tmp_path_factory.mktemp("synth-full")
    generate_synthetic(out, SynthSpec())
    return DataRoot.at(out)


@pytest.fixture(scope="session")
def full_cohort(full_root: DataRoot) -> Cohort:
    """A full 1,500-question cohort from the default synthetic data."""
    return build_cohort(full_root)
