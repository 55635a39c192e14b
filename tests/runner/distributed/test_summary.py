"""The end of a run, as its summary says it: what stopped each backend, the errors that keep
requests from completing with what to do about each, and what must happen before a rerun."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runner.demo import experiment_text
from runner.distributed import BackendReport, BatchReport, RunReport, Stop, Tally, summary_lines
from runner.experiment import load_experiment
from runner.store import ErrorCount, Progress


def _report(backends: tuple[BackendReport, ...], errors: tuple[ErrorCount, ...]) -> RunReport:
    progress = (Progress("qa", 120, 0, 120, 120, 0, 0, 0, 0),)
    return RunReport(progress, backends, 3.0, Tally(finished=8), 0, errors=errors)


def test_a_refused_key_is_said_with_its_errors_and_what_to_do() -> None:
    refusal = "fatal (HTTP 401 invalid_api_key): Incorrect API key provided"
    errors = (
        ErrorCount("qa", "fatal", 401, "invalid_api_key", 8, "Incorrect API key\nprovided"),
        ErrorCount("qa", "transient", None, None, 2, "ClientConnectorError: cannot connect"),
    )
    lines = summary_lines(
        _report(
            (
                BackendReport(
                    name="a",
                    configurations=("qa",),
                    restarts=0,
                    stop=Stop(kind="refused", why=refusal),
                ),
            ),
            errors,
        ),
        Path("exp.toml"),
    )
    assert f"  backend a stopped: no call of it can succeed ({refusal})" in lines
    assert (
        "    qa: 8 × fatal (HTTP 401 invalid_api_key): Incorrect API key provided — the key was "
        "refused: check the backend's key variable (api_key_env)"
    ) in lines
    assert (
        "    qa: 2 × transient (no response): ClientConnectorError: cannot connect — the server "
        "could not be reached: check base_url and the network, then run again"
    ) in lines
    assert lines[-1] == (
        "120 requests left: run groundbench run exp.toml again to send exactly those "
        "(once the key or model is put right)"
    )


def test_a_long_message_is_cut_to_one_line_and_quota_says_it_resets() -> None:
    errors = (ErrorCount("qa", "quota", 429, "insufficient_quota", 1, "x" * 500),)
    lines = summary_lines(
        _report(
            (
                BackendReport(
                    name="a",
                    configurations=("qa",),
                    restarts=0,
                    stop=Stop(kind="quota", why="spent"),
                ),
            ),
            errors,
        ),
        Path("exp.toml"),
    )
    (line,) = [line for line in lines if "insufficient_quota" in line]
    assert "x" * 159 + "…" in line and "x" * 160 not in line
    assert "top it up or raise its limit" in line
    assert lines[-1].endswith("(once the quota resets)")


def test_the_spend_is_said_for_this_run_and_the_store_and_a_cap_says_how_to_go_on() -> None:
    backends = (
        BackendReport(
            name="a",
            configurations=("qa",),
            restarts=0,
            spent=1.25,
            stop=Stop(kind="capped", why=""),
        ),
        BackendReport(name="b", configurations=("qb",), restarts=0, spent=0.5),
    )
    report = RunReport(
        (Progress("qa", 120, 20, 0, 20, 20, 20, 0, 0),),
        backends,
        3.0,
        Tally(finished=20),
        0,
        spent_total=4.0,
        max_spend=2.0,
        limit=5,
        limited_requests=40,
        limited_left=3,
        preflight_spent=0.25,  # the pre-flight's calls are this run's spend too
    )
    lines = summary_lines(report, Path("exp.toml"))
    assert (
        "  spend: $2.00 this run (its pre-flight's calls $0.25), $4.00 for the answers in the "
        "store over every run (tokens at the configured prices)"
    ) in lines
    assert (
        "  stopped at the spending cap (--max-spend $2.00); run again with a higher cap to go on"
        in lines
    )
    assert (
        "  --limit 5: the first 5 questions of every cell, 37/40 of their requests complete, 3 left"
    ) in lines
    assert not report.done and not report.complete
    assert (
        lines[-1] == "100 requests left: run groundbench run exp.toml again to send exactly those"
    )
    done = summary_lines(dataclasses.replace(report, limited_left=0), Path("exp.toml"))
    assert done[-1] == (
        "100 requests left: run groundbench run exp.toml without --limit to send exactly those"
    )


def test_calls_attempts_and_requests_are_said_apart_and_retries_apart_from_ends() -> None:
    report = dataclasses.replace(
        _report((BackendReport(name="a", configurations=("qa",), restarts=0),), ()),
        elapsed_s=14.1,
        tally=Tally(
            http_calls=116,
            transient_retried=14,
            throttles_retried=2,
            finished=94,
            attempts=100,
            answered=98,
            transient_ended=2,
        ),
    )
    lines = summary_lines(report, Path("exp.toml"))
    assert lines[:2] == [
        "run ended after 14.1 s: 116 HTTP calls sent, 98 attempts answered, 94 requests finished",
        "  transient failures (5xx, resets, timeouts, broken bodies): 14 retried, 2 ended an "
        "attempt; throttles (429): 2 retried",
    ]


def test_a_limit_learnt_from_429s_is_said_with_the_setting_to_start_there() -> None:
    backends = (
        BackendReport(name="a", configurations=("qa",), restarts=0, learnt_per_minute=148.6),
    )
    lines = summary_lines(_report(backends, ()), Path("exp.toml"))
    assert (
        "  backend a: its server admits about 148 requests/min, below its requests_per_minute "
        "(learnt from its 429s, and kept to, rising each minute without one); set "
        "requests_per_minute = 148 to start there"
    ) in lines
    quiet = summary_lines(
        _report((BackendReport(name="a", configurations=("qa",), restarts=0),), ()),
        None,
    )
    assert not any("learnt" in line for line in quiet)


def test_a_batch_backend_says_its_batches_its_saving_and_why_it_stopped_making_them() -> None:
    batch = BatchReport(
        created=3, read=3, unrun=12, problems=2, online_cost=1.68,
        not_made="fatal (HTTP 400 invalid_request_error): File is too large",
    )  # fmt: skip
    held = BackendReport(name="qwen", configurations=("qa",), restarts=0, spent=0.84, batch=batch)
    lines = summary_lines(dataclasses.replace(_report((held,), ()), held=40), None)
    assert (
        "  backend qwen (batch mode): 3 batches created, 3 read; $0.84 at the batch price, "
        "$1.68 online: $0.84 saved (50%); 12 lines never ran (expired, cancelled or failed "
        "batches); 2 result lines unreadable (SELECT * FROM batch_problems)"
    ) in lines
    assert any("no more batches made after the provider refused one" in line for line in lines)
    assert any(line.startswith("  40 requests are held by open batches") for line in lines)


def test_what_is_left_is_priced_at_the_stored_tokens_and_timed_at_this_runs_pace(
    tmp_path: Path,
) -> None:
    """Issue 39: the summary says what the grid's requests left cost (each configuration's at
    its stored requests' mean tokens, a batched backend's at the batch price) and take at the
    run's pace, and where the store is; the command to go on stays the last line."""
    text = experiment_text(2).replace(
        'model = "kimi-k2.6"',
        'model = "kimi-k2.6"\nprices = { input_per_mtok = 1.0, output_per_mtok = 10.0 }',
    )
    text = text.replace(
        'model = "gemini-3-pro-preview"',
        'model = "gemini-3-pro-preview"\nmode = "batch"\n'
        "prices = { input_per_mtok = 1.0, output_per_mtok = 10.0 }",
    )
    (tmp_path / "exp.toml").write_text(text)
    experiment = load_experiment(tmp_path / "exp.toml")
    progress = (
        # 18 complete (and 2 errored, with no tokens), 102 left: 1,111 in + 111 out each.
        Progress("kimi", 120, 18, 2, 22, 20, 18, 20_000, 2_000),
        Progress("gemini-high", 120, 20, 0, 20, 20, 20, 20_000, 2_000),  # batched: half price
        Progress("qwen-max", 50, 0, 0, 0, 0, 0, 0, 0),  # nothing stored: not priced
    )
    report = RunReport(
        progress, (), 40.0, Tally(finished=40), 0
    )  # 40 requests in 40 s: one a second
    lines = summary_lines(report, tmp_path / "exp.toml", experiment)
    # kimi 102 × $0.00222 + gemini-high 100 × $0.001; 252 left at one a second ≈ 4 min.
    assert (
        "  the grid's 252 requests left: ≈ $0.33 at the tokens stored so far (qwen-max: "
        "nothing stored to measure yet), ≈ 4 min at this run's pace"
    ) in lines
    store = experiment.store
    assert f"  store: {store}; its tables and figures: groundbench report {store}" in lines
    assert lines[-1].startswith("252 requests left: run ")


def test_a_broken_lifeline_is_said_and_what_is_left_goes_in_a_rerun() -> None:
    lost = "the driver's connection failed ([Errno 104] Connection reset by peer)"
    backend = BackendReport(
        name="a", configurations=("qa",), restarts=0, stop=Stop(kind="driver", why=lost)
    )
    lines = summary_lines(_report((backend,), ()), Path("exp.toml"))
    assert f"  backend a stopped: its lifeline to the driver broke ({lost})" in lines
    assert lines[-1] == (
        "120 requests left: run groundbench run exp.toml again to send exactly those"
    )
