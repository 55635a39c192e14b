"""The outermost matched ``[...]`` groups of an answer, found in numpy passes of bounded size.

A ``]`` with no open ``[`` and a ``[`` never closed are ordinary characters; the groups matched
inside a never-closed ``[`` are then outermost themselves (PROTOCOL §4, decided). Let the
*depth* after a bracket be the count of ``[`` less ``]`` so far, reflected at zero (a ``]`` with
nothing open leaves it at 0: the total less the lowest of 0 and every total so far, Skorokhod's
formula). Then:

- a ``]`` closes a group exactly where the depth falls;
- of the groups open at a point, those never closed are the bottom ones, and there are as many
  as the lowest depth from that point to the end;

so a group that is closed later is open after a character exactly where the depth there is
above the lowest depth from there on. That difference moves by at most one at a bracket (a
``[`` never closed leaves it at 0), so an outermost group opens where it leaves 0 and closes
where it returns, and the group's characters are those where it is above 0 after them or
before them (its ``]``).

That takes two passes over the text, a chunk of ``CHUNK`` offsets at a time:

1. the lowest depth in each chunk: a search at memchr speed, and one cumulative sum where a
   chunk holds both brackets (a count where it holds one kind);
2. with the lowest depth of the chunks after each known, the depths again, the lowest from each
   bracket on, the groups' brackets as two bitmaps, and every group written over in the text
   itself (the parser's own copy, one byte a character).

Where every ``[`` is closed, as in most answers, the lowest depth after each chunk is 0 and
pass 2 alone does (``closed_groups``); the depth at its end tells whether it held.

What is kept between the passes is a few figures per chunk, and the sums a pass fills are
buffers of one chunk, reused (a fresh array of a chunk is fresh pages, which cost more to fault
in than the sums): memory is the bitmaps and about a megabyte and a half, however many
brackets the answer holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CHUNK = 1 << 16  # offsets a pass holds at once; a multiple of 8, as bitmaps are packed
_FIRST_WINDOW = 4096  # offsets of the first window groups are looked for in, from the end
_LAST_WINDOW = 1 << 17  # and of the widest, so that a window's arrays stay small
_BLOT = ord("?")  # no number or separator, and no number may touch it: as a bracket
_NEVER = np.iinfo(np.int64).max  # the lowest depth of a chunk with no bracket


@dataclass(frozen=True, slots=True)
class Groups:
    """The outermost groups of a text.

    Attributes
    ----------
    opens, closes
        Packed bitmaps over the text's offsets: the ``[`` and the ``]`` of each group.
    """

    opens: np.ndarray
    closes: np.ndarray


@dataclass(frozen=True, slots=True)
class _Running:
    """The figures before a chunk: the total of ``[`` less ``]``, and the lowest of 0 and every
    total so far."""

    total: int
    lowest: int

    @property
    def depth(self) -> int:
        return self.total - self.lowest

    def then(self, change: int, least: int) -> _Running:
        """The figures after a stretch whose total is ``change`` and lowest total ``least``
        (both counted from its start)."""
        return _Running(self.total + change, min(self.lowest, self.total + least))


class _Buffers:
    """One chunk's worth of the arrays a pass fills, allocated once a text."""

    def __init__(self) -> None:
        self.depth = np.empty(CHUNK, np.int64)
        self.lowest = np.empty(CHUNK, np.int64)
        self.mask = np.empty(CHUNK, np.bool_)
        self.other = np.empty(CHUNK, np.bool_)
        self.steps = np.empty(CHUNK, np.int8)
        self.open = np.empty(CHUNK + 1, np.bool_)  # before each offset, and after the last
        self.opens = np.empty(CHUNK, np.bool_)
        self.closes = np.empty(CHUNK, np.bool_)
        self.blot = np.empty(CHUNK, np.uint8)
        self.flip = np.empty(CHUNK, np.uint8)


def outermost_groups(text: bytearray) -> Groups:
    """The outermost matched groups of ``text`` (one byte a character), each written over in
    ``text`` with ``?``, its brackets included."""
    if not _may_hold_a_group(text):
        return _no_groups(text)
    codes = np.frombuffer(text, np.uint8)
    buffers = _Buffers()
    lowest_after = _lowest_after(_first_pass(text, codes, buffers))
    groups, _ = _groups_pass(text, codes, buffers, lowest_after)
    return groups


def closed_groups(text: bytearray) -> Groups | None:
    """``outermost_groups`` in one pass, which holds where every ``[`` of ``text`` is closed;
    ``None`` where one is not, ``text`` then written over in part (read it again).

    Where every ``[`` is closed the depth ends at 0, so the lowest depth after any chunk is 0
    (or no bracket follows it, where a cap of 0 changes nothing): the figures pass 1 finds are
    known, and the depth at the end says whether they were."""
    if not _may_hold_a_group(text):
        return _no_groups(text)
    codes = np.frombuffer(text, np.uint8)
    lowest_after = [0] * len(range(0, len(text), CHUNK))
    groups, depth = _groups_pass(text, codes, _Buffers(), lowest_after)
    return groups if depth == 0 else None


