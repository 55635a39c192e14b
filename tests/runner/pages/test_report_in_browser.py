"""The HTML report opened in headless Chromium, as a reader opens it: every table rendered
with rows, every image loaded, every ``<use>`` resolved, no console error, thumbnails shown,
and the galleries' filters and pager working; its screenshot is written beside the index.

The store is the overlay tests' small store of real, scored answers (every gallery kind, the
bad input the issue names, a refusal and an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from conditions import Cohort, DataRoot
from runner.pages import HtmlReport, write_html_report
from runner.pages._browser import PageCheck, PageCounts, check_page
from runner.pages._html import page_name
from runner.pages._index import PER_PAGE
from runner.reports import all_tables, load_report_data, shown_and_omitted
from runner.store import read_only
from tests.runner.overlays.stores import write_scored_store

# Thumbnails shown now, each with the gallery heading it sits under and the page it links to.
_SHOWN = """
  const shown = () => {
    const figures = [...document.querySelectorAll('#gallery-view figure')];
    return {
      thumbnails: figures.length,
      headings: [...document.querySelectorAll('#gallery-view h3')].map(h => h.textContent),
      first: figures.length ? figures[0].querySelector('a').getAttribute('href') : null,
      status: document.getElementById('gallery-status').textContent,
    };
  };
"""
# What a reader does: look, narrow to one gallery kind, clear the filter, go to the next page.
FILTER_AND_PAGE = (
    _SHOWN
    + """
  const form = document.getElementById('gallery-filters');
  const choose = (name, value) => {
    form.elements[name].value = value;
    form.dispatchEvent(new Event('change', {bubbles: true}));
  };
  const first = shown();
  choose('k', 'unparseable');
  const unparseable = shown();
  choose('k', '');
  document.getElementById('gallery-next').click();
  const next = shown();
  return {first, unparseable, next, visible: !form.hidden};
"""
)


# Opened at index.html?gallery=unparseable: what a link to that gallery shows; then the reader
# picks another gallery and the address follows.
FROM_AND_TO_THE_ADDRESS = (
    _SHOWN
    + """
  const form = document.getElementById('gallery-filters');
  const linked = {...shown(), kind: form.elements['k'].value};
  form.elements['k'].value = 'worst';
  form.dispatchEvent(new Event('change', {bubbles: true}));
  return {linked, worst: shown(), search: location.search, hash: location.hash};
"""
)
# A question page at 1280 px: nothing wider than the window, the box column on screen; a click
# on an attempt fills the window with it, "close" puts it back.
WRAP_AND_ENLARGE = """
  const root = document.documentElement;
  const heads = [...document.querySelectorAll('.budget h4')];
  const box = heads.filter(h => h.textContent === 'box').map(h => h.getBoundingClientRect());
  const zoom = document.querySelector('.zoom');
  const open = zoom.querySelector('a.open');
  const before = open.querySelector('svg').getBoundingClientRect().width;
  open.click();
  const style = getComputedStyle(zoom);
  const opened = {hash: location.hash, position: style.position,
                  width: zoom.querySelector('svg').getBoundingClientRect().width};
  zoom.querySelector('a.close').click();
  return {overflow: root.scrollWidth - root.clientWidth, viewport: root.clientWidth,
          boxes: box.length, boxRight: Math.max(...box.map(r => r.right)), before, opened,
          closed: {hash: location.hash, position: getComputedStyle(zoom).position}};
