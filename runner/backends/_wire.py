"""What every wire format shares: the reply it decodes, and how bodies and headers are read.

A request body is JSON with one large string, the base64 image. The image is encoded once per
question and variant (:attr:`conditions.ImageBlob.base64`) and spliced into the serialised
JSON as bytes, so no request re-encodes or re-escapes it (base64 needs no JSON escaping).
"""

from __future__ import annotations

import email.utils
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from conditions import Request
from runner.backends._errors import CallError, Transient, Unreadable
from runner.backends._json import read_json
from runner.backends._secrets import ApiKey
from runner.backends._usage import Usage

IMAGE_SLOT = "\x00groundbench-image\x00"
"""Stands for the image in a payload; :func:`splice_json` puts the base64 bytes in its place."""
# json.dumps spells the NULs \u0000. The image part comes before the text in both wire formats'
# payloads, so the first match is the slot even if a prompt held the same characters.
_SLOT_JSON = json.dumps(IMAGE_SLOT)[1:-1]


@dataclass(frozen=True)
class Reply:
    """A completed response: the answer text, apart from any reasoning text."""

    answer: str
    reasoning: str
    finish_reason: str | None
    usage: Usage
    model: str | None = None
    response_id: str | None = None


class WireFormat(Protocol):
    """One wire format: how a request is written and a response or an error is read."""

    def url(self, base_url: str) -> str: ...

    def headers(self, key: ApiKey | None) -> dict[str, str]: ...

    def encode(self, request: Request) -> Body: ...

    def decode(self, body: bytes) -> Reply: ...

    def read(self, value: object) -> Reply: ...

    def classify(self, status: int, headers: Mapping[str, str], body: ErrorBody) -> CallError: ...


class ReplyReader(ABC):
    """How every wire reads a 2xx body: its usage first, then its answer.

    The provider billed the call whatever the body holds, so the usage is read before the
    answer and travels with the error of an answer that cannot be read (:class:`Unreadable`):
    an empty ``choices``, a null content or a broken part still counts what it billed. A wire
    writes :meth:`usage` and :meth:`reply`; ``what`` names its body in messages.
    """

    what: ClassVar[str]

    @abstractmethod
    def usage(self, doc: Mapping[str, Any]) -> Usage:
        """The tokens ``doc`` reports, each a count or unknown (``runner.backends._usage``)."""

    @abstractmethod
    def reply(self, doc: Mapping[str, Any], usage: Usage) -> Reply:
        """The answer in ``doc``; :class:`Transient` where it holds none to read."""

    def decode(self, body: bytes) -> Reply:
        """A response body as it came.

        Raises
        ------
        Unreadable
            No answer can be read from it (with its usage, unknown where the body is no JSON).
        """
        try:
            value = read_json(body)
        except ValueError as exc:  # UnicodeDecodeError and TooDeep are ValueErrors
            message = f"malformed {self.what} body ({len(body)} bytes): {exc}"
            raise Unreadable(message) from None
        return self.read(value)

    def read(self, value: object) -> Reply:
        """A response body already parsed (a batch result line's), read as :meth:`decode`."""
        if not isinstance(value, dict):
            message = f"malformed {self.what} body: a JSON {type(value).__name__}, not an object"
            raise Unreadable(message)
        usage = self.usage(value)
        try:
            return self.reply(value, usage)
        except CallError as exc:
            raise Unreadable(exc.message, usage=usage) from None
        except Exception as exc:  # a body no rule foresaw: this call's error, not the run's
            message = f"unreadable {self.what} ({type(exc).__name__}: {exc})"
            raise Unreadable(message, usage=usage) from None


@dataclass(frozen=True)
class Body:
    """A request body in pieces: the JSON around the image, and the image's bytes.

    Sent piece by piece, a 200 KB image is never copied into a joined body (on Python 3.11
    aiohttp would copy it once more to put the headers in front). ``bytes(body)`` joins it,
    for tests and logs.
    """

    parts: tuple[bytes, ...]

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)


