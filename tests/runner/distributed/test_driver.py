"""The driver's start-up without Ray: the questions are read while Ray starts, and a failure of
either is reported as a user would have met it when the questions came first."""

from __future__ import annotations

from pathlib import Path

import pytest

from conditions import DataRoot
from runner._errors import ClusterError, ConfigError
from runner.distributed import _driver, _prepare, _ray
from runner.experiment import load_experiment
from tests.runner.distributed.conftest import write_experiment

SIMULATED: dict[str, object] = {
    "provider": "qwen",
    "model": "qwen3-vl-plus",
    "base_url": "simulator",
}


def test_work_beside_gives_its_result_and_its_error() -> None:
    assert _prepare.beside(lambda: 42).result(timeout=10) == 42

    def fails() -> None:
        raise ConfigError("no cohort")

    with pytest.raises(ConfigError, match="no cohort"):
        _prepare.beside(fails).result(timeout=10)


def _experiment(tmp_path: Path, store: Path, root: DataRoot) -> Path:
    return write_experiment(
        tmp_path / "exp.toml", store, root, {"a": SIMULATED}, [{"name": "qa", "backend": "a"}]
    )


def _unjoinable(address: str | None) -> bool:
    raise ClusterError("cannot join the Ray cluster at nowhere:1")


def test_the_questions_error_comes_first_when_ray_cannot_start_either(
    tmp_path: Path, small_root: DataRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ray, "connect", _unjoinable)
    path = _experiment(tmp_path, tmp_path / "empty.duckdb", small_root)
    with pytest.raises(ConfigError, match="holds no cohort"):
        _driver.run_experiment(load_experiment(path), echo=lambda _: None)


def test_ray_failing_to_start_is_reported_once_the_questions_are_read(
    tmp_path: Path,
    small_root: DataRoot,
    experiment_store: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_ray, "connect", _unjoinable)
    path = _experiment(tmp_path, experiment_store, small_root)
    with pytest.raises(ClusterError, match="cannot join"):
        _driver.run_experiment(load_experiment(path), echo=lambda _: None)


def test_a_missing_key_fails_before_ray_is_asked_to_start(
    tmp_path: Path, small_root: DataRoot, experiment_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str | None] = []
    monkeypatch.setattr(_ray, "connect", asked.append)
    monkeypatch.delenv("GB_UNSET_KEY", raising=False)
    backend: dict[str, object] = {"provider": "qwen", "model": "m", "api_key_env": "GB_UNSET_KEY"}
    path = write_experiment(
        tmp_path / "exp.toml", experiment_store, small_root, {"a": backend},
        [{"name": "qa", "backend": "a"}],
    )  # fmt: skip
    with pytest.raises(ConfigError, match="GB_UNSET_KEY"):
        _driver.run_experiment(load_experiment(path), echo=lambda _: None)
    assert asked == []
