"""The galleries' thumbnails, made while the question pages are written: each answer a gallery
holds is drawn once, however many galleries hold it, captioned with its question's referring
expression (a thumbnail means little without what was asked)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from runner.overlays._scene import AnswerView, QuestionView
from runner.overlays._svg import overlay_svg, question_defs
from runner.pages._captions import caption
from runner.pages._galleries import Gallery
from runner.pages._html import attempt_anchor, page_name, slug
from runner.pages._index import Thumbnails
from runner.pages._pictures import THUMBNAIL_SIDE, PagePictures
from runner.store import AttemptKey


class ThumbnailMaker:
    """Thumbnails of the answers ``galleries`` hold, made question by question (:meth:`add`)
    from the views the question pages are drawn from."""

    def __init__(self, galleries: Sequence[Gallery]) -> None:
        self._wanted: dict[str, set[AttemptKey]] = {}
        for gallery in galleries:
            for item in gallery.items:
                self._wanted.setdefault(item.qid, set()).add(item.key)
        self._pictures = PagePictures(THUMBNAIL_SIDE)
        self._html: list[str] = []
        self._at: dict[AttemptKey, int] = {}
        self._scenes: list[str] = []

    def add(self, question: QuestionView, answers: Sequence[AnswerView]) -> None:
        """The thumbnails of ``question``'s answers that a gallery holds."""
        wanted = self._wanted.get(question.qid)
        if not wanted:
            return
        scene = f"s-{slug(question.qid)}"
        self._scenes.append(question_defs(question, scene, part=False))
        for answer in answers:
            key = answer.key
            if key in wanted and key not in self._at:
                self._at[key] = len(self._html)
                self._html.append(self._thumbnail(question, answer, scene))

    def made(self) -> Thumbnails:
        """Every thumbnail made, and the definitions they use."""
        return Thumbnails(
            tuple(self._html), dict(self._at), (*self._pictures.definitions(), *self._scenes)
        )

    def _thumbnail(self, question: QuestionView, stored: AnswerView, scene: str) -> str:
        answer, picture_id = self._pictures.shown(question, stored)
        svg = overlay_svg(question, answer, thumbnail=True, picture_id=picture_id,
                          scene_id=scene)  # fmt: skip
        anchor = attempt_anchor(answer.configuration, answer.condition, answer.budget,
                                answer.attempt)  # fmt: skip
        return (
            f'<figure><a href="q/{page_name(question.qid)}#{anchor}" '
            f'title="{escape(question.expression)}">{svg}</a>'
            f'<figcaption><q class="expr">{escape(question.expression)}</q>'
            f"{caption(answer, qid=True)}</figcaption></figure>"
        )
