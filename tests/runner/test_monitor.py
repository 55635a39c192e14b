"""The live monitor: rates and ETA from two samples, and what it draws."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.text import Text

from runner.backends import LimiterStats
from runner.batch import OpenBatch
from runner.distributed import Stop, Tally, WorkerStats
from runner.estimate import Limited
from runner.experiment import Prices
from runner.monitor import (
    MAX_CELLS,
    ChangedLines,
    Sample,
    Snapshot,
    plain_lines,
    render,
    snapshot,
    summary_line,
)
from runner.monitor import (
    _backends as backends_table,
)
from runner.monitor import (
    _cells as cells_table,
)
from runner.store import CellProgress, Progress


def _progress(complete: int) -> list[Progress]:
    return [Progress("qwen-max", 1000, complete, 3, 0, 0, 0, 0, 0)]


def _cells(complete: int) -> list[CellProgress]:
    return [
        CellProgress("qwen-max", "base", 8, 500, complete, 3, complete, 97.5, 61.25),
        CellProgress("qwen-max", "base", 16, 500, 0, 0, None, None, None),
    ]


_REFUSED = Stop(kind="refused", why="fatal (HTTP 401 invalid_api_key): no")


def _stats(requests: int, tokens: int, quota: str | None = None) -> WorkerStats:
    stop = Stop(kind="quota", why=quota) if quota is not None else None
    tally = Tally(
        http_calls=requests + 12, transient_retried=6, throttles_retried=3,
        finished=requests, attempts=requests + 3, answered=requests + 1, transient_ended=2,
        input_tokens=tokens, output_tokens=tokens,
    )  # fmt: skip
    return WorkerStats(
        tally=tally, in_flight=7, ceiling=16, limiter=LimiterStats(throttles=5), stop=stop
    )


def test_rates_eta_and_spend_come_from_two_readings() -> None:
    before = Sample(10.0, _progress(100), _cells(100), {"qwen": _stats(120, 50_000), "kimi": None})
    now = Sample(20.0, _progress(300), _cells(300), {"qwen": _stats(330, 150_000), "kimi": None})
    view = snapshot(now, before, 0.0, {"qwen": Prices(input_per_mtok=1.0, output_per_mtok=2.0)})
    assert view.rate == 20.0 and view.eta_s == 35.0  # 700 left at 20 a second
    qwen = next(b for b in view.backends if b.name == "qwen")
    assert qwen.requests_per_s == 21.0
    assert qwen.tokens_per_min == 60 * 200_000 / 10
    assert qwen.spend == 0.45  # 150k in at $1/M + 150k out at $2/M
    assert (qwen.in_flight, qwen.ceiling, qwen.throttled) == (7, 16, 5)
    # Calls, attempts answered and requests finished apart; transient failures retried apart
    # from those that ended an attempt.
    assert (qwen.calls_sent, qwen.answered, qwen.finished) == (342, 331, 330)
    assert (qwen.transient_retried, qwen.transient_ended) == (6, 2)
    kimi = next(b for b in view.backends if b.name == "kimi")
    assert not kimi.reachable
    assert snapshot(now, None, 0.0, {}).rate is None  # one reading: no rate yet


def test_the_view_draws_backends_cells_and_the_totals() -> None:
    before = Sample(0.0, _progress(100), _cells(100), {"qwen": _stats(0, 0)})
    now = Sample(10.0, _progress(300), _cells(300), {"qwen": _stats(210, 10, quota="spent")})
    view = snapshot(now, before, 0.0, {})
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(render(view))
    text = out.getvalue()
    for expected in ("Backends", "qwen", "21.0", "7/16", "EXHAUSTED", "Cells", "base", "61.2",
                     "97.5", "300/1,000 requests complete", "ETA 0m35s", "━"):  # fmt: skip
        assert expected in text, expected
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(render(view, max_cells=1))
    assert "and 1 more cells: 0 complete, 1 waiting" in out.getvalue()  # the moving one shown
    assert "61.2" in out.getvalue()
    lines = plain_lines(view)
    assert lines[0].startswith("[   10.0 s] 300/1,000 requests complete (30.0%)")
    assert lines[1] == (
        "  qwen: 21.0 req/s, 120 tokens/min, 7/16 in flight; 222 HTTP calls sent, 211 attempts "
        "answered, 210 requests finished; 5 × 429; transient failures: 6 retried, 2 ended an "
        "attempt; spend $0.00, QUOTA EXHAUSTED (spent)"
    )


def test_a_backend_stopped_by_a_refused_key_says_so() -> None:
    refused = WorkerStats(tally=Tally(finished=8), stop=_REFUSED)
    now = Sample(10.0, _progress(0), _cells(0), {"qwen": refused})
    view = snapshot(now, None, 0.0, {})
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(render(view))
    assert "KEY/MODEL REFUSED" in out.getvalue()
    lines = plain_lines(view)
    assert "key or model refused: qwen" in lines[0]
    assert "STOPPED: fatal (HTTP 401 invalid_api_key): no" in lines[1]


def test_at_80_by_24_the_totals_stay_and_condition_names_are_whole() -> None:
    """A terminal crops what is taller than itself from the bottom: the totals must stay, and
    cue-colour-true and cue-colour-wrong must not both read "cue-co…"."""
    conditions = ("base", "no-image", "cue-colour-true", "cue-colour-wrong", "cue-spatial-wrong")
    cells = [
        CellProgress(configuration, condition, n, 60, 30 if "colour" in condition else 0, 1,
                     30, 97.5, 61.25)
        for configuration in ("gemini-high", "qwen-max")
        for condition in conditions
        for n in (8, 16, 24, 32, 64)
    ]  # fmt: skip
    backends = {name: _stats(10, 10) for name in ("doubao", "gemini-high", "kimi", "qwen-max")}
    before = Sample(0.0, _progress(100), cells, backends)
    view = snapshot(Sample(10.0, _progress(300), cells, backends), before, 0.0, {})
    console = Console(file=io.StringIO(), width=80, height=24, color_system=None, record=True)
    console.print(render(view))
    lines = console.export_text().splitlines()
    text = "\n".join(lines)
    assert len(lines) <= 24 and max(len(line) for line in lines) <= 80
    assert "300/1,000 requests complete" in text and "ETA 0m35s" in text
    assert "cue-colour-true" in text and "cue-colour-wrong" in text and "…" not in text
    assert "gemini-high" in text and "more cells" in text  # the rest counted, not cropped


def test_a_batch_mode_backend_shows_its_open_batches_and_spend_at_the_batch_price() -> None:
    batches = (
        OpenBatch("gb-0123456789abcdef", "in_progress", 500, 120, 3, 95.0),
        OpenBatch("gb-fedcba9876543210", "validating", 40, None, None, 4.0),
    )
    tally = Tally(
        finished=300, attempts=300, answered=290, input_tokens=1_000_000, output_tokens=500_000
    )
    stats = WorkerStats(tally=tally, batch=True, batches=batches)
    now = Sample(10.0, _progress(300), _cells(300), {"qwen": stats})
    prices = Prices(input_per_mtok=1.0, output_per_mtok=2.0, batch_rate=0.5)
    view = snapshot(now, None, 0.0, {"qwen": prices})
    (qwen,) = view.backends
    assert qwen.spend == 1.0 and qwen.saved == 1.0  # $2 online, half in batch
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(render(view))
    text = out.getvalue()
    for expected in ("Open batches", "gb-0123456789abcdef", "in_progress", "120", "1m35s",
                     "validating", "batch"):  # fmt: skip
        assert expected in text, expected
    lines = plain_lines(view)
    assert lines[1] == (
        "  qwen (batch mode): 2 batches open; 290 attempts answered, 300 stored; spend $1.00 at "
        "the batch price ($1.00 saved)"
    )
    assert lines[2] == (
        "    batch gb-0123456789abcdef: in_progress, 120 done, 3 failed of 500, open 1m35s"
    )
    assert lines[3].startswith("    batch gb-fedcba9876543210: validating, — done")


LONG_NAMES = ("gemini-2.5-pro-preview-high", "qwen-vl-max-latest", "doubao-seed-1-6-vision")
_RULES = re.compile(r"[\s\u2500-\u257f]+")  # spaces, rules and bars


def _long_view() -> Snapshot:
    """Long backend names, large counts, one backend spent, one refused, one restarting."""
    conditions = ("base", "cue-colour-true", "cue-colour-wrong")
    cells = [
        CellProgress(name, condition, n, 1_200, 600, 12, 600, 97.5, 61.25)
        for name in (*LONG_NAMES, "gemini-high")
        for condition in conditions
        for n in (8, 64)
    ]
    backends: dict[str, WorkerStats | None] = {
        LONG_NAMES[0]: _stats(123_456, 10),
        LONG_NAMES[1]: _stats(23_456, 10, quota="spent"),
        LONG_NAMES[2]: WorkerStats(tally=Tally(finished=8), stop=_REFUSED),
        "gemini-high": None,
    }
    before = Sample(0.0, _progress(100), cells, backends)
    return snapshot(Sample(10.0, _progress(300), cells, backends), before, 0.0, {})


def _words(view: Snapshot) -> set[str]:
    """Every word the view may print: its totals, its tables' titles, captions, both layouts'
    headers and every cell."""
    texts = [summary_line(view), "(continued)"]
    for narrow in (False, True):
        for spec in (backends_table(view, narrow), cells_table(view, MAX_CELLS, narrow)):
            texts += [spec.title, spec.caption or "", *(c.header for c in spec.columns)]
            texts += [c if isinstance(c, str) else c.plain for row in spec.rows for c in row
                      if isinstance(c, str | Text)]  # fmt: skip
    return {w for text in texts for w in _RULES.split(text) if w}


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_monitor_fits_its_width_and_folds_no_name_or_number(width: int) -> None:
    """At 120 columns the view wrapped "transien" / "t" and "gemini-h" / "igh": now every line
    is within the width and every word printed is a whole name, header or figure."""
    view = _long_view()
    console = Console(file=io.StringIO(), width=width, height=200, color_system=None, record=True)
    console.print(render(view))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    printed = {w for w in _RULES.split(text) if w}
    assert printed <= _words(view), printed - _words(view)
    assert {*LONG_NAMES, "gemini-high", "123,468", "61.2", "cue-colour-wrong"} <= printed
    assert "transient" in printed or "retried" in printed  # a header, whole
    assert "…" not in text


def test_piped_progress_shows_a_backend_only_when_its_figures_changed() -> None:
    """A log gets the totals every time, and a backend's line only when its figures moved
    since its last one: a finished backend's final line once, not every 5 s."""
    lines = ChangedLines()
    samples: list[Sample] = []

    def shown(qwen: int, kimi: int) -> list[str]:
        """The backends shown for the next reading, 5 s after the last, with these counts."""
        backends: dict[str, WorkerStats | None] = {
            "qwen": _stats(qwen, 10),
            "kimi": _stats(kimi, 10),
        }
        now = Sample(5.0 * (len(samples) + 1), _progress(qwen + kimi), _cells(qwen), backends)
        view = snapshot(now, samples[-1] if samples else None, 0.0, {})
        samples.append(now)
        out = lines(view)
        assert out[0] == summary_line(view)  # the totals, every time
        assert len(plain_lines(view)) == 3  # the full view has every backend
        return [line.split(":")[0].strip() for line in out[1:]]

    assert shown(10, 4) == ["kimi", "qwen"]
    assert shown(20, 8) == ["kimi", "qwen"]  # both moved
    assert shown(30, 8) == ["kimi", "qwen"]  # kimi finished: its rate falls to 0, once
    assert shown(40, 8) == ["qwen"]
    assert shown(40, 8) == ["qwen"]  # qwen finished: its final line
    assert shown(40, 8) == []  # nothing moved: the totals alone
    assert shown(41, 8) == ["qwen"]