def _may_hold_a_group(text: bytearray) -> bool:
    """Whether a ``]`` follows a ``[`` (memchr speed)."""
    first = text.find(b"[")
    return first >= 0 and text.find(b"]", first) >= 0


def _no_groups(text: bytearray) -> Groups:
    none = np.zeros((len(text) + 7) // 8, np.uint8)
    return Groups(none, none)


def groups_from_end(groups: Groups, size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Batches of groups as ``(starts, ends)`` offsets, each batch in order, the batches from
    the end of the text backwards: a window at the end first, each next one four times wider,
    up to ``_LAST_WINDOW``, so that a list at the end costs one small look."""
    high, width = size, _FIRST_WINDOW
    while high > 0:
        low = max(0, high - width) // 8 * 8
        # A window's groups' brackets alternate, "[" first, unless its first group began
        # before it: one set of bits read for both.
        span = slice(low // 8, (high + 7) // 8)
        brackets = _offsets(groups.opens[span] | groups.closes[span], low, high)
        first_closes = brackets.size > 0 and _is_set(groups.closes, int(brackets[0]))
        opens, closes = brackets[first_closes::2], brackets[1 - first_closes :: 2]
        if first_closes:  # its "[" is the last one before the window
            begun = _last_set_bit(groups.opens, low)
            if low - begun <= width:  # read with the others, at most doubling the window
                yield np.concatenate(([begun], opens)), closes + 1
            else:  # perhaps of millions of characters: read on its own
                yield opens, closes[1:] + 1
                yield np.array([begun]), closes[:1] + 1
            high = begun
        else:
            yield opens, closes + 1
            high = low
        width = min(width * 4, _LAST_WINDOW)


def _chunks(text: bytearray) -> Iterator[tuple[int, int]]:
    for start in range(0, len(text), CHUNK):
        yield start, min(start + CHUNK, len(text))


def _totals(codes: np.ndarray, start: int, end: int, buffers: _Buffers) -> np.ndarray:
    """The total of ``[`` less ``]`` after each offset of ``start..end``, counted from 0."""
    piece = codes[start:end]
    size = piece.size
    opens = np.equal(piece, 0x5B, out=buffers.mask[:size])
    closes = np.equal(piece, 0x5D, out=buffers.other[:size])
    steps = buffers.steps[:size]
    np.subtract(opens.view(np.int8), closes.view(np.int8), out=steps)
    return np.cumsum(steps, dtype=np.int64, out=buffers.depth[:size])


def _first_pass(text: bytearray, codes: np.ndarray, buffers: _Buffers) -> list[int]:
    """Pass 1: the lowest depth after a bracket of each chunk (``_NEVER`` where it has
    none)."""
    lowest_in: list[int] = []
    running = _Running(0, 0)
    for start, end in _chunks(text):
        totals = _chunk_totals(text, codes, start, end, buffers)
        if totals is None:
            lowest_in.append(_NEVER)
            continue
        change, least = totals
        lowest_in.append(max(0, least + running.depth))
        running = running.then(change, least)
    return lowest_in


def _chunk_totals(
    text: bytearray, codes: np.ndarray, start: int, end: int, buffers: _Buffers
) -> tuple[int, int] | None:
    """The chunk's total of ``[`` less ``]``, and its lowest total counted from its start:
    after a bracket, or 0 where it is lower (the total before the chunk's first bracket, which
    some depth before it repeats, so that it lowers no depth nor any lowest depth from a point
    on); ``None`` where it holds no bracket."""
    opens, closes = text.find(b"[", start, end) >= 0, text.find(b"]", start, end) >= 0
    if not closes:
        return (text.count(b"[", start, end), 1) if opens else None
    if not opens:
        change = -text.count(b"]", start, end)
        return change, change
    totals = _totals(codes, start, end, buffers)
    return int(totals[-1]), int(totals.min())


def _lowest_after(lowest_in: list[int]) -> list[int]:
    """For each chunk, the lowest depth in the chunks after it."""
    after = [_NEVER] * len(lowest_in)
    for k in range(len(lowest_in) - 2, -1, -1):
        after[k] = min(after[k + 1], lowest_in[k + 1])
    return after


def _groups_pass(
    text: bytearray, codes: np.ndarray, buffers: _Buffers, lowest_after: list[int]
) -> tuple[Groups, int]:
    """Pass 2: the groups' brackets as bitmaps, and every group written over (a chunk once it
    is read); and the depth at the end."""
    opens = np.zeros((len(text) + 7) // 8, np.uint8)
    closes = np.zeros_like(opens)
    running = _Running(0, 0)
    for k, (start, end) in enumerate(_chunks(text)):
        if text.find(b"[", start, end) < 0 and (
            running.depth == 0 or text.find(b"]", start, end) < 0
        ):
            # No bracket, or only "]" with nothing open: no group begins or ends here.
            if lowest_after[k] < running.depth:  # the chunk lies in a group
                codes[start:end] = _BLOT
            unopened = text.count(b"]", start, end) if running.depth == 0 else 0
            running = running.then(-unopened, -unopened)
            continue
        totals = _totals(codes, start, end, buffers)
        then = running.then(int(totals[-1]), int(totals.min()))
        opened, closed, inside = _chunk_groups(totals, running, then, lowest_after[k], buffers)
        bits = slice(start // 8, (end + 7) // 8)
        opens[bits], closes[bits] = np.packbits(opened), np.packbits(closed)
        _blot(codes[start:end], inside, buffers)
        running = then
    return Groups(opens, closes), running.depth


def _chunk_groups(
    depth: np.ndarray, running: _Running, then: _Running, lowest_after: int, buffers: _Buffers
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per offset of a chunk: a ``[`` that opens an outermost group, a ``]`` that closes one,
    and a character in one (``depth`` its totals from 0, made depths here; ``running`` and
    ``then`` the figures before and after the chunk)."""
    size = depth.size
    if then.lowest == running.lowest:  # the total never falls below its lowest before
        depth += running.depth  # reflected at zero: the depth after each offset
    else:
        floor = np.minimum.accumulate(depth, out=buffers.lowest[:size])  # the lowest, from 0
        _cap_falling(floor, running.lowest - running.total)  # or the lowest before
        depth -= floor  # reflected at zero
    is_open = buffers.open[: size + 1]  # a group open before each offset, and after the last
    if lowest_after == 0:  # depths are never below 0: so is the lowest from any offset on
        np.greater(depth, 0, out=is_open[1:])
        is_open[0] = running.depth > 0
    else:
        lowest_on = np.minimum.accumulate(depth[::-1], out=buffers.lowest[:size][::-1])[::-1]
        _cap_rising(lowest_on, lowest_after)
        np.greater(depth, lowest_on, out=is_open[1:])
        is_open[0] = running.depth > lowest_on[0]
    was, now = is_open[:-1], is_open[1:]
    opened = np.greater(now, was, out=buffers.opens[:size])
    closed = np.less(now, was, out=buffers.closes[:size])
    inside = np.logical_or(now, was, out=buffers.mask[:size])
    return opened, closed, inside


def _cap_falling(values: np.ndarray, cap: int) -> None:
    """``values`` (never rising) capped at ``cap`` in place: those above it are a prefix (a
    pass of comparisons and a fill, where ``np.minimum`` on int64 is several times slower)."""
    above = int(np.argmin(values > cap)) if values[-1] <= cap else values.size
    values[:above] = cap


def _cap_rising(values: np.ndarray, cap: int) -> None:
    """``values`` (never falling) capped at ``cap`` in place: those above it are a suffix."""
    if values[-1] > cap:
        values[int(np.argmax(values > cap)) :] = cap


def _blot(piece: np.ndarray, inside: np.ndarray, buffers: _Buffers) -> None:
    """Write ``_BLOT`` over ``piece`` where ``inside``, without a branch per character (a mask
    of scattered groups defeats the branch predictor that ``putmask`` relies on)."""
    size = piece.size
    mask = np.negative(inside.view(np.uint8), out=buffers.blot[:size])  # 0xFF inside, else 0
    flip = np.bitwise_xor(piece, _BLOT, out=buffers.flip[:size])
    flip &= mask
    piece ^= flip  # inside: the byte, then the byte and _BLOT, cancelled to _BLOT


def _offsets(packed: np.ndarray, low: int, high: int) -> np.ndarray:
    """The offsets in ``low..high`` whose bit is set in ``packed``, the bits from ``low`` (a
    multiple of 8) on."""
    bits = np.unpackbits(packed, count=high - low)
    at = np.flatnonzero(bits.view(np.bool_))  # on bools: four times as fast as on bytes
    at += low
    return at


def _is_set(bitmap: np.ndarray, offset: int) -> bool:
    return bool(bitmap[offset // 8] & (0x80 >> offset % 8))  # packed first bit highest


def _last_set_bit(bitmap: np.ndarray, before: int) -> int:
    """The last offset before ``before`` (a multiple of 8) whose bit is set; there is one.
    Looked for a byte at a time, in spans widening from a few bytes (it is most often near)."""
    high, width = before // 8, 64
    while high > 0:
        low = max(0, high - width)
        nonzero = np.flatnonzero(bitmap[low:high])
        if nonzero.size:
            byte = low + int(nonzero[-1])
            lowest = int(bitmap[byte]) & -int(bitmap[byte])  # the last offset's bit
            return 8 * byte + 8 - lowest.bit_length()
        high, width = low, min(4 * width, CHUNK)
    raise AssertionError("a group's ']' without its '['")
