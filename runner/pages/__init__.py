"""The HTML report: ``index.html`` with every table, the figures and the galleries of answers,
and a page per question with all its attempts side by side (issue 23). Every page is one
self-contained file: it opens from disk and fetches nothing."""

from runner.pages._build import HtmlReport, write_html_report
from runner.pages._folder import FolderTaken

__all__ = ["FolderTaken", "HtmlReport", "write_html_report"]
