"""The HTML report's common parts: a page's frame and style, safe names, the legend, escaped
text, and writing a page so that no half-written one is ever left behind."""

from __future__ import annotations

import hashlib
import os
import re
from html import escape
from pathlib import Path

from conditions import BOX as BOX_BUDGET
from runner.overlays._palette import (
    ANSWER,
    BOX,
    CONTROL,
    CROSSING,
    DISTRACTOR,
    DUPLICATE,
    PART,
    TARGET,
    UNSCORED,
    Style,
)

RAW_SHOWN = 600  # characters of an answer's raw text shown; the rest is counted
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

# A figure cell never wraps (td.num): Table 1's pairs, squeezed to the window, broke as
# "42.2 /" over "42.2" (three lines each at 800 px); a wide table scrolls in its .scroll box.
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 16px 40px;
color:#1a1a1a}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;margin:8px 0}caption{text-align:left;font-weight:600;
padding:4px 0}
th,td{border:1px solid #ccc;padding:3px 7px;vertical-align:top}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.incomplete{background:#fff6e0}ul.notes{margin:2px 0 14px;color:#444;font-size:13px}
.scroll{overflow-x:auto}
svg.ov{display:block;width:100%;height:auto;background:#fff}
svg.fig{width:100%;height:auto}
figure{margin:0}
.thumbs{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:10px}
.thumbs figure,.attempt{border:1px solid #ddd;padding:4px;background:#fafafa}
figcaption{font-size:12px;line-height:1.35;word-break:break-word}
pre.raw{white-space:pre-wrap;word-break:break-all;max-height:12em;overflow:auto;
font-size:11px;background:#fff;border:1px solid #eee;margin:3px 0;padding:3px}
.problem{color:#a00000;font-weight:600}.note{color:#7a4b00}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend svg{vertical-align:middle;margin-right:4px}
.budgets{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:8px}
.budget h4{margin:0 0 4px;font-size:13px}.budget .attempt{margin:0 0 6px}
section.attempts+section.attempts{border-top:1px solid #ddd;margin-top:14px}
.hint{margin:0 0 6px;color:#444}
.zoom>a.open{display:block;cursor:zoom-in}.zoom>.label,.zoom>.close{display:none}
.zoom:target{position:fixed;inset:0;z-index:10;background:#f4f4f4;padding:10px;margin:0;
display:flex;flex-direction:column;align-items:center;gap:6px}
.zoom:target>a.open{cursor:default}
.zoom:target svg.ov{width:min(96vw,calc((100vh - 90px) * var(--ar,1)));height:auto}
.zoom:target>.label,.zoom:target>.close{display:block;margin:0;font-size:14px}
.thumbs .expr{display:block;font-style:italic;margin-bottom:2px}
.controls select{margin-right:10px}.pager button{margin:0 6px}
"""


# How every page opens: a rebuild knows by it a page an earlier build wrote (issue 37).
OPENING = (
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width,initial-scale=1">'
)


def document(title: str, body: str, *, script: str = "") -> str:
    """A whole page: its own style and script inline, nothing fetched from anywhere."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        f"{OPENING}<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{body}{tail}</body></html>\n"
    )


def slug(text: str) -> str:
    """``text`` as a file name and an id: its safe characters, and when any other was
    replaced, a short hash of the whole so that two names never meet (``refcoco:135`` is
    ``refcoco_135-…``)."""
    safe = _UNSAFE.sub("_", text)
    if safe == text and safe and not safe.startswith("."):
        return safe
    return f"{safe.lstrip('.')}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def page_name(qid: str) -> str:
    """The file name of question ``qid``'s page, under the report's ``q/`` folder."""
    return f"{slug(qid)}.html"


def attempt_anchor(configuration: str, condition: str, budget: int, attempt: int) -> str:
    """The id of one attempt on its question's page, the target of every link to it."""
    return "a-" + slug(f"{configuration}.{condition}.{budget}.{attempt}")


def budget_label(budget: int) -> str:
    return "box" if budget == BOX_BUDGET else f"N={budget}"


def raw_text(text: str, limit: int = RAW_SHOWN) -> str:
    """An answer's text (untrusted) escaped in a ``<pre>``, cut at ``limit`` characters
    with how many more there were."""
    shown = text[:limit]
    more = len(text) - len(shown)
    tail = f"… ({more:,} more characters)" if more else ""
    return f'<pre class="raw">{escape(shown)}{escape(tail)}</pre>'


LEGEND: tuple[Style, ...] = (ANSWER, UNSCORED, TARGET, PART, DISTRACTOR, BOX, CONTROL)


def legend() -> str:
    """What each colour and dash means, once per page (the overlays carry no legend)."""
    items = [f"<span>{_swatch(style)}{escape(style.label)}</span>" for style in LEGEND]
    items.append(
        f'<span><svg width="14" height="14"><circle cx="7" cy="7" r="5" fill="{CROSSING.colour}" '
        f'stroke="#000"/></svg>{escape(CROSSING.label)}</span>'
    )
    items.append(
        f'<span><svg width="14" height="14"><circle cx="7" cy="7" r="5" fill="none" '
        f'stroke="{DUPLICATE.colour}" stroke-width="1.5"/></svg>{escape(DUPLICATE.label)}</span>'
    )
    return f'<p class="legend">{"".join(items)}</p>'


def _swatch(style: Style) -> str:
    dash = f' stroke-dasharray="{",".join(f"{d * 2:g}" for d in style.dash)}"' if style.dash else ""
    return (
        f'<svg width="26" height="10"><line x1="1" y1="5" x2="25" y2="5" '
        f'stroke="{style.colour}" stroke-width="2"{dash}/></svg>'
    )


def write_atomic(path: Path, text: str) -> int:
    """``text`` to ``path`` through a temporary name renamed into place (a crash leaves the
    earlier page or none, never half of one); returns the bytes written."""
    data = text.encode("utf-8", "replace")  # a lone surrogate in an answer fails no page
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return len(data)
