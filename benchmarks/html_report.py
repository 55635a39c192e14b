"""The HTML report's size and build time, for the demo's store and for a paper-sized one.

Each store is run on the simulator first, as a user would make it: the demo's with
``groundbench demo`` (120 synthetic images, 20 questions per source, the paper's four
configurations over the 13-condition grid), the paper-sized one as ``benchmarks.batch_grid``
makes it (about 120,000 calls on 1,500 synthetic questions), then re-scored. Then
``write_html_report`` writes each one's report: the index's size, the folder's, the question
pages, the answers drawn and the build time; and, where Chromium is installed, the index opened
in it: the seconds to load and count it, the thumbnails shown, its console errors. Run:

    .venv/bin/python -m benchmarks.html_report [--skip-paper] [--keep DIR]
    .venv/bin/python -m benchmarks.html_report --demo STORE --paper STORE  # stores made before

A store given is read as it is (not re-scored); its images are the ones its last run recorded.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from runner.pages import HtmlReport, write_html_report
from runner.pages._browser import check_page, find_chromium
from runner.rescore import rescore

# The gallery thumbnails a reader sees once the page's script has run.
THUMBNAILS = "return document.querySelectorAll('#gallery-view figure').length;"


@dataclass(frozen=True)
class Built:
    """One store's report: what was written, how long it took, and the browser's view of it."""

    name: str
    report: HtmlReport
    build_s: float
    index_bytes: int
    browser: str


def make_demo(work: Path) -> Path:
    """The demo's store, run by ``groundbench demo`` in a process of its own (it starts Ray)."""
    folder = work / "demo"
    _run([str(Path(sys.executable).with_name("groundbench")), "demo", "--dir", str(folder)])
    return folder / "demo.duckdb"


def make_paper(work: Path) -> Path:
    """The paper-sized store, run as ``benchmarks.batch_grid`` runs it, then re-scored."""
    folder = work / "paper"
    _run([sys.executable, "-m", "benchmarks.batch_grid", "--keep", str(folder)])
    store = folder / "paper.duckdb"
    begun = time.perf_counter()
    rescore(store)
    print(f"paper-sized store re-scored in {time.perf_counter() - begun:.0f} s")
    return store


def _run(command: list[str]) -> None:
    # Their own reports are long; only their failure matters here.
    done = subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode})")


def build(name: str, store: Path, out: Path) -> Built:
    """Write ``store``'s HTML report into ``out`` and open its index in Chromium."""
    begun = time.perf_counter()
    report = write_html_report(store, out)
    build_s = time.perf_counter() - begun
    return Built(name, report, build_s, report.index.stat().st_size, _browse(report.index))


def _browse(index: Path) -> str:
    if find_chromium() is None:
        return "not opened (no Chromium)"
    begun = time.perf_counter()
    check = check_page(index, script=THUMBNAILS, timeout_s=600)
    opened_s = time.perf_counter() - begun
    broken = check.broken_images + check.broken_svg_images + check.missing_refs
    return (
        f"opened in Chromium in {opened_s:.1f} s: {check.tables} tables, "
        f"{check.script_result} thumbnails shown, {broken} broken images or references, "
        f"{len(check.console_errors)} console errors"
    )


def show(built: Built) -> None:
    r = built.report
    print(
        f"{built.name}: index {built.index_bytes / 1e6:.1f} MB, folder {r.bytes / 1e6:.1f} MB, "
        f"{r.question_pages:,} question pages, {r.answers:,} answers, "
        f"built in {built.build_s:.1f} s ({r.answers / built.build_s:,.0f} answers/s)"
    )
    print(f"{built.name}: {built.browser}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, help="the demo's store, made before")
    parser.add_argument("--paper", type=Path, help="a paper-sized store, made before")
    parser.add_argument("--skip-paper", action="store_true", help="the demo's store only")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        stores = {"demo": args.demo or make_demo(work)}
        if not args.skip_paper:
            stores["paper"] = args.paper or make_paper(work)
        built = [build(name, store, work / f"{name}-html") for name, store in stores.items()]
    print()
    for b in built:
        show(b)
    record(**{
        f"{b.name}_{key}": value
        for b in built
        for key, value in (("build_s", b.build_s), ("folder_mb", b.report.bytes / 1e6),
                           ("index_mb", b.index_bytes / 1e6), ("answers", b.report.answers))
    })  # fmt: skip


if __name__ == "__main__":
    main()
