"""Headless Chromium over the DevTools protocol: what check_page counts, reports and leaves.

Every page is a small hand-written file; the ones that need no real browser (a missing one, one
that dies, one that never gets ready) use shell scripts in its place.
"""

from __future__ import annotations

import asyncio
import base64
import io
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from runner.pages._browser import BrowserError, check_page, find_chromium

RED = Image.new("RGB", (6, 4), "red")


def _png_url() -> str:
    buffer = io.BytesIO()
    RED.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


PNG = _png_url()
TRUNCATED_PNG = "data:image/png;base64,AAAA"

GOOD = f"""
<table><thead><tr><th>N</th><th>IoU</th></tr></thead>
  <tbody><tr><td>8</td><td>0.61</td></tr><tr><td>16</td><td>0.58</td></tr></tbody></table>
<table><tr><td>no head, one row</td></tr></table>
<img alt="thumb" src="{PNG}">
<svg width="60" height="40" xmlns:xlink="http://www.w3.org/1999/xlink">
  <defs><g id="pic"><image href="{PNG}" width="6" height="4"/></g></defs>
  <use href="#pic"/><use xlink:href="#pic" x="10"/>
</svg>
<a href="page.html">this page</a>
<div style="height: 1500px">tall, so that the full page is taller than the viewport</div>
"""


def write(folder: Path, body: str, name: str = "page.html") -> Path:
    page = folder / name
    page.write_text(f"<!doctype html><html><head><title>t</title></head><body>{body}</body></html>")
    return page


# --- what is left behind ----------------------------------------------------------------------


def _stat(pid: str) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: state, ppid, process group, ..."""
    try:
        return (Path("/proc") / pid / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def live_in_group(group: int) -> list[int]:
    """Processes of process group ``group`` that are not zombies (dead, awaiting their reaper)."""
    live = []
    for entry in Path("/proc").iterdir():
        fields = _stat(entry.name) if entry.name.isdigit() else None
        if fields is not None and fields[0] != "Z" and int(fields[2]) == group:
            live.append(int(entry.name))
    return live


def assert_ended(groups: list[int]) -> None:
    """Every process group started has no live process: SIGKILL is sent, so each is dying; the
    kernel takes a moment to finish them, so this waits for it (up to 10 s)."""
    assert groups, "no browser was started"
    end = time.monotonic() + 10
    while any(live_in_group(g) for g in groups) and time.monotonic() < end:
        time.sleep(0.05)
    assert [live_in_group(g) for g in groups] == [[] for _ in groups]


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[int]]:
    """The process groups the checks start (each browser leads its own), and a private place
    for their profiles, which must be gone afterwards."""
    groups: list[int] = []
    real = asyncio.create_subprocess_exec

    async def spy(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await real(*args, **kwargs)
        groups.append(process.pid)
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(profiles))
    yield groups
    assert list(profiles.iterdir()) == []


# --- pages in a real browser ------------------------------------------------------------------


@pytest.mark.slow
def test_a_good_page_renders_every_table_and_image_and_is_photographed(
    chromium: Path, tmp_path: Path, launched: list[int]
) -> None:
    page = write(tmp_path, GOOD)
    shot = tmp_path / "out" / "shot.png"
    check = check_page(page, screenshot=shot, width=640, height=480)
    assert (check.tables, check.filled_tables) == (2, 2)
    assert (check.images, check.broken_images, check.shown_images) == (1, 0, 1)
    assert (check.svg_images, check.broken_svg_images) == (1, 0)
    assert (check.uses, check.missing_refs) == (2, 0)
    assert (check.links, check.missing_links) == (1, ())
    assert check.console_errors == ()
    assert check.external_requests == ()
    assert check.screenshot == shot
    with Image.open(shot) as png:
        assert png.format == "PNG"
        assert png.width == 640
        assert png.height > 1500  # the whole page, not the 480-pixel viewport
        assert png.convert("RGB").getpixel((png.width - 1, png.height - 1)) == (255, 255, 255)
    assert_ended(launched)


@pytest.mark.slow
def test_the_viewport_alone_is_photographed_at_the_size_asked(
    chromium: Path, tmp_path: Path
) -> None:
    shot = tmp_path / "shot.png"
    check_page(write(tmp_path, GOOD), screenshot=shot, full_page=False, width=500, height=300)
    with Image.open(shot) as png:
        assert png.size == (500, 300)


@pytest.mark.slow
def test_console_errors_and_uncaught_exceptions_are_reported(
    chromium: Path, tmp_path: Path
) -> None:
    script = """<script>
      console.log('fine'); console.error('x'); console.assert(1 === 2, 'sums');
      throw new Error('boom');
    </script>"""
    errors = check_page(write(tmp_path, script)).console_errors
    assert "console.error: x" in errors
    assert "console.assert: sums" in errors
    assert any(e.startswith("exception: ") and "Error: boom" in e for e in errors), errors
    assert not any("fine" in e for e in errors)


@pytest.mark.slow
def test_broken_images_are_counted_and_missing_files_reported(
    chromium: Path, tmp_path: Path
) -> None:
    body = f"""<img src="{PNG}"><img src="{TRUNCATED_PNG}"><img src="nowhere.png">
      <img loading="lazy" style="margin-top: 5000px" src="{PNG}">
      <div style="display: none"><img src="{PNG}"></div>
      <svg><image href="{TRUNCATED_PNG}" width="5" height="5"/></svg>"""
    check = check_page(write(tmp_path, body))
    assert (check.images, check.broken_images) == (5, 2)
    # Hidden images load but are not shown; a lazy one far below is loaded and counted too.
    assert check.shown_images == 2
    assert (check.svg_images, check.broken_svg_images) == (1, 1)
    assert any("ERR_FILE_NOT_FOUND" in e and "nowhere.png" in e for e in check.console_errors)


@pytest.mark.slow
def test_a_use_without_its_target_and_a_link_to_a_missing_page_are_counted(
    chromium: Path, tmp_path: Path
) -> None:
    body = """<svg><defs><circle id="dot" r="2"/></defs>
      <use href="#dot"/><use href="#gone"/><use href="other.svg#dot"/><use/></svg>
      <table><thead><tr><th>empty</th></tr></thead><tbody></tbody></table>
      <a href="q/q1.html">q1</a><a href="q/q2.html#top">q2</a>"""
    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "q1.html").write_text("<!doctype html><title>q1</title>")
    check = check_page(write(tmp_path, body))
    assert (check.uses, check.missing_refs) == (4, 3)
    assert (check.tables, check.filled_tables) == (1, 0)
    assert check.missing_links == ((tmp_path / "q" / "q2.html").as_uri() + "#top",)


@pytest.mark.slow
def test_requests_off_the_machine_are_refused_and_named(chromium: Path, tmp_path: Path) -> None:
    check = check_page(write(tmp_path, '<img src="http://example.invalid/a.png">'))
    assert check.external_requests == ("http://example.invalid/a.png",)
    assert check.broken_images == 1


@pytest.mark.slow
def test_a_script_changes_the_page_and_it_is_counted_again(chromium: Path, tmp_path: Path) -> None:
    body = f"""<button id="next" onclick="
        document.getElementById('more').hidden = false;
        document.querySelector('#more tbody').insertRow().insertCell().textContent = 'r';
      ">next</button>
      <img src="{PNG}"><div id="more" hidden><img src="{PNG}">
        <table><tbody></tbody></table></div>"""
    script = """document.getElementById('next').click();
      document.body.style.background = 'black';
      return {clicked: 1};"""
    shot = tmp_path / "before.png"
    check = check_page(write(tmp_path, body), script=script, screenshot=shot)
    assert check.script_result == {"clicked": 1}
    with Image.open(shot) as png:  # the page as loaded, before the script
        assert png.convert("RGB").getpixel((png.width - 1, png.height - 1)) == (255, 255, 255)
    assert (check.shown_images, check.filled_tables) == (1, 0)
    assert check.after_script is not None
    assert (check.after_script.shown_images, check.after_script.filled_tables) == (2, 1)
    assert check.console_errors == ()


@pytest.mark.slow
def test_a_script_that_throws_is_an_error(chromium: Path, tmp_path: Path) -> None:
    with pytest.raises(BrowserError, match="script threw in the page: Error: no next button"):
        check_page(write(tmp_path, "<p>one page</p>"), script="throw new Error('no next button')")


@pytest.mark.slow
def test_a_page_that_never_finishes_loading_times_out_and_ends_the_browser(
    chromium: Path, tmp_path: Path, launched: list[int]
) -> None:
    page = write(tmp_path, "<script>while (true) {}</script>")
    with pytest.raises(BrowserError, match=r"longer than 3 s \(loading page.html\)"):
        check_page(page, timeout_s=3)
    assert_ended(launched)


def test_a_page_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BrowserError, match="is not a file"):
        check_page(tmp_path / "none.html")


# --- finding and starting the browser, with stand-ins ------------------------------------------


def stand_in(folder: Path, name: str, script: str) -> Path:
    """An executable shell script playing a browser."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)
    return path


