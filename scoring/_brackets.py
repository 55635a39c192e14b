"""The outermost matched ``[...]`` groups of an answer, found in numpy passes of bounded size.

A ``]`` with no open ``[`` and a ``[`` never closed are ordinary characters; the groups matched
inside a never-closed ``[`` are then outermost themselves (PROTOCOL §4, decided). Pairing needs
what comes before each bracket (is anything open?) and what comes after it (does the depth ever
fall below it?), so it takes three passes over the text, each a chunk of ``CHUNK`` offsets at a
time with the running figures carried from chunk to chunk:

1. forward: a ``]`` closes something when the depth before it, a running sum reflected at zero
   (Skorokhod's formula), is above zero;
2. backward: a ``[`` is closed when the level after it (counting only brackets that pair) later
   falls below its own;
3. forward: the brackets that pair and sit at level 1 are the outermost groups' own; each group
   is written over in a copy of the text, and its brackets are marked in two bitmaps.

What is kept between passes is a bit per bracket and a bit per offset, so memory is the text,
its copy, and a few megabytes however many brackets the answer holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CHUNK = 1 << 18  # offsets a pass holds at once; a multiple of 8, as bitmaps are packed
_FIRST_WINDOW = 4096  # offsets of the first window groups are looked for in, from the end
_BLOT = ord("?")  # no number or separator, and no number may touch it: as a bracket


@dataclass(frozen=True, slots=True)
class Groups:
    """The outermost groups of a text.

    Attributes
    ----------
    opens, closes
        Packed bitmaps over the text's offsets: the ``[`` and the ``]`` of each group.
    blotted
        The text with every group, brackets included, written over with ``?``.
    """

    opens: np.ndarray
    closes: np.ndarray
    blotted: bytes | bytearray


def outermost_groups(text: bytes) -> Groups:
    """The outermost matched groups of ``text`` (one byte a character)."""
    codes = np.frombuffer(text, np.uint8)
    first = text.find(b"[")
    if first < 0 or text.find(b"]", first) < 0:  # no "]" after a "[", no group (memchr speed)
        none = np.zeros((len(text) + 7) // 8, np.uint8)
        return Groups(none, none, text)
    starts = range(0, codes.size, CHUNK)
    closing, level_before = _closing_brackets(text, codes, starts)
    paired = _closed_openings(text, codes, starts, closing, level_before)
    return _outermost(text, codes, starts, paired)


def groups_from_end(groups: Groups, size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Batches of groups as ``(starts, ends)`` offsets, each batch in order, the batches from
    the end of the text backwards: a window at the end first, each next one four times wider,
    up to a chunk, so that a list at the end costs one small look."""
    high, width = size, _FIRST_WINDOW
    while high > 0:
        low = max(0, high - width) // 8 * 8
        opens = _set_bits(groups.opens, low, high)
        closes = _set_bits(groups.closes, low, high)
        if closes.size and (opens.size == 0 or closes[0] < opens[0]):
            # The first group of the window began before it: its "[" is the last one before.
            yield opens, closes[1:] + 1
            begun = _last_set_bit(groups.opens, low)
            yield np.array([begun]), closes[:1] + 1
            high = begun
        else:
            yield opens, closes + 1
            high = low
        width = min(width * 4, CHUNK)


