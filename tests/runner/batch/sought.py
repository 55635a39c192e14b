"""A batch looked for by its tag or its file, as OpenAI's and Gemini's find() look."""

from __future__ import annotations

from datetime import UTC, datetime

from runner.batch._api import Sought


def sought(tag: str, input_file: str | None = None) -> Sought:
    """The batch tagged ``tag`` (or made of ``input_file``): the fields only Anthropic's find
    reads are left empty."""
    return Sought(tag, input_file, 0, datetime.now(UTC), frozenset(), frozenset())