def test_the_environment_variable_chooses_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = stand_in(tmp_path, "my-chrome", "exit 0")
    monkeypatch.setenv("GROUNDBENCH_CHROMIUM", str(chosen))
    assert find_chromium() == chosen
    monkeypatch.setenv("GROUNDBENCH_CHROMIUM", str(tmp_path / "missing"))
    assert find_chromium() is None


def test_the_browser_is_looked_for_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GROUNDBENCH_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() is None
    chrome = stand_in(tmp_path, "google-chrome", "exit 0")
    assert find_chromium() == chrome
    browser = stand_in(tmp_path, "chromium-browser", "exit 0")
    assert find_chromium() == browser


def test_no_browser_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUNDBENCH_CHROMIUM", str(tmp_path / "missing"))
    with pytest.raises(BrowserError, match=r"no Chromium found .*Debian's chromium package"):
        check_page(write(tmp_path, "<p>x</p>"))


def test_a_browser_that_dies_at_start_is_named_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launched: list[int]
) -> None:
    dying = stand_in(tmp_path, "dying", "echo 'missing libnss3.so' >&2; exit 3")
    monkeypatch.setenv("GROUNDBENCH_CHROMIUM", str(dying))
    with pytest.raises(BrowserError, match=r"exited \(3\) before it was ready: missing libnss3"):
        check_page(write(tmp_path, "<p>x</p>"))
    assert_ended(launched)


def test_a_browser_that_never_gets_ready_is_killed_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launched: list[int]
) -> None:
    child = tmp_path / "child.pid"
    # A child of the browser in the background, as Chromium's renderers are.
    silent = stand_in(tmp_path, "silent", f"sleep 300 & echo $! > {child}; wait")
    monkeypatch.setenv("GROUNDBENCH_CHROMIUM", str(silent))
    with pytest.raises(BrowserError, match=r"longer than 1 s \(starting\)"):
        check_page(write(tmp_path, "<p>x</p>"), timeout_s=1)
    assert child.read_text().strip().isdigit()
    assert_ended(launched)
    fields = _stat(child.read_text().strip())
    assert fields is None or fields[0] == "Z"
