"""What a run is asked (:class:`RunOptions`), and where it says what happens (:data:`Echo`,
:data:`Show`): shared by the driver and what it settles before Ray starts (``_prepare``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runner.monitor import Snapshot

Echo = Callable[[str], None]  # the run's messages and its closing summary, a line at a time
Show = Callable[[Snapshot], None]  # the live view, every progress_every_s


@dataclass(frozen=True)
class RunOptions:
    address: str | None = None  # a Ray cluster to join; None: RAY_ADDRESS, else a local Ray
    wait_on_quota_s: float | None = None  # wait this long after a quota error, then go on
    max_quota_waits: int = 1
    progress_every_s: float = 5.0
    max_spend: float | None = None  # US dollars this run may spend (None: no cap)
    limit: int | None = None  # only the first N questions of every cell (a smoke run)
    preflight: bool = False  # a few calls per configuration and decoding first (the CLI: on)
    output_tokens: int | None = None  # the stated mean output per call, for the estimates
