"""The HTML report of a small store of real, scored answers: every table and figure, galleries
in templates, every link and every definition used resolving in the folder, nothing fetched,
every stored attempt on its question's page, and bad input named rather than failing a page."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conditions import (
    FILE_LOADERS,
    Cohort,
    DataRoot,
    box_set,
    generate_box_benchmark,
    write_box_set,
)
from runner.cli import app
from runner.pages import FolderTaken, HtmlReport, write_html_report
from runner.pages._galleries import KINDS, Gallery, GalleryItem
from runner.pages._html import attempt_anchor, page_name
from runner.reports import all_tables, load_report_data, shown_and_omitted
from runner.store import GridRow, Registration, Store, read_only
from tests.runner.overlays.stores import write_scored_store


@dataclass
class Page:
    """What a page holds, as :mod:`html.parser` reads it."""

    tags: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)  # each template's raw HTML
    text: str = ""

    def all(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag]

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if "id" in a}

    def hrefs(self) -> list[str]:
        return [a["href"] for _, a in self.tags if "href" in a]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.page.text += data


def read(path: Path) -> Page:
    text = path.read_text()
    reader = _Reader()
    reader.feed(text)
    reader.close()
    page = reader.page
    page.templates = re.findall(r"<template id=\"t\d+\">(.*?)</template>", text, re.S)
    return page


@dataclass(frozen=True)
class Built:
    store: Path
    out: Path
    report: HtmlReport
    qids: list[str]


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort, small_root: DataRoot
) -> Built:
    folder = tmp_path_factory.mktemp("html")
    store = folder / "exp.duckdb"
    qids = write_scored_store(store, small_cohort, small_root.images)
    out = folder / "report"
    (out / "q").mkdir(parents=True)
    (out / "q" / "mine.html").write_text("the user's own page")  # not the report's: kept
    (out / "notes.html").write_text("the user's notes")
    (out / "q" / ".x.html.9.tmp").write_text("a crashed build's half page")
    calls: list[tuple[int, int]] = []
    report = write_html_report(
        store, out, images=small_root.images, progress=lambda k, n: calls.append((k, n))
    )
    assert calls == [(k, report.question_pages) for k in range(1, report.question_pages + 1)]
    return Built(store, out, report, qids)


def question_pages(built: Built) -> Iterator[tuple[str, Path]]:
    with read_only(built.store) as con:
        for (qid,) in con.execute("SELECT qid FROM questions ORDER BY qid").fetchall():
            yield qid, built.out / "q" / page_name(qid)


def test_the_index_holds_every_table_and_figure(built: Built) -> None:
    with read_only(built.store) as con:
        shown, _ = shown_and_omitted(all_tables(load_report_data(con, built.store)))
    index = read(built.out / "index.html")
    assert len(index.all("table")) == len(shown)
    captions = index.text
    assert all(t.title in captions for t in shown)
    figures = {a["id"] for a in index.all("figure") if a.get("id", "").startswith("figure-")}
    assert figures == {"figure-target_construction", "figure-iou_by_n", "figure-legal_by_n",
                       "figure-condition_deltas"}  # fmt: skip
    assert len(index.all("svg")) >= 3 and any(a.get("class") == "fig" for a in index.all("svg"))


def test_the_galleries_are_in_templates_each_linking_to_its_attempt(built: Built) -> None:
    index = read(built.out / "index.html")
    assert index.templates
    for template in index.templates:
        (link,) = re.findall(r'<a href="(q/[^"#]+)#([^"]+)"', template)
        page = built.out / link[0]
        assert page.is_file() and link[1] in read(page).ids()
    assert len(index.all("script")) == 2  # the gallery's data and its one small script


def test_every_link_to_a_question_page_resolves(built: Built) -> None:
    index = read(built.out / "index.html")
    links = [h for h in index.hrefs() if h.startswith("q/")]
    assert len({h.split("#")[0] for h in links}) == built.report.question_pages
    for href in links:
        assert (built.out / href.split("#")[0]).is_file(), href


@pytest.mark.parametrize("which", ["index", "questions"])
def test_every_definition_used_is_on_the_same_page(built: Built, which: str) -> None:
    pages = (
        [built.out / "index.html"] if which == "index" else [p for _, p in question_pages(built)]
    )
    for path in pages:
        page = read(path)
        used = {a["href"][1:] for a in page.all("use")}
        assert used and used <= page.ids(), (path.name, used - page.ids())
        images = page.all("image")
        assert images and all(a["href"].startswith("data:image/") for a in images)


def test_nothing_is_fetched_from_the_network(built: Built) -> None:
    for path in [built.out / "index.html", *(p for _, p in question_pages(built))]:
        text = path.read_text()
        assert not re.search(r"https?://", text), path.name
        page = read(path)
        assert not [a for a in page.all("link") if "href" in a]
        assert not [a for a in page.all("script") if "src" in a]


def test_every_stored_attempt_is_on_its_question_page(built: Built) -> None:
    with read_only(built.store) as con:
        rows = con.execute(
            "SELECT qid, configuration, condition, budget, attempt FROM responses"
        ).fetchall()
    assert built.report.answers == len(rows)
    wanted: dict[str, set[str]] = {}
    for qid, configuration, condition, budget, attempt in rows:
        wanted.setdefault(qid, set()).add(attempt_anchor(configuration, condition, budget, attempt))
    for qid, path in question_pages(built):
        page = read(path)
        anchors = {a["id"] for a in page.all("figure") if a.get("class") == "attempt"}
        assert anchors == wanted.get(qid, set()), qid
        assert "../index.html" in page.hrefs()
        assert qid in page.text


def test_the_report_counts_what_it_wrote(built: Built) -> None:
    users = {built.out / "notes.html", built.out / "q" / "mine.html"}
    files = [p for p in built.out.rglob("*") if p.is_file() and p not in users]
    assert built.report.bytes == sum(p.stat().st_size for p in files)
    assert built.report.question_pages == len(list(question_pages(built)))
    assert built.report.index == built.out / "index.html"
    # a crashed build's temporary file is gone; the user's files are not
    assert sorted(p.name for p in (built.out / "q").iterdir()) == sorted(
        ["mine.html", *(p.name for _, p in question_pages(built))]
    )
    assert (built.out / "q" / "mine.html").read_text() == "the user's own page"
    assert (built.out / "notes.html").read_text() == "the user's notes"


def test_untrusted_text_is_escaped_and_long_text_cut(built: Built) -> None:
    texts = [p.read_text() for _, p in question_pages(built)]
    every = "".join(texts) + (built.out / "index.html").read_text()
    assert "<script>alert" not in every
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in every
    assert re.search(r"… \([\d,]+ more characters\)</pre>", every)  # the 10⁵-vertex answer
    assert "not finite" in every  # a non-finite value said, not drawn


def test_a_missing_or_changed_image_is_named_on_its_page(
    built: Built, small_root: DataRoot, tmp_path: Path
) -> None:
    images = tmp_path / "images"
    shutil.copytree(small_root.images, images)
    with read_only(built.store) as con:
        files = dict(con.execute("SELECT qid, image_file FROM questions").fetchall())
    missing, changed = (files[q] for q in built.qids[:2])
    (images / missing).unlink()
    (images / changed).write_bytes(b"\xff\xd8 not the image the cohort hashed")
    out = tmp_path / "report"
    write_html_report(built.store, out, images=images)
    for qid, name in ((built.qids[0], missing), (built.qids[1], changed)):
        page = read(out / "q" / page_name(qid))
        problems = [a for a in page.all("p") if a.get("class") == "problem"]
        assert problems and name in page.text
    index = (out / "index.html").read_text()
    assert f"image: {images / missing}" in index or missing in index


def test_galleries_of_every_kind_show_with_their_filters(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with read_only(built.store) as con:
        rows = con.execute(
            "SELECT configuration, condition, budget, qid, attempt FROM responses "
            "ORDER BY ALL LIMIT 6"
        ).fetchall()
    kinds = KINDS
    hand = [
        Gallery(cell=item.cell, kind=kind, items=(item,), total=10)
        for kind, (c, d, n, q, a) in zip(kinds, rows, strict=True)
        for item in [
            GalleryItem(
                configuration=c, condition=d, budget=n, qid=q, attempt=a, iou=0.5, defect=None
            )
        ]
    ]
    monkeypatch.setattr("runner.pages._build.galleries", lambda con, seed, size: hand)
    (tmp_path / "empty").mkdir()
    write_html_report(built.store, tmp_path / "report", images=tmp_path / "empty")
    index = read(tmp_path / "report" / "index.html")
    options = {a["value"] for a in index.all("option")}
    assert set(kinds) <= options
    assert len(index.templates) == len(rows)
    # no image files: every thumbnail says why it has none, and the page still builds
    assert all("image file missing" in t for t in index.templates)
    assert not index.all("image")


def _box_store(tmp_path: Path) -> Path:
    file, images = generate_box_benchmark("groundingme", tmp_path / "data", questions=4)
    questions = box_set("groundingme", FILE_LOADERS["groundingme"](file, images), images)
    store = tmp_path / "exp.duckdb"
    write_box_set(store, questions)
    with Store(store) as s:
        qids = [q.qid for q in questions.questions]
        s.register([Registration("a", "p", "qwen", "m", 1, "{}", "groundingme reader, pixels")],
                   [GridRow(configuration="a", condition="direct", budget=0, qid=q, attempts=1)
                    for q in qids])  # fmt: skip
    return store


def test_a_box_benchmarks_store_shows_its_table_only(tmp_path: Path) -> None:
    report = write_html_report(_box_store(tmp_path), tmp_path / "report")
    text = report.index.read_text()
    assert "Galleries and question pages are made for GroundBench stores" in text
    assert report.question_pages == 0 and not list((tmp_path / "report" / "q").iterdir())
    assert "<script>" not in text


def test_the_report_command_writes_it_and_says_so(built: Built, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["report", str(built.store), "--html", str(tmp_path / "h"), "--images", "/nowhere"]
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("wrote the HTML report"))
    assert re.search(r"\d+ question pages, \d+ answers, [\d.]+ MB in [\d.]+ s", line)
    assert (tmp_path / "h" / "index.html").is_file()


def test_a_build_that_fails_leaves_only_whole_pages(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[tuple[object, ...]] = []

    def failing(*args: object) -> str:
        if len(written) == 2:
            raise RuntimeError("a bug in the third page")
        written.append(args)
        return "<!DOCTYPE html><p>whole</p>"

    monkeypatch.setattr("runner.pages._build.question_page", failing)
    with pytest.raises(RuntimeError, match="third page"):
        write_html_report(built.store, tmp_path, images=None)
    pages = sorted((tmp_path / "q").iterdir())
    assert len(pages) == 2 and all(p.read_text().endswith("</p>") for p in pages)
    assert not (tmp_path / "index.html").exists()


def test_a_rebuild_replaces_and_removes_only_the_pages_it_wrote(
    built: Built, tmp_path: Path
) -> None:
    # Issue 37: `report --html DIR` deleted every *.html in DIR/q/ that it had not written.
    out = tmp_path / "paper"
    shutil.copytree(built.out, out)  # a folder the report was built in, the user's files beside
    first, *_ = sorted(p.name for _, p in question_pages(built))
    (out / "q" / first).write_text("<p>edited by hand</p>")  # the report's page: replaced
    result = CliRunner().invoke(app, ["report", str(built.store), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "q" / first).read_text().startswith("<!DOCTYPE html>")
    assert (out / "q" / "mine.html").read_text() == "the user's own page"
    assert (out / "notes.html").read_text() == "the user's notes"
    # A box benchmark's store into the same folder holds none of those questions: the pages
    # the report wrote go (they would read as its own); the user's stay.
    write_html_report(_box_store(tmp_path), out)
    assert [p.name for p in (out / "q").iterdir()] == ["mine.html"]
    assert (out / "notes.html").read_text() == "the user's notes"


@pytest.mark.parametrize("where", ["index.html", "q/PAGE"])
def test_a_file_of_the_users_in_the_way_is_refused_and_nothing_written(
    built: Built, tmp_path: Path, where: str
) -> None:
    first = page_name(built.qids[0])
    mine = tmp_path / where.replace("PAGE", first)
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("<h1>My paper</h1>")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(FolderTaken) as caught:
        write_html_report(built.store, tmp_path, images=None)
    assert str(caught.value).startswith(f"{mine}: the HTML report would write over this file")
    assert "\n" not in str(caught.value)
    assert sorted(tmp_path.rglob("*")) == before and mine.read_text() == "<h1>My paper</h1>"


def _gallery_data(index_html: str) -> dict[str, Any]:
    (blob,) = re.findall(r'<script type="application/json" id="gallery-data">(.*?)</script>',
                         index_html, re.S)  # fmt: skip
    data: dict[str, Any] = json.loads(blob)
    return data


def test_a_question_page_wraps_its_columns_rather_than_scroll(built: Built) -> None:
    # Issue 39: the box column hid behind a horizontal scroll at common widths.
    for qid in built.qids:  # the questions with answers
        text = (built.out / "q" / page_name(qid)).read_text()
        assert 'class="scroll"' not in text and "<table" not in text
        sections = re.findall(r'<section class="attempts">(.*?)</section>', text, re.S)
        assert sections
        heads = [re.findall(r'<div class="budget"><h4>([^<]+)</h4>', s) for s in sections]
        assert all(h == heads[0] for h in heads)  # every row the same columns, the box last
        assert heads[0] == ["N=8", "N=16", "box"]  # the small store's budgets
    style = (built.out / "index.html").read_text()
    assert (
        ".budgets{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr))" in style
    )


def test_every_attempt_enlarges_on_a_click_and_closes_back_to_itself(built: Built) -> None:
    text = (built.out / "q" / page_name(built.qids[0])).read_text()
    attempts = re.findall(r'<figure class="attempt" id="([^"]+)">(.*?)</figure>', text, re.S)
    assert attempts
    for anchor, inside in attempts:
        assert inside.startswith(f'<div class="zoom" id="z-{anchor}" style="--ar:'), (
            anchor
        )  # the target the click opens
        assert f'<a class="open" href="#z-{anchor}" title="click to enlarge"><svg' in inside
        assert f'<a class="close" href="#{anchor}">close' in inside
    # Plain CSS: the targeted attempt fills the window; no script on the page.
    assert ".zoom:target{position:fixed;inset:0" in text
    assert "<script" not in text


def test_thumbnails_carry_their_questions_expression(built: Built) -> None:
    index = read(built.out / "index.html")
    with read_only(built.store) as con:
        expressions = dict(con.execute("SELECT qid, expression FROM questions").fetchall())
    pages = {page_name(qid): expression for qid, expression in expressions.items()}
    for template in index.templates:
        (page,) = re.findall(r'<a href="q/([^"#]+)#', template)
        quoted = re.findall(r'<figcaption><q class="expr">([^<]*)</q>', template)
        assert quoted == [escape(pages[page], quote=False)], page


def test_the_worst_gallery_is_the_lower_half_lowest_first_and_says_so(built: Built) -> None:
    text = (built.out / "index.html").read_text()
    index = read(built.out / "index.html")
    worst = [g for g in _gallery_data(text)["galleries"] if g["k"] == "worst"]
    assert worst
    for g in worst:
        assert re.search(r"worst by IoU: the lower half, \d+ of \d+ parseable answers", g["h"])
        verdicts = [re.search(r"(box )?IoU (\d+\.\d)", index.templates[k]) for k in g["i"]]
        ious = [float(m[2]) for m in verdicts if m]
        assert len(ious) == len(g["i"]) and ious == sorted(ious), g["h"]
        span = re.search(r"IoU (\d+\.\d)–(\d+\.\d)", g["h"])
        assert span and (float(span[1]), float(span[2])) == (ious[0], ious[-1])


def test_the_gallery_filters_are_read_from_and_written_to_the_address(built: Built) -> None:
    text = (built.out / "index.html").read_text()
    index = read(built.out / "index.html")
    script = index.all("script")
    assert len(script) == 2
    assert "new URLSearchParams(location.search)" in text
    assert "history.replaceState(" in text
    assert '{"c": "configuration", "d": "condition", "n": "budget", "k": "gallery"}' in text
    assert 'PAGE = "page"' in text
    budgets = [
        a["value"] for t, a in index.tags if t == "option" and a.get("value") in ("8", "box")
    ]
    assert set(budgets) == {"8", "box"}  # the address says budget=8, budget=box
    assert {g["n"] for g in _gallery_data(text)["galleries"]} >= {"8", "box"}