def splice_json(payload: Mapping[str, Any], image: bytes | None) -> Body:
    """``payload`` as compact JSON, with ``image`` in place of the string :data:`IMAGE_SLOT`."""
    text = json.dumps(payload, separators=(",", ":"))
    if image is None:
        return Body((text.encode(),))
    head, tail = text.split(_SLOT_JSON, 1)
    return Body((head.encode(), image, tail.encode()))


def load_json(body: bytes, what: str) -> dict[str, Any]:
    """A JSON object from a response body.

    Raises
    ------
    Transient
        The body is not JSON, is cut short, nests deeper than ``MAX_JSON_DEPTH``, or is not
        an object: the server may answer properly next time.
    """
    try:
        value = read_json(body)
    except ValueError as exc:  # UnicodeDecodeError and TooDeep are ValueErrors
        raise Transient(f"malformed {what} body ({len(body)} bytes): {exc}") from None
    return json_object(value, what)


def json_object(value: object, what: str) -> dict[str, Any]:
    """``value``, a body already parsed, if it is a JSON object.

    Raises
    ------
    Transient
        It is not: the server may answer properly next time.
    """
    if not isinstance(value, dict):
        raise Transient(f"malformed {what} body: a JSON {type(value).__name__}, not an object")
    return value


SNIPPET = 200  # characters of an error body quoted where its JSON names no message


@dataclass(frozen=True)
class ErrorBody:
    """An error response's body, parsed once, as every wire's classifier takes it: its JSON
    object (``{}`` when there is none to read) and its first characters, quoted where the
    object names no message.

    >>> ErrorBody.read(b"<html>Bad Gateway</html>")
    ErrorBody(doc={}, text='<html>Bad Gateway</html>')
    """

    doc: Mapping[str, Any]
    text: str = ""

    @classmethod
    def read(cls, body: bytes) -> ErrorBody:
        """The body of an HTTP response, as it came."""
        return cls(error_json(body), body[:SNIPPET].decode("utf-8", "replace").strip())

    @classmethod
    def parsed(cls, value: object) -> ErrorBody:
        """A body a batch result line holds, parsed with the line: its text (quoted only
        where it names no message) is its JSON, as a response would have sent it."""
        doc = value if isinstance(value, dict) else {}
        return cls(doc, json.dumps(value)[:SNIPPET].strip())

    @property
    def error(self) -> Mapping[str, Any]:
        """The body's ``error`` object (both wires put it there), or ``{}``."""
        return field_dict(self.doc, "error")


def error_json(body: bytes) -> dict[str, Any]:
    """The JSON object of an error body, or ``{}`` when there is none to read (no JSON, or
    nested deeper than ``MAX_JSON_DEPTH``)."""
    try:
        value = read_json(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def retry_after(headers: Mapping[str, str], now_epoch: float | None = None) -> float | None:
    """The server's wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date).

    >>> retry_after({"retry-after-ms": "1500"}), retry_after({"Retry-After": "3"})
    (1.5, 3.0)
    """
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        value = _seconds(lower["retry-after-ms"])
        if value is not None:
            return value / 1000.0
    if "retry-after" in lower:
        value = _seconds(lower["retry-after"])
        if value is not None:
            return value
        try:
            when = email.utils.parsedate_to_datetime(lower["retry-after"]).timestamp()
        except (TypeError, ValueError):
            return None
        return max(0.0, when - (time.time() if now_epoch is None else now_epoch))
    return None


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and value == value and value != float("inf") else None


def field_dict(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``doc[name]`` when it is a JSON object, else ``{}`` (a provider may omit or null it)."""
    value = doc.get(name)
    return value if isinstance(value, dict) else {}


def as_text(value: object) -> str | None:
    """A non-empty string (an id, a model, a finish reason), or ``None`` for anything else."""
    return value if isinstance(value, str) and value else None
