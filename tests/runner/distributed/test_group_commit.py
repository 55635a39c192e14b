"""GroupCommit: many writers, one write at a time, each released once its row is stored."""

from __future__ import annotations

import asyncio

import pytest

from runner.distributed import GroupCommit


def test_concurrent_rows_gather_into_few_writes_each_written_once() -> None:
    writes: list[list[int]] = []

    async def write(rows: list[int]) -> None:
        await asyncio.sleep(0.01)
        writes.append(rows)

    async def main() -> None:
        commits: GroupCommit[int] = GroupCommit(write, max_rows=64)
        await asyncio.gather(*(commits.put(i) for i in range(200)))

    asyncio.run(main())
    assert sorted(r for group in writes for r in group) == list(range(200))
    assert len(writes) <= 5  # 64 + 64 + 64 + 8, give or take where the first group closes
    assert max(len(b) for b in writes) <= 64


def test_put_returns_only_after_its_row_is_written() -> None:
    written: set[int] = set()

    async def write(rows: list[int]) -> None:
        await asyncio.sleep(0.005)
        written.update(rows)

    async def one(commits: GroupCommit[int], i: int) -> None:
        await commits.put(i)
        assert i in written

    async def main() -> None:
        commits: GroupCommit[int] = GroupCommit(write)
        await asyncio.gather(*(one(commits, i) for i in range(50)))

    asyncio.run(main())


def test_a_failed_write_reaches_the_callers_of_that_group_only() -> None:
    async def write(rows: list[int]) -> None:
        await asyncio.sleep(0)
        if 3 in rows:
            raise OSError("disk full")

    async def main() -> list[BaseException | None]:
        commits: GroupCommit[int] = GroupCommit(write, max_rows=5)
        results = await asyncio.gather(*(commits.put(i) for i in range(10)), return_exceptions=True)
        return [r if isinstance(r, BaseException) else None for r in results]

    results = asyncio.run(main())
    failed = [i for i, r in enumerate(results) if r is not None]
    assert failed == [0, 1, 2, 3, 4]
    with pytest.raises(OSError, match="disk full"):
        raise results[0]  # type: ignore[misc]
