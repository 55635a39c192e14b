"""The report's figures, written by matplotlib as SVG files, inlined into the index page."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from runner.reports import ReportData, write_figures

_PROLOG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<!--.*?-->|<metadata>.*?</metadata>", re.S)
_NAMESPACE = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_SIZE = re.compile(r'\s(width|height)="([\d.]+)pt"')
_ID = re.compile(r'\bid="([^"]+)"')
_REFERENCE = re.compile(r'(href="#|url\(#)([^")]+)')


def figure_svgs(data: ReportData) -> list[tuple[str, str]]:
    """Each figure's name and its SVG text, ready to sit inline in a page: no prolog, no
    metadata (whose namespaces name web addresses), ids prefixed per figure so that two
    figures' ids never meet in one page."""
    with tempfile.TemporaryDirectory(prefix="groundbench-figures-") as folder:
        paths = write_figures(data, Path(folder), formats=("svg",))
        return [(p.stem, inline_svg(p.read_text(), f"{p.stem}-")) for p in paths]


def inline_svg(text: str, prefix: str) -> str:
    """A standalone SVG file's text as an element of an HTML page (see :func:`figure_svgs`);
    its fixed size becomes a largest width, so that it shrinks with a narrow window."""
    text = _PROLOG.sub("", text).strip()
    text = _NAMESPACE.sub("", text).replace("xlink:href=", "href=")
    text = _ID.sub(lambda m: f'id="{prefix}{m[1]}"', text)
    text = _REFERENCE.sub(lambda m: f"{m[1]}{prefix}{m[2]}", text)
    root_end = text.index(">")
    root = text[:root_end]
    width = next((float(m[2]) for m in _SIZE.finditer(root) if m[1] == "width"), None)
    root = _SIZE.sub("", root).replace("<svg", '<svg class="fig"', 1)
    if width is not None:
        root += f' style="max-width:{width * 4 / 3:.0f}px"'  # points to CSS pixels
    return root + text[root_end:]
