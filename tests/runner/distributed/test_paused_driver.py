"""A driver paused past its workers' silence (Ctrl-Z then fg, a VM stall, heavy swap) goes on
where it was: its workers, other processes, hear no beat, send nothing and wait; once it runs
again they hear it, and the run completes as if it had never stopped (issue 56).

Before, the silence was taken for a lost driver: every worker stopped for good, said nothing,
and the run ended with exit status 3 and requests left.
"""

from __future__ import annotations

import signal
import time

import pytest

from runner.distributed._lifeline import SILENCE_S
from runner.simulator import Behaviour, Faults, SimSpec
from tests.runner.distributed.conftest import (
    KEY_ENV,
    RunSetup,
    simulator_thread,
    write_experiment,
)
from tests.runner.distributed.runs import assert_every_key_once, driver_process, until

pytestmark = pytest.mark.slow

PAUSE_S = SILENCE_S + 7  # the workers notice the silence, and wait on past it
CLEAN = Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0)  # one attempt per request


def test_a_driver_paused_past_the_silence_goes_on_and_completes_its_run(run: RunSetup) -> None:
    # 50–150 ms a call, 8 at once: the pause lands with most of the grid still to send.
    slow = SimSpec(behaviour=CLEAN, faults=Faults(latency_s=(0.05, 0.15)))
    with simulator_thread(run.cohort, run.root, run.tmp / "v", slow) as (url, sim):
        backend = {
            "provider": "qwen", "model": "qwen3-vl-plus", "base_url": url,
            "api_key_env": KEY_ENV, "requests_per_minute": 60000, "max_concurrency": 8,
        }  # fmt: skip
        path = write_experiment(
            run.tmp / "exp.toml", run.store, run.root, {"a": backend},
            [{"name": "qa", "backend": "a", "conditions": ["base", "no-image"]}],
        )  # fmt: skip
        driver = driver_process(path, run.ray_address, run.tmp)
        try:
            until(lambda: sim.stats.answered >= 10 or driver.poll() is not None)
            assert driver.poll() is None, driver.communicate()[0]
            driver.send_signal(signal.SIGSTOP)  # the workers are Ray's processes: they run on
            time.sleep(PAUSE_S)
            paused_at = sim.stats.answered
            driver.send_signal(signal.SIGCONT)
            output = driver.communicate(timeout=300)[0]
        finally:
            if driver.poll() is None:
                driver.send_signal(signal.SIGCONT)
                driver.kill()
                driver.wait()
        total = sum(sim.stats.statuses.values())
    assert driver.returncode == 0, output
    assert "requests left" not in output and "lifeline" not in output, output
    assert paused_at < total  # the grid was not done when the driver stopped
    assert_every_key_once(run.store)
