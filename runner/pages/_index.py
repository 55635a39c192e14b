"""The report's index page: every table, the figures, the galleries and a link to every
question's page, in one self-contained file.

The tables and figures are plain HTML and SVG: they show without a script. The galleries hold
tens of thousands of thumbnails on the paper's grid, too many for one page's DOM: each
thumbnail sits, made once, in a ``<template>`` (inert: parsed, never laid out), and a small
inline script shows one page of them at a time for the filters chosen.

The filters live in the page's address, so that a gallery can be linked to and comes back on
reload: ``index.html?configuration=gemini&condition=base&budget=8&gallery=worst&page=2``
(:data:`URL_PARAMETERS`; ``budget`` is the number or ``box``). Opening such an address shows
that gallery; each change of a filter or a page rewrites the address in place
(``history.replaceState``: no new history entry per click).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from conditions import BOX
from runner.overlays._svg import picture_defs
from runner.pages._galleries import Gallery
from runner.pages._html import budget_label, document, legend, page_name
from runner.reports import ReportTable, omitted_note, render_html
from runner.store import AttemptKey

PER_PAGE = 24  # thumbnails shown at once
KINDS = {
    "worst": "worst by IoU (lower half)",
    "unparseable": "unparseable (raw text)",
    "illegal": "illegal",
    "distractor": "distractor selected",
    "refusal": "refusal",
    "sample": "random sample",
}
# Each filter's field in the gallery data and its name in the page's address.
URL_PARAMETERS = {"c": "configuration", "d": "condition", "n": "budget", "k": "gallery"}
PAGE_PARAMETER = "page"  # 1-based; left out on the first
_HATCHED = " A hatched point is an incomplete cell: answered/questions beside it."
FIGURES = {
    "target_construction": "Figure 1: target construction. One referent's COCO contour (all its "
    "parts; the selected part, the one with the most listed vertices, filled), then the "
    "canonical target G_N at each budget over the selected part: its listed vertices as grey "
    "dots, the target's vertices kept from it filled, the midpoints up-sampling inserted "
    "hollow; a dot no target vertex covers was simplified away.",
    "iou_by_n": "Fixed IoU against N per configuration, with 95% bootstrap intervals." + _HATCHED,
    "legal_by_n": "Legal coverage against N per configuration." + _HATCHED,
    "condition_deltas": "Each condition's paired change in fixed IoU against base." + _HATCHED,
}


@dataclass(frozen=True)
class Thumbnails:
    """The galleries' thumbnails, each made once however many galleries hold it.

    Attributes
    ----------
    html
        Each thumbnail's HTML (an overlay linking to its attempt, and a caption).
    at
        Where each gallery item's thumbnail is in ``html``, by (configuration, condition,
        budget, qid, attempt).
    definitions
        The pictures and question rings the thumbnails use, for the page's ``<defs>``.
    """

    html: Sequence[str]
    at: dict[AttemptKey, int]
    definitions: Sequence[str]


@dataclass(frozen=True)
class IndexContent:
    """What the index shows: ``questions`` are (qid, expression) of every question's page;
    ``galleries`` is ``None`` for a box benchmark's store (it has none)."""

    title: str
    summary: str
    tables: Sequence[ReportTable]
    omitted: Sequence[ReportTable]
    figures: Sequence[tuple[str, str]]
    galleries: Sequence[Gallery] | None
    thumbnails: Thumbnails
    questions: Sequence[tuple[str, str]]
    seed: int


def index_page(content: IndexContent) -> str:
    """The whole index page (see the module's docstring)."""
    sections = [
        f"<h1>{escape(content.title)}</h1><p>{escape(content.summary)}</p>",
        '<nav><a href="#tables">Tables</a> · <a href="#figures">Figures</a> · '
        '<a href="#galleries">Galleries</a> · <a href="#questions">Questions</a></nav>',
        _tables(content),
        _figures(content),
        _galleries(content),
        _questions(content),
    ]
    script = _SCRIPT if content.galleries else ""
    return document(content.title, "".join(sections), script=script)


def _tables(content: IndexContent) -> str:
    omitted = "".join(f"<li>{escape(omitted_note(t))}</li>" for t in content.omitted)
    return (
        '<h2 id="tables">Tables</h2>'
        + "".join(render_html(t) for t in content.tables)
        + (f'<ul class="notes">{omitted}</ul>' if omitted else "")
    )


