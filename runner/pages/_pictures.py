"""A page's pictures: each (image, variant) encoded once, at the page's size, and held as one
definition every overlay of that picture uses (RefCOCO asks several questions of one image)."""

from __future__ import annotations

import dataclasses

from runner.overlays._encode import data_url
from runner.overlays._scene import AnswerView, Picture, QuestionView
from runner.overlays._svg import picture_def
from runner.pages._html import slug

QUESTION_SIDE = 480  # pixels on an image's longer side on a question's page
THUMBNAIL_SIDE = 200  # ... in the index's galleries (a thumbnail shows it at about 190)


class PagePictures:
    """The pictures one page draws, each encoded the first time an overlay asks for it.

    Parameters
    ----------
    max_side
        The longer side, in pixels, each image is scaled down to.
    """

    def __init__(self, max_side: int) -> None:
        self.max_side = max_side
        self._ids: dict[tuple[str, str], str | None] = {}
        self._defs: list[str] = []

    def picture_id(self, question: QuestionView, picture: Picture) -> str | None:
        """The id of ``picture``'s definition on this page (``None``: there is no image to
        draw: nothing was sent, the file has a problem, or it could not be decoded)."""
        key = (question.image_sha256, picture.variant)  # questions on one image share it
        if key not in self._ids:
            self._ids[key] = self._define(question, picture)
        return self._ids[key]

    def definitions(self) -> list[str]:
        """Every picture definition made so far, for the page's ``<defs>``."""
        return list(self._defs)

    def shown(self, question: QuestionView, answer: AnswerView) -> tuple[AnswerView, str | None]:
        """``answer`` with the id of its picture; an image that cannot be decoded becomes the
        answer's picture's problem, so that its overlay and caption say so."""
        picture = answer.picture
        picture_id = self.picture_id(question, picture)
        if picture_id is None and picture.blob is not None and picture.problem is None:
            problem = f"{question.image_file}: the image as sent could not be decoded"
            picture = dataclasses.replace(picture, problem=problem)
            answer = dataclasses.replace(answer, picture=picture)
        return answer, picture_id

    def _define(self, question: QuestionView, picture: Picture) -> str | None:
        if picture.blob is None or picture.problem is not None or picture.variant == "none":
            return None
        url = data_url(picture.blob, self.max_side)
        if url is None:
            return None
        picture_id = f"p-{slug(question.image_sha256[:16])}-{picture.variant}"
        self._defs.append(picture_def(picture_id, url, question.width, question.height))
        return picture_id
