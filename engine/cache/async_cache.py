"""`AsyncCompactionCache`: the aiosqlite face the Textual app browses and evicts through, on the
same file and SQL as the synchronous one."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from engine.cache.files import CacheFace, describe, is_transient, open_refusal, prepare_file
from engine.cache.rows import CacheRow, CacheStatus, CacheUnavailable, decode_rows
from engine.cache.schema import (
    SQL_CLEAR,
    SQL_COUNT,
    SQL_EVICT,
    SQL_KEEP_NEWEST,
    SQL_SELECT,
    list_query,
    open_steps,
)
from engine.layout import file_identity

log = logging.getLogger("engine.cache")
T = TypeVar("T")


class AsyncCompactionCache(CacheFace):
    """The Textual app's face (aiosqlite): browse, evict, trim, clear. Opens on first use; every
    failure surfaces as one `CacheUnavailable(problem)`, never a raw sqlite error."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._lock = asyncio.Lock()  # one statement sequence at a time on the one connection
        self._conn: aiosqlite.Connection | None = None
        self._closed = True  # until first use

    async def reopen(self) -> CacheStatus:
        async with self._lock:
            await self._open()
        return self.status

    async def close(self) -> None:
        async with self._lock:
            await self._disconnect()
            self._closed = True

    async def list_rows(
        self,
        order_by: str = "last_read_at_ms",
        descending: bool = True,
        limit: int | None = None,
        filter_text: str | None = None,
    ) -> list[CacheRow]:
        sql, params = list_query(order_by, descending, limit, filter_text)
        rows = await self._run(lambda c: c.execute_fetchall(sql, params))
        return decode_rows(rows, self.path)

    async def get_row(self, cache_key: str) -> CacheRow | None:
        """Read without bumping: looking at a row in the browser is not a cache hit."""
        rows = await self._run(lambda c: c.execute_fetchall(SQL_SELECT, (cache_key,)))
        good = decode_rows(rows, self.path)
        return good[0] if good else None

    async def evict(self, cache_key: str) -> bool:
        return await self._run(lambda c: _rowcount(c, SQL_EVICT, (cache_key,))) > 0

    async def trim(self, n: int) -> int:
        """Keep the n most recently read rows; returns how many were evicted."""
        return await self._run(lambda c: _rowcount(c, SQL_KEEP_NEWEST, (max(0, n),)))

    async def clear(self) -> int:
        return await self._run(lambda c: _rowcount(c, SQL_CLEAR, ()))

    async def count(self) -> int:
        rows = await self._run(lambda c: c.execute_fetchall(SQL_COUNT))
        return int(next(iter(rows))[0])

    async def _run(self, op: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        async with self._lock:
            if self._closed or self._file_changed():
                await self._open()  # first use, or the file was deleted or replaced
            if self._problem is not None or self._conn is None:
                raise CacheUnavailable(self._problem or describe(self.path, "is not open"))
            try:
                return await op(self._conn)
            except sqlite3.Error as exc:
                if is_transient(exc):
                    raise CacheUnavailable(describe(self.path, "is busy; try again")) from None
                await self._degrade(describe(self.path, exc))
                raise CacheUnavailable(self._problem or str(exc)) from None

    async def _open(self) -> None:
        await self._disconnect()
        self._closed, self._problem = False, None
        self._identity = None
        try:
            self._identity = file_identity(self.path)  # replacing it lifts the refusal
            foreign = open_refusal(self.path, self._identity is not None)
            if foreign:
                await self._degrade(describe(self.path, foreign))
                return
            prepare_file(self.path)
            self._identity = file_identity(self.path)
            self._conn = conn = await aiosqlite.connect(self.path, isolation_level=None)
            steps, result = open_steps(), None
            try:
                while True:
                    result = list(await conn.execute_fetchall(steps.send(result)))
            except StopIteration as done:
                if done.value:
                    await self._degrade(describe(self.path, done.value))
        except (sqlite3.Error, OSError) as exc:
            await self._degrade(describe(self.path, exc))

    async def _degrade(self, problem: str) -> None:
        self._set_problem(problem)
        await self._disconnect()

    async def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(sqlite3.Error):
                await conn.close()


async def _rowcount(conn: aiosqlite.Connection, sql: str, params: tuple[Any, ...]) -> int:
    cursor = await conn.execute(sql, params)
    count = cursor.rowcount
    await cursor.close()
    return count