def _figures(content: IndexContent) -> str:
    if not content.figures:
        return '<h2 id="figures">Figures</h2><p>No figures: a box benchmark\'s store has none.</p>'
    figures = "".join(
        f'<figure id="figure-{escape(name)}">{svg}'
        f"<figcaption>{escape(FIGURES.get(name, name))}</figcaption></figure>"
        for name, svg in content.figures
    )
    return f'<h2 id="figures">Figures</h2>{figures}'


def _galleries(content: IndexContent) -> str:
    head = '<h2 id="galleries">Galleries</h2>'
    if content.galleries is None:
        return head + (
            "<p>Galleries and question pages are made for GroundBench stores; this store holds "
            "a box benchmark's answers.</p>"
        )
    thumbnails = content.thumbnails
    shown = sorted(
        (g for g in content.galleries if any(i.key in thumbnails.at for i in g.items)),
        key=lambda g: (g.cell.configuration, g.cell.condition, g.cell.is_box, g.cell.budget),
    )  # the box last; a stable sort: each cell's kinds keep their order
    if not shown:
        return head + "<p>No answer is stored yet: there is nothing to show.</p>"
    templates = "".join(
        f'<template id="t{k}">{html}</template>' for k, html in enumerate(thumbnails.html)
    )
    data = {
        "kinds": KINDS,
        "perPage": PER_PAGE,
        "galleries": [_gallery_data(g, thumbnails) for g in shown],
    }
    # No "<" at all in a script's text: neither "</script>" nor "<!--" can end or bend it.
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    return (
        head + "<p>Per cell: the worst answers by IoU (the lower half of its parseable answers, "
        "lowest first), the unparseable ones with their raw text, the illegal ones, those that "
        f"selected a distractor, refusals, and a random sample (seed {content.seed}). Each "
        "thumbnail is captioned with its question's expression and links to its question's "
        "page; the filters are kept in the page's address, to link to a gallery.</p>"
        + legend()
        + "<noscript><p>The galleries need JavaScript; the tables, the figures and every "
        "question's page do not.</p></noscript>"
        + _filters(shown)
        + '<div id="gallery-view"></div>'
        + picture_defs(thumbnails.definitions)
        + templates
        + f'<script type="application/json" id="gallery-data">{blob}</script>'
    )


def _gallery_data(gallery: Gallery, thumbnails: Thumbnails) -> dict[str, object]:
    cell = gallery.cell
    shown = [thumbnails.at[i.key] for i in gallery.items if i.key in thumbnails.at]
    return {
        "c": cell.configuration,
        "d": cell.condition,
        "n": budget_value(cell.budget),
        "k": gallery.kind,
        "h": gallery_heading(gallery, len(shown)),
        "i": shown,
    }


def budget_value(budget: int) -> str:
    """A budget as its filter's value and in the page's address: ``8``, or ``box``."""
    return "box" if budget == BOX else str(budget)


def gallery_heading(gallery: Gallery, shown: int) -> str:
    """The line above a gallery: its cell, its kind and how many of how many it shows; the
    worst gallery says what "worst" is (the lower half, of how many) and its IoUs' span."""
    cell = gallery.cell
    where = f"{cell.configuration} · {cell.condition} · {budget_label(cell.budget)}"
    if gallery.kind != "worst" or gallery.of is None:
        return f"{where} — {KINDS[gallery.kind]} ({shown} of {gallery.total})"
    ious = [100 * i.iou for i in gallery.items if i.iou is not None]
    span = f", IoU {min(ious):.1f}–{max(ious):.1f}" if ious else ""
    cut = f"; the lowest {shown} shown" if shown < gallery.total else ""
    return (
        f"{where} — worst by IoU: the lower half, {gallery.total} of {gallery.of} parseable "
        f"answers{span}{cut}"
    )


def _filters(galleries: Sequence[Gallery]) -> str:
    """The filters (hidden until the script runs: without it they would do nothing) and the
    pager."""
    choices = {
        "c": ("configuration", sorted({g.cell.configuration for g in galleries})),
        "d": ("condition", sorted({g.cell.condition for g in galleries})),
        "n": ("N", [budget_value(n) for n in sorted({g.cell.budget for g in galleries},
                                                    key=lambda n: (n == BOX, n))]),
        "k": ("gallery", [k for k in KINDS if any(g.kind == k for g in galleries)]),
    }  # fmt: skip
    selects = "".join(
        f'<label>{label} <select name="{name}"><option value="">all</option>'
        + "".join(
            f'<option value="{escape(v)}">{escape(_shown_as(name, v))}</option>' for v in values
        )
        + "</select></label>"
        for name, (label, values) in choices.items()
    )
    return (
        f'<form id="gallery-filters" class="controls" hidden>{selects}</form>'
        '<p id="gallery-pager" class="pager" hidden><button type="button" id="gallery-prev">'
        'Previous</button><span id="gallery-status"></span><button type="button" '
        'id="gallery-next">Next</button></p>'
    )


