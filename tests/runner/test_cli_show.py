"""``groundbench show``: one stored answer drawn to a file, the selection narrowed to exactly one
attempt, and whatever is wrong said in one line."""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from conditions import BOX, Cohort, DataRoot
from runner._output import OutputError
from runner.cli import app
from runner.overlays import OverlayError
from runner.store import read_only
from tests.runner.overlays.stores import write_scored_store
from tests.runner.unwritable import unwritable

runner = CliRunner()
Stored = tuple[Path, list[str]]


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort, small_root: DataRoot
) -> Stored:
    path = tmp_path_factory.mktemp("show") / "exp.duckdb"
    return path, write_scored_store(path, small_cohort, small_root.images)


def _svg_text(path: Path) -> str:
    """Every text of an SVG, run together without whitespace (the caption wraps lines)."""
    texts = (e.text or "" for e in ET.parse(path).iter() if e.tag.endswith("text"))
    return "".join("".join(texts).split())


def test_the_answer_is_written_under_its_default_name(
    store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, qids = store
    monkeypatch.chdir(tmp_path)
    args = ["show", str(path), qids[0], "--configuration", "qwen", "--budget", "8"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (written,) = tmp_path.glob("*.png")
    stem = qids[0].replace(":", "_")  # a file name holds no ":" (refcoco:135)
    assert f"wrote {written.name}" in result.output
    with Image.open(written) as image:
        assert image.size[0] == 1800
    with read_only(path) as con:
        (last,) = con.execute(
            "SELECT max(attempt) FROM responses WHERE qid = ? AND configuration = 'qwen' "
            "AND condition = 'base' AND budget = 8",
            [qids[0]],
        ).fetchone()  # type: ignore[misc]
    assert written.name == f"{stem}-qwen-base-8-a{last}.png"  # the last attempt stored
    result = runner.invoke(app, [*args, "--condition", "half-res", "--attempt", "0"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / f"{stem}-qwen-half-res-8-a0.png").exists()


def test_the_caption_and_the_printed_line_carry_the_scores(store: Stored, tmp_path: Path) -> None:
    path, _ = store
    with read_only(path) as con:
        configuration, qid, budget, iou = con.execute(
            "SELECT configuration, qid, budget, iou FROM scores WHERE parseable AND budget > 0 "
            "AND condition = 'base' ORDER BY qid, configuration, budget LIMIT 1"
        ).fetchone()  # type: ignore[misc]
    out = tmp_path / "one.svg"
    result = runner.invoke(
        app,
        ["show", str(path), qid, "--configuration", configuration, "--budget", str(budget),
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"IoU {100 * iou:.1f}" in result.output
    assert f"IoU{100 * iou:.1f}" in _svg_text(out)


def test_several_configurations_are_named_when_none_is_given(store: Stored) -> None:
    path, qids = store
    result = runner.invoke(app, ["show", str(path), qids[0]])
    assert isinstance(result.exception, OverlayError)
    assert str(result.exception) == (
        f"{qids[0]} has answers for configurations gemini, qwen; pass --configuration"
    )


def test_several_budgets_are_named_when_none_is_given(store: Stored) -> None:
    path, qids = store
    result = runner.invoke(app, ["show", str(path), qids[0], "--configuration", "gemini"])
    assert isinstance(result.exception, OverlayError)
    assert str(result.exception) == (
        f"{qids[0]} has answers under gemini / base for budgets 0 (box), 8, 16; pass --budget"
    )


def test_an_attempt_not_stored_names_those_that_are(store: Stored) -> None:
    path, qids = store
    args = ["show", str(path), qids[0], "--configuration", "gemini", "--budget", "8"]
    result = runner.invoke(app, [*args, "--attempt", "7"])
    assert isinstance(result.exception, OverlayError)
    assert "has no answer under gemini / base / N = 8 for attempt 7; it has attempts 0" in str(
        result.exception
    )


def test_an_unknown_condition_names_the_stored_ones(store: Stored) -> None:
    path, qids = store
    args = ["show", str(path), qids[0], "--configuration", "gemini", "--condition", "nope"]
    result = runner.invoke(app, args)
    assert isinstance(result.exception, OverlayError)
    assert str(result.exception).endswith(
        "it has conditions base, cue-spatial-wrong, greyscale, half-res, no-image"
    )


def test_an_unknown_question_is_one_line_and_exit_2(store: Stored) -> None:
    path, _ = store
    done = subprocess.run(
        [sys.executable, "-c", "from runner.cli import main; main()", "show", str(path), "nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("groundbench: no question 'nope' in the store")
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unknown_suffix_is_refused(store: Stored, tmp_path: Path) -> None:
    path, qids = store
    args = ["show", str(path), qids[0], "--configuration", "qwen", "--budget", "8"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "x.jpg")])
    assert isinstance(result.exception, OverlayError)
    assert "an overlay is written as .png, .svg, .pdf; not .jpg" in str(result.exception)


def test_a_missing_image_is_named_in_the_caption_and_the_figure_written(
    store: Stored, small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    path, qids = store
    images = tmp_path / "images"
    shutil.copytree(small_root.images, images)
    image_file = small_cohort.question(qids[0]).image_file
    (images / image_file).unlink()
    out = tmp_path / "missing.svg"
    result = runner.invoke(
        app,
        ["show", str(path), qids[0], "--configuration", "qwen", "--budget", "8",
         "--images", str(images), "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"{images / image_file}:imagefilemissing" in _svg_text(out)


def test_a_box_answer_draws_its_control_when_asked(store: Stored, tmp_path: Path) -> None:
    path, _ = store
    with read_only(path) as con:
        configuration, qid = con.execute(
            "SELECT configuration, qid FROM scores WHERE budget = ? AND parseable "
            "ORDER BY qid LIMIT 1",
            [BOX],
        ).fetchone()  # type: ignore[misc]
    out = tmp_path / "box.svg"
    args = ["show", str(path), qid, "--configuration", configuration, "--out", str(out)]
    result = runner.invoke(app, [*args, "--control", "16"])
    assert result.exit_code == 0, result.output
    assert "box-derived control N = 16: IoU" in result.output
    assert "box-derivedcontrol" in _svg_text(out)
    result = runner.invoke(app, [*args, "--control", "16", "--budget", "8"])
    assert isinstance(result.exception, OverlayError)
    assert "--control draws a box answer's control" in str(result.exception)


def test_a_folder_it_cannot_write_is_refused_before_drawing_and_leaves_nothing(
    store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, qids = store
    drawn: list[object] = []
    monkeypatch.setattr("runner.overlays._figure.draw_overlay", lambda *a, **k: drawn.append(a))
    args = ["show", str(path), qids[0], "--configuration", "qwen", "--budget", "8"]
    with unwritable(tmp_path / "locked") as locked:
        for out in (locked / "a.png", locked / "sub" / "a.png"):
            result = runner.invoke(app, [*args, "--out", str(out)])
            assert isinstance(result.exception, OutputError)
            assert str(result.exception).startswith(f"{out.parent}: cannot write there (")
            assert str(result.exception).endswith("give --out a file in a folder you can write to")
        monkeypatch.chdir(locked)  # the default: a file here
        result = runner.invoke(app, args)
        assert isinstance(result.exception, OutputError)
        assert list(locked.iterdir()) == []
    assert drawn == []  # refused before the work


def test_an_overlay_that_fails_part_way_leaves_no_half_file(
    store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, qids = store

    def full_disk(figure: object, where: Path, **_: object) -> None:
        Path(where).write_bytes(b"\x89PNG half a file")
        raise OSError(errno.ENOSPC, "No space left on device", str(where))

    monkeypatch.setattr("matplotlib.figure.Figure.savefig", full_disk)
    out = tmp_path / "a.png"
    args = ["show", str(path), qids[0], "--configuration", "qwen", "--budget", "8"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert isinstance(result.exception, OverlayError)
    assert str(result.exception) == f"{out}: cannot write the overlay: No space left on device"
    assert list(tmp_path.iterdir()) == []