"""


@dataclass(frozen=True)
class Opened:
    out: Path
    report: HtmlReport
    tables: int
    index: PageCheck
    qids: list[str]


@pytest.fixture(scope="module")
def opened(
    chromium: Path,
    tmp_path_factory: pytest.TempPathFactory,
    small_cohort: Cohort,
    small_root: DataRoot,
) -> Opened:
    """The report of the small store, its index opened once (with the reader's clicks)."""
    folder = tmp_path_factory.mktemp("browser-report")
    store = folder / "exp.duckdb"
    qids = write_scored_store(store, small_cohort, small_root.images)
    out = folder / "report"
    report = write_html_report(store, out, images=small_root.images)
    with read_only(store) as con:
        shown, _ = shown_and_omitted(all_tables(load_report_data(con, store)))
    index = check_page(report.index, screenshot=out / "screenshot.png", script=FILTER_AND_PAGE)
    return Opened(out, report, len(shown), index, qids)


def assert_whole(counts: PageCounts) -> None:
    """Every image loaded, every reference and local link resolved."""
    assert counts.broken_images == 0
    assert counts.broken_svg_images == 0
    assert counts.missing_refs == 0
    assert counts.missing_links == ()


@pytest.mark.slow
def test_the_index_renders_every_table_with_rows(opened: Opened) -> None:
    assert opened.tables > 0
    assert opened.index.tables == opened.tables
    assert opened.index.filled_tables == opened.tables


@pytest.mark.slow
def test_the_index_loads_every_image_and_resolves_every_reference(opened: Opened) -> None:
    index = opened.index
    assert index.svg_images > 0 and index.uses > 0 and index.links > 0
    assert_whole(index)
    assert index.after_script is not None
    assert_whole(index.after_script)


@pytest.mark.slow
def test_the_index_reports_no_error_and_fetches_nothing(opened: Opened) -> None:
    assert opened.index.console_errors == ()
    assert opened.index.external_requests == ()


@pytest.mark.slow
def test_the_galleries_show_thumbnails_and_their_filters_and_pager_work(opened: Opened) -> None:
    result = opened.index.script_result
    assert isinstance(result, dict)
    first, unparseable, next_page = result["first"], result["unparseable"], result["next"]
    assert result["visible"]
    assert first["thumbnails"] == PER_PAGE  # the small store's galleries fill two pages
    assert first["status"].startswith("page 1 of ")
    assert 0 < unparseable["thumbnails"] <= first["thumbnails"]
    assert all("unparseable" in h for h in unparseable["headings"])
    assert next_page["thumbnails"] > 0
    assert next_page["status"].startswith("page 2 of ")
    assert next_page["first"] != first["first"]


@pytest.mark.slow
def test_a_screenshot_of_the_index_is_written_beside_it(opened: Opened) -> None:
    assert opened.index.screenshot == opened.out / "screenshot.png"
    with Image.open(opened.out / "screenshot.png") as png:
        assert png.format == "PNG"
        assert png.width == 1280
        assert png.height > 900


@pytest.mark.slow
def test_a_question_page_renders_every_attempt_with_no_error(
    chromium: Path, opened: Opened
) -> None:
    page = opened.out / "q" / page_name(opened.qids[0])
    check = check_page(page, script=WRAP_AND_ENLARGE)
    assert check.svg_images > 0 and check.uses > 0
    assert_whole(check)
    assert check.console_errors == ()
    assert check.external_requests == ()
    # Issue 39: every column on screen at 1280 px, and an attempt enlarged on a click.
    seen = check.script_result
    assert isinstance(seen, dict)
    assert seen["overflow"] == 0 and seen["viewport"] == 1280
    assert seen["boxes"] > 0 and seen["boxRight"] <= seen["viewport"]
    assert seen["opened"]["hash"].startswith("#z-a-") and seen["opened"]["position"] == "fixed"
    assert seen["opened"]["width"] > 2 * seen["before"]
    assert seen["closed"]["hash"].startswith("#a-") and seen["closed"]["position"] == "static"


@pytest.mark.slow
def test_a_gallery_link_opens_filtered_and_a_filter_changes_the_address(
    chromium: Path, opened: Opened
) -> None:
    check = check_page(opened.report.index, query="gallery=unparseable",
                       script=FROM_AND_TO_THE_ADDRESS)  # fmt: skip
    assert check.console_errors == ()
    seen = check.script_result
    assert isinstance(seen, dict)
    linked, worst = seen["linked"], seen["worst"]
    assert linked["kind"] == "unparseable" and linked["thumbnails"] > 0
    assert all("unparseable" in h for h in linked["headings"])
    assert worst["headings"] and all("worst by IoU: the lower half" in h for h in worst["headings"])
    assert seen["search"] == "?gallery=worst" and seen["hash"] == "#galleries"