def _shown_as(field: str, value: str) -> str:
    """A filter's option as the reader sees it: a kind's title, ``N=8``, or the value."""
    if field == "k":
        return KINDS.get(value, value)
    return f"N={value}" if field == "n" and value != "box" else value


def _questions(content: IndexContent) -> str:
    if not content.questions:
        return ""
    items = "".join(
        f'<li><a href="q/{page_name(qid)}">{escape(qid)}</a> “{escape(expression)}”</li>'
        for qid, expression in content.questions
    )
    return (
        f'<h2 id="questions">Questions</h2><details><summary>Every question\'s page '
        f"({len(content.questions):,})</summary><ol>{items}</ol></details>"
    )


_SCRIPT = (
    """
(function () {
  var data = JSON.parse(document.getElementById("gallery-data").textContent);
  var form = document.getElementById("gallery-filters");
  var pager = document.getElementById("gallery-pager");
  var view = document.getElementById("gallery-view");
  var status = document.getElementById("gallery-status");
  var prev = document.getElementById("gallery-prev");
  var next = document.getElementById("gallery-next");
  var PARAMS = """
    + json.dumps(URL_PARAMETERS)
    + """, PAGE = """
    + json.dumps(PAGE_PARAMETER)
    + """;
  var FIELDS = Object.keys(PARAMS), PER_PAGE = data.perPage, page = 0;
  // The filters in the address: a value no option has (a link from another report) is ignored.
  function fromAddress() {
    var query = new URLSearchParams(location.search), found = false;
    FIELDS.forEach(function (f) {
      var wanted = query.get(PARAMS[f]), select = form.elements[f];
      var known = wanted !== null && Array.prototype.some.call(select.options, function (o) {
        return o.value === wanted;
      });
      if (known) { select.value = wanted; found = true; }
    });
    var asked = parseInt(query.get(PAGE) || "1", 10);
    page = isNaN(asked) ? 0 : asked - 1;
    return found || query.has(PAGE);
  }
  function toAddress() {
    var query = new URLSearchParams(location.search);
    FIELDS.forEach(function (f) {
      var value = form.elements[f].value;
      if (value === "") { query.delete(PARAMS[f]); } else { query.set(PARAMS[f], value); }
    });
    if (page > 0) { query.set(PAGE, String(page + 1)); } else { query.delete(PAGE); }
    var search = query.toString();
    try {
      history.replaceState(null, "", (search ? "?" + search : location.pathname) + "#galleries");
    } catch (refused) {
      // A browser that refuses it for a file: page keeps the filters, not the address.
    }
  }
  function chosen() {
    var wanted = {};
    FIELDS.forEach(function (f) { wanted[f] = form.elements[f].value; });
    var out = [];
    data.galleries.forEach(function (g) {
      if (FIELDS.every(function (f) { return wanted[f] === "" || String(g[f]) === wanted[f]; })) {
        g.i.forEach(function (k) { out.push([g, k]); });
      }
    });
    return out;
  }
  function show() {
    var all = chosen(), pages = Math.max(1, Math.ceil(all.length / PER_PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    view.textContent = "";
    var grid = null, last = null;
    all.slice(page * PER_PAGE, (page + 1) * PER_PAGE).forEach(function (entry) {
      var template = document.getElementById("t" + entry[1]);
      if (!template) { return; }
      if (entry[0] !== last) {
        last = entry[0];
        var h = document.createElement("h3");
        h.textContent = last.h;
        grid = document.createElement("div");
        grid.className = "thumbs";
        view.appendChild(h);
        view.appendChild(grid);
      }
      grid.appendChild(template.content.cloneNode(true));
    });
    status.textContent = all.length
      ? "page " + (page + 1) + " of " + pages + " · " + all.length + " thumbnails"
      : "no gallery matches these filters";
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function changed() { show(); toAddress(); }
  form.addEventListener("change", function () { page = 0; changed(); });
  prev.addEventListener("click", function () { page -= 1; changed(); });
  next.addEventListener("click", function () { page += 1; changed(); });
  form.hidden = false;
  pager.hidden = false;
  var linked = fromAddress();
  show();
  if (linked && !location.hash) { document.getElementById("galleries").scrollIntoView(); }
})();
"""
)
