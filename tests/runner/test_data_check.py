"""``groundbench data check ROOT``: one table, a line per problem, a verdict and its exit status."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from conditions import (
    DataRoot,
    SynthSpec,
    check_data_root,
    generate_synthetic,
    load_instances,
    load_refs,
)
from runner.cli import app
from runner.data_check import print_data_check

runner = CliRunner()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth-cli-check")
    generate_synthetic(out, SynthSpec(seed=7, images=20))
    return out


@pytest.fixture
def data(pristine: Path, tmp_path: Path) -> Path:
    shutil.copytree(pristine, tmp_path / "data")
    return tmp_path / "data"


def _row(output: str, source: str, item: str) -> str:
    """The table row of ``source`` and ``item`` (its cells joined by │)."""
    pattern = rf"│ {re.escape(source)} +│ {re.escape(item)} +│ ([^\n]*)"
    found = re.search(pattern, output)
    assert found, f"no row {source} {item} in:\n{output}"
    return found.group(1)


def test_a_whole_root_is_ready_and_exits_0(data: Path) -> None:
    result = runner.invoke(app, ["data", "check", str(data)])
    assert result.exit_code == 0, result.output
    for source, refs in (("refcoco", "refs(unc).p"), ("refcoco+", "refs(unc).p")):
        assert re.match(
            r"ok +│ \d+ refs; \d+ in val/testA/testB", _row(result.output, source, refs)
        )
    assert re.match(
        r"ok +│ \d+ images, \d+ annotations", _row(result.output, "refcocog", "instances.json")
    )
    assert re.match(r"ok +│ (\d+) of \1 present", _row(result.output, "refcocog", "images"))
    assert "20 files (looked up by name, none opened)" in result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("ready: refcoco, refcoco+, refcocog have every file a run needs")


def test_each_fault_is_on_its_row_with_a_line_saying_what_to_do_and_exits_1(data: Path) -> None:
    (data / "refcoco+" / "refs(unc).p").unlink()
    (data / "refcocog" / "instances.json").write_text("not json")
    images = data / "images" / "train2014"
    gone = images / _an_image_refcoco_asks(data)
    gone.unlink()

    result = runner.invoke(app, ["data", "check", str(data)])

    assert result.exit_code == 1, result.output
    out = result.output
    assert _row(out, "refcoco+", "refs(unc).p").startswith("missing   │ no such file")
    assert _row(out, "refcocog", "instances.json").startswith("malformed │ not JSON")
    assert re.match(
        rf"missing +│ 1 of \d+ missing \(first: {gone.name}\)", _row(out, "refcoco", "images")
    )
    assert _row(out, "refcoco+", "images").startswith("unchecked")
    lines = out.strip().splitlines()
    problems = [line for line in lines if line.startswith(str(data))]
    assert problems == [
        f"{images}: " + _after(lines, f"{images}: "),
        f"{data / 'refcoco+' / 'refs(unc).p'}: no such file; download refcoco+.zip (the refer "
        f"release; README, Getting the data) and unzip it into {data}",
        f"{data / 'refcocog' / 'instances.json'}: " + _after(lines, f"{data / 'refcocog'}"),
    ]
    assert "unzip COCO's train2014.zip" in problems[0]
    assert "download refcocog.zip" in problems[2]
    assert lines[-1] == (
        "not ready: refcoco images missing, refcoco+ refs(unc).p missing, "
        "refcocog instances.json malformed"
    )


def _an_image_refcoco_asks(data: Path) -> str:
    """The file name of an image a ref of RefCOCO's evaluation splits names."""
    refs = load_refs(data / "refcoco" / "refs(unc).p")
    names = {i.id: i.file_name for i in load_instances(data / "refcoco" / "instances.json").images}
    return min(names[r.image_id] for r in refs if r.split in ("val", "testA", "testB"))


def _after(lines: list[str], prefix: str) -> str:
    [line] = [line for line in lines if line.startswith(prefix)]
    return line.split(": ", 1)[1]


def test_an_unknown_source_is_refused(data: Path) -> None:
    result = runner.invoke(app, ["data", "check", str(data), "--source", "refclef"])
    assert result.exit_code == 2
    assert "unknown source 'refclef'" in result.output


def test_images_elsewhere_are_found_with_images(data: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "coco" / "train2014"
    shutil.move(data / "images" / "train2014", elsewhere)
    assert runner.invoke(app, ["data", "check", str(data)]).exit_code == 1
    result = runner.invoke(app, ["data", "check", str(data), "--images", str(elsewhere)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_table_fits_the_terminal_without_splitting_a_word(data: Path, width: int) -> None:
    (data / "refcocog" / "instances.json").write_text("[")
    check = check_data_root(DataRoot.at(data))
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system=None)
    print_data_check(console, check, ("refcoco", "refcoco+", "refcocog"))
    table = out.getvalue().split("\n/")[0]  # the problem lines below are whole, unwrapped
    assert all(len(line) <= width for line in table.splitlines())
    for words in ("val/testA/testB", "instances.json", "refs(umd).p", "malformed", "present"):
        assert words in table
