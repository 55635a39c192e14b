"""The HTML report's pieces: a table with its marks, a figure made inline, names made safe."""

from __future__ import annotations

import io
import re

import matplotlib
import matplotlib.pyplot as plt  # runner.reports sets the Agg backend: no display needed

from runner.pages._figures import inline_svg
from runner.pages._html import page_name, raw_text, slug
from runner.reports import ReportTable, render_html

TABLE = ReportTable(
    name="t1",
    title="Table 1: <IoU> & more",
    columns=("Configuration", "N", "IoU"),
    rows=(("a<b>", "8", "50.0"), ("c", "8", "40.0*"), ("d", "8", "30.0")),
    notes=("* incomplete",),
    marks={(0, 2): "best", (1, 2): "second"},
)


def test_a_table_keeps_its_marks_and_escapes_its_text() -> None:
    html = render_html(TABLE)
    assert html.count("<table>") == 1 and html.count("<tr>") == 4
    assert "<caption>Table 1: &lt;IoU&gt; &amp; more</caption>" in html
    assert '<td class="num"><strong>50.0</strong></td>' in html
    assert re.search(r'<td class="num incomplete" title="[^"]+"><u>40\.0\*</u></td>', html)
    assert "<td>a&lt;b&gt;</td>" in html
    assert '<ul class="notes"><li>* incomplete</li></ul>' in html


def test_a_figure_inline_fetches_nothing_and_keeps_its_ids_apart() -> None:
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], marker="o")
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, format="svg")
    plt.close(fig)
    svg = inline_svg(out.getvalue(), "f1-")
    assert svg.startswith('<svg class="fig"') and "max-width:" in svg
    assert not re.search(r"https?://|<\?xml|<!DOCTYPE|xlink:", svg)
    ids = set(re.findall(r'id="([^"]+)"', svg))
    assert ids and all(i.startswith("f1-") for i in ids)
    assert set(re.findall(r'href="#([^"]+)"', svg)) <= ids


def test_names_are_safe_and_never_meet() -> None:
    assert slug("gemini") == "gemini"
    assert page_name("refcoco:1") != page_name("refcoco_1")
    assert re.fullmatch(r"[A-Za-z0-9._-]+\.html", page_name("../../etc/passwd"))
    assert not page_name("../x").startswith(".")


def test_raw_text_is_cut_and_counted() -> None:
    assert raw_text("<b>" + "x" * 1000) == (
        f'<pre class="raw">&lt;b&gt;{"x" * 597}… (403 more characters)</pre>'
    )