def _steps(text: bytes, codes: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
    """The offsets of the brackets in the chunk at ``start`` (from ``start``), and +1 for each
    ``[``, -1 for each ``]``."""
    end = min(start + CHUNK, len(text))
    if text.find(b"[", start, end) < 0 and text.find(b"]", start, end) < 0:
        return _NONE, _NO_STEPS  # found at memchr speed: most chunks of most answers
    chunk = codes[start:end]
    at = np.flatnonzero((chunk == 0x5B) | (chunk == 0x5D))
    step = chunk[at].view(np.int8) - np.int8(0x5C)  # "[" -1, "]" +1: the other way round
    np.negative(step, out=step)
    return at, step


_NONE = np.empty(0, np.int64)
_NO_STEPS = np.empty(0, np.int8)


def _closing_brackets(
    text: bytes, codes: np.ndarray, starts: range
) -> tuple[list[np.ndarray], list[int]]:
    """Pass 1: per chunk, a packed bit per bracket (a ``[``, or a ``]`` that closes one), and
    the level, over those brackets, before each chunk."""
    closing: list[np.ndarray] = []
    level_before: list[int] = []
    total = lowest = depth = level = 0
    for start in starts:
        _, step = _steps(text, codes, start)
        level_before.append(level)
        if step.size == 0:
            closing.append(np.empty(0, np.uint8))  # no bracket, no bit
            continue
        running = np.cumsum(step, dtype=np.int64) + total
        floor = np.minimum(np.minimum.accumulate(running), lowest)
        depths = running - floor
        before = np.empty_like(depths)
        before[0], before[1:] = depth, depths[:-1]
        kept = (step == 1) | (before > 0)
        total, lowest, depth = int(running[-1]), int(floor[-1]), int(depths[-1])
        level += int(step[kept].sum(dtype=np.int64))
        closing.append(np.packbits(kept))
    return closing, level_before


def _closed_openings(
    text: bytes,
    codes: np.ndarray,
    starts: range,
    closing: list[np.ndarray],
    level_before: list[int],
) -> list[np.ndarray]:
    """Pass 2, backwards: per chunk, a packed bit per bracket that pairs."""
    paired: list[np.ndarray] = [np.empty(0, np.uint8)] * len(starts)
    lowest_later = np.iinfo(np.int64).max
    for k in reversed(range(len(starts))):
        _, step = _steps(text, codes, starts[k])
        kept = np.unpackbits(closing[k], count=step.size).view(np.bool_)
        if step.size:
            level = np.cumsum(np.where(kept, step, np.int8(0)), dtype=np.int64)
            level += level_before[k]
            lowest_after = np.empty_like(level)
            lowest_after[-1] = lowest_later
            np.minimum.accumulate(level[:0:-1], out=lowest_after[-2::-1])
            np.minimum(lowest_after, lowest_later, out=lowest_after)
            kept &= (step == -1) | (lowest_after < level)
            lowest_later = min(lowest_later, int(level.min()))
        paired[k] = np.packbits(kept)
    return paired


def _outermost(text: bytes, codes: np.ndarray, starts: range, paired: list[np.ndarray]) -> Groups:
    """Pass 3: the brackets that pair at level 1, as bitmaps, and the text written over."""
    blotted = bytearray(text)
    written = np.frombuffer(blotted, np.uint8)
    opens: list[np.ndarray] = []
    closes: list[np.ndarray] = []
    level = 0
    for k, start in enumerate(starts):
        chunk = codes[start : start + CHUNK]
        at, step = _steps(text, codes, start)
        kept = np.unpackbits(paired[k], count=step.size).view(np.bool_)
        at, step = at[kept], step[kept]
        levels = np.cumsum(step, dtype=np.int64) + level
        first = at[(step == 1) & (levels == 1)]
        last = at[(step == -1) & (levels == 0)]
        if level > 0 or first.size:
            # Inside a group from its "[" to its "]"; one may end where the next begins, so
            # the edges are added, not set.
            edges = np.zeros(chunk.size + 1, np.int8)
            edges[0] = level > 0
            edges[first] += 1
            edges[last + 1] -= 1
            inside = np.cumsum(edges[:-1], dtype=np.int8).view(np.bool_)
            np.copyto(written[start : start + chunk.size], _BLOT, where=inside)
        opens.append(_bitmap(first, chunk.size))
        closes.append(_bitmap(last, chunk.size))
        if levels.size:
            level = int(levels[-1])
    none = [np.empty(0, np.uint8)]  # an empty text has no chunk
    return Groups(np.concatenate(opens or none), np.concatenate(closes or none), blotted)


def _bitmap(at: np.ndarray, size: int) -> np.ndarray:
    bits = np.zeros(size, np.bool_)
    bits[at] = True
    return np.packbits(bits)


def _set_bits(bitmap: np.ndarray, low: int, high: int) -> np.ndarray:
    """The offsets in ``low..high`` (``low`` a multiple of 8) whose bit is set."""
    bits = np.unpackbits(bitmap[low // 8 : (high + 7) // 8])
    at = np.flatnonzero(bits[: high - low]) + low
    return at


def _last_set_bit(bitmap: np.ndarray, before: int) -> int:
    """The last offset before ``before`` (a multiple of 8) whose bit is set; there is one."""
    high = before
    while high > 0:
        low = max(0, high - CHUNK)
        at = _set_bits(bitmap, low, high)
        if at.size:
            return int(at[-1])
        high = low
    raise AssertionError("a group's ']' without its '['")
