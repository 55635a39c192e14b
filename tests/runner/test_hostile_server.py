"""What a hostile server sends, through the real :class:`Client` on loopback to the store and
the pages (issue 37).

Finding 1: a body of 1 MB of ``[`` raised ``RecursionError`` out of the decoder and ended the
run; it is that attempt's error record (a class and a one-line message). Finding 7: a 200 KB
``finish_reason`` (and ``id``) was stored and drawn uncut — 348 such answers made a 126 MB HTML
report, and ``show`` took 14 s and 1 GB; it is stored cut to 256 characters, and a store an
older version wrote is cut as it is drawn.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import duckdb
import pytest
from aiohttp import web

from conditions import Cohort, Configuration, DataRoot, Decoding, Request, RequestKey, Transport
from runner.backends import ApiKey, AttemptRecord, Client, ask, holds_key
from runner.overlays import Pictures, read_answers, read_question
from runner.overlays._caption import caption
from runner.pages import write_html_report
from runner.store import GridRow, Registration, Store, read_only, response_row
from tests.runner.backends.loopback import Handler, serving_posts
from tests.runner.overlays.stores import write_scored_store

KEY = ApiKey("sk-hostile-server-0123456789abcdef")
ONE_MB_OF_BRACKETS = b"[" * 1_000_000
LONG = 200_000  # characters of the finish reason that made the 126 MB report
MAX_FIELD = 256


def _answering(body: bytes) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    return handler


async def _records(provider: str, handler: Handler) -> list[AttemptRecord]:
    request = Request(
        RequestKey(configuration="c", condition="base", budget=8, qid="q1"),
        "p",
        "outline",
        None,
        Decoding(),
        0,
    )
    async with serving_posts(handler) as url:
        transport = Transport(base_url=url, max_response_bytes=4 << 20, max_transport_retries=0)
        configuration = Configuration(name="c", provider=provider, model="m", transport=transport)
        async with Client(configuration, KEY) as backend:
            return await ask(backend, request, lambda r: None)


# -- finding 1: nothing a server sends ends a run ------------------------------------------------


@pytest.mark.parametrize("provider", ["qwen", "gemini"])
def test_a_megabyte_of_brackets_is_the_attempts_error_record_not_the_runs_end(
    provider: str,
) -> None:
    records = asyncio.run(_records(provider, _answering(ONE_MB_OF_BRACKETS)))
    assert records, "no record: the attempt ended without one"
    for record in records:
        assert record.outcome == "transient" and record.answer is None
        message = record.error_message or ""
        assert "nested deeper than 64" in message and "\n" not in message and len(message) < 300
    response_row(records[0])  # storable as it stands


# -- finding 7: a server's short texts are cut before they are kept -----------------------------


def _chat_with(finish_reason: str, id_: str) -> bytes:
    choice = {"message": {"content": "[1, 2, 3, 4]"}, "finish_reason": finish_reason}
    return json.dumps({"id": id_, "model": "m", "choices": [choice]}).encode()


def _gemini_with(finish_reason: str, id_: str) -> bytes:
    candidate = {"content": {"parts": [{"text": "[1, 2, 3, 4]"}]}, "finishReason": finish_reason}
    return json.dumps({"responseId": id_, "candidates": [candidate]}).encode()


@pytest.mark.parametrize("provider", ["qwen", "gemini"])
def test_a_200_kb_finish_reason_and_id_are_stored_cut_without_the_key(
    provider: str, tmp_path: Path
) -> None:
    huge = f"{KEY.reveal()} " + "x" * LONG
    body = (_chat_with if provider == "qwen" else _gemini_with)(huge, huge)
    (record, *_) = asyncio.run(_records(provider, _answering(body)))
    assert record.outcome == "answer"
    with Store(tmp_path / "exp.duckdb") as store:
        registration = Registration("c", "p" * 64, provider, "m", 3, "{}")
        store.register(
            [registration],
            [GridRow(configuration="c", condition="base", budget=8, qid="q1", attempts=3)],
        )
        store.write_responses([response_row(record)])
        (row,) = store.repository.query("SELECT finish_reason, response_id FROM responses")[1]
    for text in row:
        assert len(text) <= MAX_FIELD and text.endswith("chars]") and not holds_key(text, KEY)


# -- finding 7: a store an older version wrote is cut as drawn -----------------------------------


@pytest.fixture(scope="module")
def uncut_store(
    tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort, small_root: DataRoot
) -> Path:
    """The overlay tests' store, its answers' finish reasons and ids as an older version kept
    a hostile server's: 200 KB each."""
    store = tmp_path_factory.mktemp("uncut") / "exp.duckdb"
    write_scored_store(store, small_cohort, small_root.images)
    with duckdb.connect(str(store)) as con:
        con.execute(  # what the wire of an older version stored
            "UPDATE responses SET finish_reason = 'length' || repeat('x', ?), "
            "response_id = repeat('y', ?), "
            "error_message = CASE WHEN error_message IS NULL THEN NULL "
            "ELSE repeat('z', ?) END",
            [LONG, LONG, LONG],
        )
    return store


def test_the_html_report_of_uncut_answers_stays_small(
    uncut_store: Path, small_root: DataRoot, tmp_path: Path
) -> None:
    with read_only(uncut_store) as con:
        answers = con.execute("SELECT count(*) FROM responses").fetchone()
    assert answers is not None
    report = write_html_report(uncut_store, tmp_path / "report", images=small_root.images)
    size = sum(p.stat().st_size for p in (tmp_path / "report").rglob("*") if p.is_file())
    assert size < 50_000 * answers[0], f"{size:,} bytes for {answers[0]} answers"
    assert report.question_pages > 0
    pages = "".join(p.read_text() for p in (tmp_path / "report" / "q").glob("*.html"))
    assert "x" * (MAX_FIELD + 1) not in pages and "finish reason: length" in pages


def test_show_draws_an_uncut_answer_with_its_texts_cut(uncut_store: Path) -> None:
    with read_only(uncut_store) as con:
        (qid,) = con.execute("SELECT qid FROM responses LIMIT 1").fetchone() or ("",)
        question = read_question(con, qid)
        answers = read_answers(con, question, Pictures(None))
    assert answers
    for answer in answers:
        assert len(answer.finish_reason or "") <= MAX_FIELD
        assert len(answer.error or "") <= 1024
        assert all(len(p) < 2_000 for p in caption(question, answer))
