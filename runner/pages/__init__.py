"""The HTML report: ``index.html`` with every table, the figures and the galleries of answers,
and a page per question with all its attempts side by side (issue 23). Every page is one
self-contained file: it opens from disk and fetches nothing. :func:`check_page` opens a page in
Chromium (:func:`find_chromium`) and takes its picture; :class:`BrowserError` when it cannot."""

from runner.pages._browser import BrowserError, check_page, find_chromium
from runner.pages._build import HtmlReport, write_html_report
from runner.pages._folder import FolderTaken

__all__ = [
    "BrowserError",
    "FolderTaken",
    "HtmlReport",
    "check_page",
    "find_chromium",
    "write_html_report",
]
