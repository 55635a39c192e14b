"""Shared test set-up: hypothesis profiles, the real data beside the checkout, synthetic sets."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from conditions import Cohort, CohortSpec, DataRoot, SynthSpec, build_cohort, generate_synthetic

# Every property test draws the profile's count of examples (a few scale it, tests/examples.py).
# The machine is shared and noisy: no per-example deadline. In CI, examples are derived from
# the test's name so that a red run can be reproduced exactly. GROUNDBENCH_HYPOTHESIS=thorough
# draws 20 times as many, about the counts the laws once ran at in every run, for a nightly or
# soak run; a failure it finds is kept in .hypothesis/ and replayed first by the next local run.
settings.register_profile("dev", deadline=None, max_examples=100)
settings.register_profile("ci", deadline=None, max_examples=100, derandomize=True, print_blob=True)
settings.register_profile("thorough", deadline=None, max_examples=2_000, print_blob=True)
settings.load_profile(
    os.environ.get("GROUNDBENCH_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")
)

# Ray starts its workers at niceness 15, where any normal process beside the suite (another
# suite, a benchmark) leaves them ~3% of a core: every run test then waits ~30 times longer
# than it takes. The tests check what a run does, not its scheduling priority, so every Ray the
# suite starts (here, in driver processes and in the multi-node cluster) runs its workers at
# the suite's own priority. Users' runs keep Ray's default.
os.environ.setdefault("RAY_worker_niceness", "0")

SHARED = Path(__file__).resolve().parents[2] / "shared"
# The key variable the tests' backends read, and its value (a simulator on loopback takes it).
KEY_ENV = "GB_TEST_KEY"
KEY = "sk-groundbench-test-0123456789abcdef"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``: small real data laid out as the project expects."""
    data = SHARED / "data"
    if not data.is_dir():
        why = f"{data} is missing: the real-data tests need ../shared beside the checkout"
        # CI always has ../shared: there a missing copy is a failure, never a quiet skip. A
        # bare clone elsewhere skips these tests and says why.
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return data


@pytest.fixture(scope="session")
def chromium() -> Path:
    """The headless Chromium the browser checks open pages in (Debian's ``chromium``)."""
    from runner.pages._browser import find_chromium

    found = find_chromium()
    if found is None:
        why = "no Chromium (on PATH or in GROUNDBENCH_CHROMIUM): install Debian's chromium package"
        # .ci/run installs it: in CI a missing browser is a failure, as a missing ../shared is.
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return found


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


@pytest.fixture(scope="session")
def local_ray() -> Iterator[str]:
    """A local Ray for every test that needs one; yields its address for other drivers.

    The key variable is set before Ray starts, so its workers inherit it as a cluster's
    nodes would have it.
    """
    import ray  # only where a test asks for Ray

    os.environ[KEY_ENV] = KEY
    # "local": a Ray of the session's own, never one a `ray start` on the machine noted (what
    # ray.init() with no address joins), as a run starts its own.
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, logging_level=logging.ERROR,
        log_to_driver=False,
    )  # fmt: skip
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture
def ray_connects(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Each address a run asks Ray to connect to; the ask fails, so a test that expects none
    sees a run that got that far fail loudly."""
    from runner.distributed import _ray

    connects: list[str | None] = []

    def connect(address: str | None, **_: object) -> bool:
        connects.append(address)
        raise RuntimeError("Ray was started")

    monkeypatch.setattr(_ray, "connect", connect)
    return connects
