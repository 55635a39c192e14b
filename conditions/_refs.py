"""RefCOCO-family ``refs(<splitBy>).p`` files, read without running code.

A refs file is a pickle written by the refer toolkit: a list of dicts (``ref_id``,
``ann_id``, ``image_id``, ``category_id``, ``split``, ``sentences``). ``pickle.load`` on a file
from the internet can run any code, so these files go through an unpickler that resolves no
globals at all: plain lists, dicts, tuples, strings, numbers, booleans and ``None`` are all it
can build.
"""

from __future__ import annotations

import codecs
import io
import itertools
import pickle
import pickletools
import re
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from conditions._errors import DataFileError


class _RefsRecord(BaseModel):
    # Forks of the refer toolkit add fields (``file_name``, ``sent_ids``, ``raw``, ``tokens``);
    # they are ignored. A missing or mistyped field the cohort needs is an error.
    model_config = ConfigDict(extra="ignore", frozen=True, strict=False)


class Sentence(_RefsRecord):
    sent_id: int
    sent: str


class Ref(_RefsRecord):
    """One referring-expression record: an annotation and the sentences that describe it."""

    ref_id: int
    ann_id: int
    image_id: int
    category_id: int
    split: str
    sentences: tuple[Sentence, ...]


_REFS = TypeAdapter(list[Ref])


# Pickle protocols 0-2 spell bytes and sets as calls to these; each only builds plain data.
_PLAIN_CALLABLES: dict[tuple[str, str], Any] = {
    ("_codecs", "encode"): codecs.encode,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,
    ("__builtin__", "frozenset"): frozenset,
}


class _PlainUnpickler(pickle.Unpickler):
    """Admits only plain containers and scalars."""

    def find_class(self, module: str, name: str) -> Any:
        # Every object that could run code (os.system, builtins.eval, a class with __reduce__)
        # reaches the unpickler through this hook; refusing all but plain constructors leaves
        # nothing to run.
        if (module, name) in _PLAIN_CALLABLES:
            return _PLAIN_CALLABLES[(module, name)]
        raise pickle.UnpicklingError(
            f"refuses global {module}.{name}: only plain containers and scalars are admitted"
        )

    def persistent_load(self, pid: Any) -> NoReturn:
        raise pickle.UnpicklingError("refuses persistent ids")


# Python hashes an integer by its value modulo 2**61 - 1, so integers that far apart share one
# hash, and a dict keyed by many of them takes quadratic time to build (a 1.8 MB file took 46 s).
# No id comes near that size. Such integers are spelt with the LONG1, LONG4 (binary) or LONG /
# INT (text) opcodes; the bytes that may begin one are counted first, and only a file with more
# than a few thousand (which then cost no more than a fraction of a second) is walked opcode by
# opcode to refuse the first such integer.
_HASH_MODULUS = 2**61 - 1
_MAYBE_HUGE_INTEGER = re.compile(rb"\x8a[\x08-\xff]|\x8b|[IL]-?[0-9]{19}")
_HARMLESS_COLLISIONS = 4096


def _refuse_colliding_integers(path: Path, data: bytes) -> None:
    first_few = itertools.islice(_MAYBE_HUGE_INTEGER.finditer(data), _HARMLESS_COLLISIONS + 1)
    if sum(1 for _ in first_few) <= _HARMLESS_COLLISIONS:
        return
    found = _first_huge_integer(data)
    if found is not None:
        bits, at = found
        raise DataFileError(
            path,
            f"an integer of {bits} bits at byte {at}: no id is that large, and a dict keyed "
            "by thousands of them takes quadratic time to build; refused before loading "
            "(is this a refs file of the refer toolkit?)",
        )


def _first_huge_integer(data: bytes) -> tuple[int, int] | None:
    """The bit length and offset of the first integer of 61 bits or more, if any."""
    try:
        for _, arg, at in pickletools.genops(data):
            if type(arg) is int and abs(arg) >= _HASH_MODULUS:
                return arg.bit_length(), at or 0  # genops gives every opcode its offset
    except (ValueError, TypeError, UnicodeDecodeError):
        pass  # not a well-formed pickle: the loader says what is wrong with it
    return None


def load_plain_pickle(path: Path | str) -> Any:
    """Unpickle ``path`` admitting only plain containers and scalars.

    Raises
    ------
    DataFileError
        The file is missing, truncated, not a pickle, asks for any global (a class, a
        function), or holds thousands of integers of 61 bits or more: nothing in it is
        executed.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFileError(path, f"cannot read: {exc.strerror}") from None
    _refuse_colliding_integers(path, data)
    try:
        # Python 2 pickles (the published refs files) store text as byte strings; UTF-8 reads
        # them as the text they are.
        return _PlainUnpickler(io.BytesIO(data), encoding="utf-8").load()
    except pickle.UnpicklingError as exc:
        raise DataFileError(path, f"unsafe or malformed pickle: {exc}") from None
    except (EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError) as exc:
        raise DataFileError(path, f"not a readable pickle: {type(exc).__name__}: {exc}") from None


def load_refs(path: Path | str) -> list[Ref]:
    """Read a refs pickle into checked :class:`Ref` records.

    Raises
    ------
    DataFileError
        As :func:`load_plain_pickle`, or a record lacks a field or has one of the wrong type;
        the message names the file, the record and its ``ref_id`` when it has one.
    """
    raw = load_plain_pickle(path)
    try:
        return _REFS.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = first["loc"]
        where = ".".join(str(p) for p in loc)
        if loc and isinstance(loc[0], int) and isinstance(raw, list):
            record = raw[loc[0]]
            if isinstance(record, dict) and "ref_id" in record:
                where = f"ref_id {record['ref_id']!r} (record {where})"
            else:
                where = f"record {where}"
        raise DataFileError(path, f"{where}: {first['msg']}") from None
