"""Which files of the report's folder are the report's own.

A build writes ``index.html`` and ``q/<qid>.html`` and names the question pages it wrote in
:data:`RECORD` beside them. A rebuild writes over a file only if an earlier build wrote it (named
in the record, or opening as every page of the report opens: a build before the record was kept,
or one killed before it wrote its record), and removes only the recorded pages of questions no
longer in the store. Any other file in the folder is the user's: a file in the way of the report
is refused in one line before anything is written, and nothing else is ever touched. (Issue 37:
``report --html DIR`` deleted every ``*.html`` in ``DIR/q/`` it had not written.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from runner._errors import RunnerError
from runner.pages._html import OPENING, write_atomic

RECORD = ".groundbench-report.json"  # beside index.html: the question pages the report wrote
INDEX = "index.html"
QUESTIONS = "q"  # the folder of the question pages, beside index.html
MAX_RECORD_BYTES = 64 << 20  # a paper's 1,500 pages take ~60 KB; more is not a record
_PAGE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*\.html")  # page_name's: no folder, no dot first
_TEMPORARY = re.compile(r"\.[A-Za-z0-9_-][A-Za-z0-9._-]*\.html\.\d+\.tmp")  # write_atomic's


class FolderTaken(RunnerError):
    """A file the report would write is in its folder, and no build of the report wrote it."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pages: tuple[str, ...] = ()  # under q/


@dataclass(frozen=True)
class ReportFolder:
    """The report's folder as a build finds it: the pages an earlier build recorded."""

    out: Path
    recorded: frozenset[str]  # question pages an earlier build wrote
    has_record: bool

    @classmethod
    def claim(cls, out: Path, pages: Iterable[str]) -> ReportFolder:
        """``out`` for a build that writes ``index.html`` and ``pages`` under ``q/``; its
        folders are made.

        Raises
        ------
        FolderTaken
            A file where the build would write one, which no build wrote; nothing written.
        """
        folder = cls(out, *_recorded(out))
        questions = out / QUESTIONS
        for path in (out, questions):
            if _present(path) and not path.is_dir():
                raise FolderTaken(f"{path}: not a folder; give --html a folder of its own")
        for path in (out / INDEX, *(questions / page for page in pages)):
            if not folder._writes_over(path):
                raise FolderTaken(
                    f"{path}: the HTML report would write over this file, which it did not "
                    "write; give --html a folder of its own (new or empty), or move the file"
                )
        try:
            questions.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FolderTaken(f"{questions}: cannot make the folder: {exc.strerror}") from None
        return folder

    def finish(self, written: Iterable[str]) -> None:
        """After a whole build: remove the recorded pages it did not write again (questions
        no longer in the store, that would read as this store's) and any temporary file of a
        killed build; record what it wrote."""
        kept = set(written)
        questions = self.out / QUESTIONS
        for name in self.recorded - kept:
            if _opens_as_a_page(questions / name):  # not one the user wrote there since
                (questions / name).unlink(missing_ok=True)
        for path in questions.iterdir():
            if _TEMPORARY.fullmatch(path.name) and path.is_file():
                path.unlink(missing_ok=True)
        self._record(kept)

    def keep(self, written: Iterable[str]) -> None:
        """After a build that failed part way: record the pages it wrote beside those
        recorded before; all of them are the report's."""
        self._record(self.recorded | set(written))

    def size(self, written: Iterable[str]) -> int:
        """The bytes of the report's files: its index, ``written`` and its record."""
        files = [self.out / INDEX, self.out / RECORD, *(self.out / QUESTIONS / p for p in written)]
        return sum(path.stat().st_size for path in files)

    def _record(self, pages: Iterable[str]) -> None:
        record = _Record(pages=tuple(sorted(pages)))
        write_atomic(self.out / RECORD, record.model_dump_json(indent=1) + "\n")

    def _writes_over(self, path: Path) -> bool:
        if not _present(path) or _opens_as_a_page(path):
            return True
        if path.parent == self.out:  # index.html: the report's where it keeps a record
            return self.has_record
        return path.name in self.recorded


def _recorded(out: Path) -> tuple[frozenset[str], bool]:
    """The pages an earlier build recorded, and whether there was a record. A record that
    cannot be read is none: nothing is removed on its word."""
    path = out / RECORD
    try:
        with path.open("rb") as file:
            record = _Record.model_validate_json(file.read(MAX_RECORD_BYTES + 1))
    except (OSError, ValidationError, ValueError):
        return frozenset(), False
    return frozenset(p for p in record.pages if _PAGE.fullmatch(p)), True


def _opens_as_a_page(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(len(OPENING)) == OPENING.encode()
    except OSError:
        return False


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()