def test_a_batch_that_only_ages_is_no_change() -> None:
    lines = ChangedLines()

    def view(age: float, succeeded: int) -> Snapshot:
        batch = OpenBatch("gb-0123456789abcdef", "in_progress", 500, succeeded, 0, age)
        tally = Tally(finished=300, answered=290)
        stats = WorkerStats(tally=tally, batch=True, batches=(batch,))
        return snapshot(Sample(age, _progress(300), _cells(300), {"qwen": stats}), None, 0.0, {})

    assert len(lines(view(10.0, 100))) == 3  # totals, the backend, its batch
    assert len(lines(view(15.0, 100))) == 1  # older, nothing else
    shown = lines(view(20.0, 120))
    assert len(shown) == 3 and shown[2].endswith("120 done, 0 failed of 500, open 0m20s")


def test_under_a_limit_the_totals_and_the_eta_are_the_limits() -> None:
    """Issue 39: during `run --limit 2` the line read "200/4,800 requests complete … ETA
    1h17m": the limit's 200 are the totals, and the ETA is what is left of them at the rate
    achieved since the first reading, not the last second's."""
    limited = Limited(total=200, left_at_start=200, complete_at_start=100)
    first = Sample(0.0, _progress(100), _cells(100), {})
    before = Sample(9.0, _progress(190), _cells(190), {})
    now = Sample(10.0, _progress(200), _cells(200), {})
    view = snapshot(now, before, 0.0, {}, since=first, limited=limited)
    assert (view.requests, view.complete) == (200, 100)
    assert view.rate == 10.0  # the last second's, as shown
    assert view.eta_s == 10.0  # 100 left at the 10 a second achieved since the first reading
    assert plain_lines(view)[0].startswith("[   10.0 s] 100/200 requests complete (50.0%)")
    assert "ETA 0m10s" in plain_lines(view)[0]
    done = snapshot(Sample(20.0, _progress(300), _cells(300), {}), now, 0.0, {}, limited=limited)
    assert (done.complete, done.eta_s) == (200, 0.0)
