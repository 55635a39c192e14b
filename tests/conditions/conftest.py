"""The real one-image fixture as a data root (the synthetic sets are in tests/conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conditions import Cohort, CohortSpec, DataRoot, build_cohort

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
