"""``groundbench report`` into a folder it cannot write: one line, exit status 2, before any
table is printed; a failure while writing, one line too, leaving no half-written file."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from runner.cli import main
from tests.runner.unwritable import unwritable


def _groundbench(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[object, str, list[str]]:
    """The console script run in this process: its exit code, stdout, and stderr's lines."""
    monkeypatch.setattr(sys, "argv", ["groundbench", *args])
    capfd.readouterr()
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capfd.readouterr()
    return exited.value.code, out, err.strip().splitlines()


@pytest.mark.parametrize("option", ["--out", "--html"])
def test_a_folder_it_cannot_write_is_one_line_before_any_table(
    store: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, option: str,
) -> None:  # fmt: skip
    with unwritable(tmp_path / "locked") as locked:
        for folder in (locked, locked / "report"):  # the folder, or one that would be made in it
            code, out, err = _groundbench(
                capfd, monkeypatch, "report", str(store), option, str(folder)
            )
            assert code == 2
            assert err == [
                f"groundbench: {folder}: cannot write there ({_why(locked)}): give {option} a "
                "folder you can write to"
            ]
            assert out == ""  # refused before the tables, not after
        assert list(locked.iterdir()) == []


def test_a_file_where_the_folder_should_be_is_one_line(
    store: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    (tmp_path / "taken").write_text("mine")
    code, out, err = _groundbench(
        capfd, monkeypatch, "report", str(store), "--out", str(tmp_path / "taken" / "report")
    )
    assert code == 2 and out == ""
    assert err == [
        f"groundbench: {tmp_path / 'taken'}: not a folder; give --out a folder you can write to"
    ]
    assert (tmp_path / "taken").read_text() == "mine"


def test_a_failure_while_writing_is_one_line_and_leaves_no_half_file(
    store: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    def full_disk(table: object, where: Path) -> None:
        Path(where).write_bytes(b"PAR1 half a file")  # as far as it got
        raise OSError(errno.ENOSPC, "No space left on device", str(where))

    out = tmp_path / "report"
    monkeypatch.setattr(pq, "write_table", full_disk)
    code, printed, err = _groundbench(capfd, monkeypatch, "report", str(store), "--out", str(out))
    assert code == 2
    assert err == [
        f"groundbench: {out}: cannot write there (No space left on device): free some space, "
        "or give --out a folder on another disk"
    ]
    assert "Traceback" not in printed
    names = sorted(p.name for p in out.iterdir())
    assert "results.parquet" not in names  # nothing half-written under its name
    assert not [n for n in names if n.startswith(".")]  # nor under a temporary one
    assert "table1.md" in names and "results.csv" in names  # what was written is whole


def _why(folder: Path) -> str:
    """What the system says to a file made in ``folder``."""
    try:
        (folder / "probe").touch()
    except OSError as exc:
        return str(exc.strerror)
    raise AssertionError(f"{folder} is writable")


def test_the_report_prints_the_cohort_section_and_writes_figure_1(
    store: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The cohort section in the terminal (piped: each table whole) and in --out, with
    Figure 1 beside the other figures; no images folder is needed for either."""
    out = tmp_path / "report"
    code, printed, err = _groundbench(capfd, monkeypatch, "report", str(store), "--out", str(out))
    assert code is None or code == 0, err
    for title in ("Cohort: canonical targets G_N", "Cohort: questions per slice",
                  "Cohort: multi-part referents and answer length"):  # fmt: skip
        assert title in printed
    assert "Figure 1 (target_construction" in " ".join(printed.split())
    for name in ("cohort_targets.csv", "cohort_slices.md", "cohort_parts.tex",
                 "target_construction.png", "target_construction.pdf",
                 "target_construction.svg"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    rows = (out / "cohort_targets.csv").read_text().splitlines()
    assert rows[0] == "N,C_N,Paper C_N,Simplified,Up-sampled,As listed"
    assert [r.split(",")[0] for r in rows[1:]] == ["8", "16", "24", "32", "64"]
