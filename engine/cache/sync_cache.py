"""`CompactionCache`: the synchronous face the engine uses during compaction (§5.3 lookup, §5.2
LRU bound). A broken file never breaks compaction: the cache degrades to an always-miss, no-op
store with a `problem` the UI can show, until `reopen()` succeeds."""

from __future__ import annotations

import sqlite3
import time
from _thread import RLock  # threading.RLock's own type, without importing threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from engine.cache.files import (
    CacheFace,
    describe,
    is_transient,
    open_refusal,
    prepare_file,
    warn,
)
from engine.cache.rows import (
    CacheEntry,
    CacheRow,
    CacheStatus,
    decode_entries,
    decode_row,
    decode_rows,
    row_values,
)
from engine.cache.schema import (
    ENTRY_COLS,
    SQL_CLEAR,
    SQL_COUNT,
    SQL_EVICT,
    SQL_HIT,
    SQL_KEEP_NEWEST,
    SQL_PUT,
    SQL_SELECT,
    list_query,
    open_steps,
)
from engine.layout import file_identity
from engine.row_check import BadRow

T = TypeVar("T")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class CompactionCache(CacheFace):
    """Synchronous cache; one connection behind a threading.RLock (§5.4)."""

    def __init__(
        self, path: Path, *, max_rows: int = 1000, clock: Callable[[], int] = _now_ms
    ) -> None:
        if max_rows < 0:
            raise ValueError("max_rows must be >= 0")
        super().__init__(path)
        self.max_rows, self._clock = max_rows, clock
        self.rejected: list[str] = []  # what each bad row read back was (BadRow messages)
        self._lock = RLock()
        self._conn: sqlite3.Connection | None = None
        self.reopen()

    def reopen(self) -> CacheStatus:
        """(Re)open the file, recreating it if deleted; clears `problem` when it works."""
        with self._lock:
            self._disconnect()
            self._closed, self._problem = False, None
            self._identity = None
            try:
                self._identity = file_identity(self.path)  # replacing it lifts the refusal
                foreign = open_refusal(self.path, self._identity is not None)
                if foreign:
                    self._degrade(describe(self.path, foreign))
                    return self.status
                prepare_file(self.path)
                self._identity = file_identity(self.path)
                conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                self._conn, steps, result = conn, open_steps(), None
                try:
                    while True:
                        result = conn.execute(steps.send(result)).fetchall()
                except StopIteration as done:
                    if done.value:
                        self._degrade(describe(self.path, done.value))
            except (sqlite3.Error, OSError) as exc:
                self._degrade(describe(self.path, exc))
            return self.status

    def close(self) -> None:
        with self._lock:
            self._disconnect()
            self._closed = True

    def get(self, cache_key: str) -> CacheRow | None:
        """A hit: the row with use_count and last_read_at_ms bumped (§5.3). A miss: None."""
        # fetchall: a RETURNING statement left unfinished would hold the write lock
        rows = self._run(lambda c: c.execute(SQL_HIT, (self._clock(), cache_key)).fetchall(), [])
        return self._checked(rows[0]) if rows else None

    def peek(self, cache_key: str) -> CacheRow | None:
        """Read without bumping: for previews ("would this hit?")."""
        row = self._run(lambda c: c.execute(SQL_SELECT, (cache_key,)).fetchone(), None)
        # Never evicts: a preview (`compact --dry-run`) writes nothing.
        return self._checked(row, evict=False) if row else None

    def _checked(self, values: Any, *, evict: bool = True) -> CacheRow | None:
        """A bad row is a miss: reported (`rejected`, the log) and evicted, never spliced in."""
        try:
            return decode_row(values)
        except BadRow as bad:
            self.rejected.append(str(bad))
            warn("compaction cache %s: %s; treated as a miss", self.path, bad)
            if evict:
                self._run(lambda c: c.execute(SQL_EVICT, (values[0],)).rowcount, 0)
            return None

    def put(self, row: CacheRow) -> int:
        """Insert or replace, then evict past max_rows in the same transaction (§5.2, §5.3).
        Returns how many rows were evicted."""

        def write(conn: sqlite3.Connection) -> int:
            with _transaction(conn):
                conn.execute(SQL_PUT, row_values(row, self._clock()))
                return conn.execute(SQL_KEEP_NEWEST, (self.max_rows,)).rowcount

        return self._run(write, 0)

    def list_rows(
        self,
        order_by: str = "last_read_at_ms",
        descending: bool = True,
        limit: int | None = None,
        filter_text: str | None = None,
    ) -> list[CacheRow]:
        sql, params = list_query(order_by, descending, limit, filter_text)
        rows = self._run(lambda c: c.execute(sql, params).fetchall(), [])
        return decode_rows(rows, self.path)

    def list_entries(
        self,
        order_by: str = "last_read_at_ms",
        descending: bool = True,
        limit: int | None = None,
    ) -> list[CacheEntry]:
        """list_rows without the summary texts: memory O(rows), not O(their text)."""
        sql, params = list_query(order_by, descending, limit, None, columns=ENTRY_COLS)
        rows = self._run(lambda c: c.execute(sql, params).fetchall(), [])
        return decode_entries(rows, self.path)

    def keys_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Up to `limit` keys starting with `prefix` (the CLI's short keys), texts not read."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._run(
            lambda c: c.execute(
                "SELECT cache_key FROM compaction_cache WHERE cache_key LIKE ? ESCAPE '\\' LIMIT ?",
                (escaped + "%", limit),
            ).fetchall(),
            [],
        )
        return [r[0] for r in rows if isinstance(r[0], str) and r[0].startswith(prefix)]

    def evict(self, cache_key: str) -> bool:
        return self._run(lambda c: c.execute(SQL_EVICT, (cache_key,)).rowcount, 0) > 0

    def trim(self, n: int) -> int:
        """Keep the n most recently read rows; returns how many were evicted."""
        return self._run(lambda c: c.execute(SQL_KEEP_NEWEST, (max(0, n),)).rowcount, 0)

    def clear(self) -> int:
        return self._run(lambda c: c.execute(SQL_CLEAR).rowcount, 0)

    def count(self) -> int:
        return self._run(lambda c: c.execute(SQL_COUNT).fetchone()[0], 0)

    def _run(self, op: Callable[[sqlite3.Connection], T], default: T) -> T:
        with self._lock:
            if not self._closed and self._file_changed():
                self.reopen()
            if self._conn is None or self._problem is not None or self._closed:
                return default
            try:
                return op(self._conn)
            except sqlite3.Error as exc:
                if is_transient(exc):
                    warn("compaction cache %s busy; treated as a miss", self.path)
                else:
                    self._degrade(describe(self.path, exc))
                return default

    def _degrade(self, problem: str) -> None:
        self._set_problem(problem)
        self._disconnect()

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(sqlite3.Error):
                conn.close()


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the original error says more
        raise
    conn.execute("COMMIT")
