"""Shared test set-up: hypothesis profiles and the real data beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# The machine is shared and noisy: no per-example deadline. In CI, examples are derived from
# the test's name so that a red run can be reproduced exactly.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``: small real data laid out as the project expects."""
    data = SHARED / "data"
    if not data.is_dir():
        pytest.fail(f"{data} is missing: the real-data tests need ../shared beside the checkout")
    return data
