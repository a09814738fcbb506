"""The compaction cache (§5.2–§5.4): one SQLite file per workspace, LRU-bounded by row count.

`CompactionCache` is the synchronous face the engine uses during compaction; `AsyncCompactionCache`
is the aiosqlite face the Textual app browses and evicts through. Both share the SQL below.
A broken cache file never breaks compaction: the cache degrades to an always-miss, no-op store
with a `problem` the UI can show, until `reopen()` succeeds.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from engine.layout import file_identity
from engine.row_check import MAX_SUMMARY_CHARS, BadRow, int_col, text_col

if TYPE_CHECKING:
    import aiosqlite

# asyncio and aiosqlite (with ssl, about 200 modules) are imported by the async face only, when
# it is used: the engine's synchronous users (the CLI, the store) never pay for them.

log = logging.getLogger(__name__)
T = TypeVar("T")


class CacheRow(msgspec.Struct, frozen=True):
    """One §5.2 row; its fields are the table's columns, in order (COLUMNS below).
    A time left at 0 is stamped from the clock by `put`."""

    cache_key: str
    summary_text: str
    summarization_model: str
    summarization_prompt_version: str
    span_message_count: int
    span_token_count_in: int
    span_token_count_out: int
    created_at_ms: int = 0
    last_read_at_ms: int = 0
    use_count: int = 1


# §5.2, verbatim (IF NOT EXISTS added; SQLite stores the text without it).
TABLE_DDL = """CREATE TABLE IF NOT EXISTS compaction_cache (
    cache_key TEXT PRIMARY KEY,
    summary_text TEXT NOT NULL,
    summarization_model TEXT NOT NULL,
    summarization_prompt_version TEXT NOT NULL,
    span_message_count INTEGER NOT NULL,
    span_token_count_in INTEGER NOT NULL,
    span_token_count_out INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    last_read_at_ms INTEGER NOT NULL,
    use_count INTEGER NOT NULL DEFAULT 1
)"""
INDEX_DDL = (
    "CREATE INDEX IF NOT EXISTS idx_compaction_cache_last_read ON compaction_cache(last_read_at_ms)"
)
COLUMNS: tuple[str, ...] = CacheRow.__struct_fields__
TABLE = "compaction_cache"
_COLS = ", ".join(COLUMNS)
# The cache is shared by two processes (metis dev writes, the TUI evicts): WAL plus a busy wait.
OPEN_STATEMENTS = ("PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", TABLE_DDL)
SQL_SELECT = f"SELECT {_COLS} FROM compaction_cache WHERE cache_key = ?"
# §5.3: a hit bumps use_count and last_read_at_ms in the statement that reads it.
SQL_HIT = (
    "UPDATE compaction_cache SET use_count = use_count + 1, last_read_at_ms = ? "
    f"WHERE cache_key = ? RETURNING {_COLS}"
)
SQL_PUT = f"INSERT OR REPLACE INTO compaction_cache ({_COLS}) VALUES ({', '.join('?' * 10)})"
# §5.2: keep the ? most recently read rows; ties go to the older insert (rowid).
SQL_KEEP_NEWEST = (
    "DELETE FROM compaction_cache WHERE cache_key IN (SELECT cache_key FROM compaction_cache "
    "ORDER BY last_read_at_ms, rowid LIMIT max(0, (SELECT count(*) FROM compaction_cache) - ?))"
)
SQL_EVICT = "DELETE FROM compaction_cache WHERE cache_key = ?"
SQL_CLEAR = "DELETE FROM compaction_cache"
SQL_COUNT = "SELECT count(*) FROM compaction_cache"
_SIDE_FILES = ("-wal", "-shm", "-journal")


class CacheStatus(msgspec.Struct, frozen=True):
    state: Literal["ok", "degraded", "closed"]
    path: str
    problem: str | None = None


class CacheUnavailable(Exception):
    """The async face's one error: the cache file cannot be used; `problem` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def decode_row(values: tuple[Any, ...] | sqlite3.Row) -> CacheRow:
    """A row as read back, checked column by column (issue 17: a float token count, a BLOB summary
    or a 3 MB one were spliced in as they were). BadRow names the column and the key."""
    key = values[0]
    text_col(TABLE, "cache_key", key, key, max_chars=256, non_empty=True)  # ours: sha256 hex
    ints = [int_col(TABLE, COLUMNS[i], key, values[i]) for i in range(4, 10)]
    return CacheRow(
        key,
        text_col(
            TABLE, "summary_text", key, values[1], max_chars=MAX_SUMMARY_CHARS, non_empty=True
        ),
        text_col(TABLE, "summarization_model", key, values[2], non_empty=True),
        text_col(TABLE, "summarization_prompt_version", key, values[3]),
        *ints,
    )


def decode_rows(rows: Iterable[Any], path: Path) -> list[CacheRow]:
    """The rows that pass decode_row; each that fails is logged (never its text) and skipped."""
    good = []
    for values in rows:
        try:
            good.append(decode_row(values))
        except BadRow as bad:
            log.warning("compaction cache %s: %s; row skipped", path, bad)
    return good


def row_values(row: CacheRow, now_ms: int) -> tuple[Any, ...]:
    created = row.created_at_ms or now_ms
    return (
        *msgspec.structs.astuple(row)[:7],
        created,
        row.last_read_at_ms or created,
        row.use_count,
    )


class CacheEntry(msgspec.Struct, frozen=True):
    """A row as a listing shows it: every column but the summary text, and the text's length
    (issue 17, finding 13: listing loaded every summary only to count it)."""

    cache_key: str
    summarization_model: str
    summarization_prompt_version: str
    span_message_count: int
    span_token_count_in: int
    span_token_count_out: int
    created_at_ms: int
    last_read_at_ms: int
    use_count: int
    summary_chars: int


_ENTRY_COLS = ", ".join(c for c in COLUMNS if c != "summary_text") + ", length(summary_text)"


def decode_entries(rows: Iterable[Any], path: Path) -> list[CacheEntry]:
    """Like decode_rows, for listing rows (a row that fails is logged and skipped)."""
    good = []
    for values in rows:
        key = values[0]
        try:
            text_col(TABLE, "cache_key", key, key, max_chars=256, non_empty=True)
            ints = [int_col(TABLE, ENTRY_COLUMNS[i], key, values[i]) for i in range(3, 10)]
            good.append(
                CacheEntry(
                    key,
                    text_col(TABLE, "summarization_model", key, values[1], non_empty=True),
                    text_col(TABLE, "summarization_prompt_version", key, values[2]),
                    *ints,
                )
            )
        except BadRow as bad:
            log.warning("compaction cache %s: %s; row skipped", path, bad)
    return good


ENTRY_COLUMNS: tuple[str, ...] = CacheEntry.__struct_fields__


def list_query(
    order_by: str,
    descending: bool,
    limit: int | None,
    filter_text: str | None,
    *,
    columns: str = _COLS,
) -> tuple[str, list[Any]]:
    """SELECT for the cache browser: order_by must be a column (it goes into the SQL text)."""
    if order_by not in COLUMNS:
        raise ValueError(f"order_by must be one of {', '.join(COLUMNS)}")
    sql, params = f"SELECT {columns} FROM compaction_cache", list[Any]()
    if filter_text:
        escaped = filter_text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        like = " OR ".join(
            f"{c} LIKE ? ESCAPE '\\'" for c in ("cache_key", "summary_text", "summarization_model")
        )
        sql += f" WHERE {like}"
        params += [f"%{escaped}%"] * 3
    direction = "DESC" if descending else "ASC"
    sql += f" ORDER BY {order_by} {direction}, cache_key {direction}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(max(0, limit))
    return sql, params


def prepare_file(path: Path) -> None:
    """Create missing folders (0o700) and a missing file (0o600), dropping stale side files."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask
    if not path.exists():
        for suffix in _SIDE_FILES:  # a -wal left from a deleted file must not replay into a new one
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        os.chmod(path, 0o600)


def ownership_problem(path: Path) -> str | None:
    """Whether an existing file may be opened as the cache, decided on a read-only connection
    before anything writes (issue 17, finding 7: another program's database was switched to WAL
    and given a compaction_cache table). Ours: no user_version or application_id set, and no
    table but a §5.2 compaction_cache. An empty file is a new cache."""
    try:
        if path.stat().st_size == 0:
            return None
    except OSError:
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        return describe(path, exc).removeprefix(f"compaction cache {path} ")
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        columns = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({TABLE})"))
    except sqlite3.Error as exc:
        if is_transient(exc):
            return None  # busy: the open itself will wait or degrade
        return describe(path, exc).removeprefix(f"compaction cache {path} ")
    finally:
        conn.close()
    if tables == [TABLE] and columns != COLUMNS and not (version or app_id):
        return "has a compaction_cache table that is not the §5.2 schema: not touched"
    if version or app_id or set(tables) - {TABLE} or (tables and columns != COLUMNS):
        listed = ", ".join(tables[:5]) or "none"
        return (
            f"belongs to another program (user_version {version}, application_id {app_id}, "
            f"tables: {listed}): not touched"
        )
    return None


def open_steps() -> Generator[str, list[Any] | None, str | None]:
    """The open procedure, shared by both faces: yields each statement, is sent its rows, and
    returns what is wrong with the file (None if it is a usable §5.2 cache)."""
    quick_check = (yield "PRAGMA quick_check") or []  # a garbage file fails right here
    for statement in OPEN_STATEMENTS:
        _ = yield statement  # not `yield from`: a tuple iterator cannot be sent rows
    table_info = (yield "PRAGMA table_info(compaction_cache)") or []
    if [r[0] for r in quick_check] != ["ok"]:
        return f"is corrupt (integrity check: {quick_check[0][0] if quick_check else '?'})"
    if tuple(r[1] for r in table_info) != COLUMNS:
        return "has a compaction_cache table that is not the §5.2 schema"
    yield INDEX_DDL  # after the check: on a foreign table it would fail less clearly
    return None


def describe(path: Path, what: str | BaseException) -> str:
    if isinstance(what, BaseException):
        reason = str(what)
        if "not a database" in reason:
            reason = "is not a SQLite database (garbage, or another kind of file)"
        elif "malformed" in reason:
            reason = "is corrupt or truncated (database disk image is malformed)"
        else:
            reason = f"cannot be used ({type(what).__name__}: {reason})"
        what = reason
    fix = "move it elsewhere" if "another program" in what else "fix or delete it"
    return f"compaction cache {path} {what}; compaction continues uncached ({fix})"


def is_transient(exc: BaseException) -> bool:
    """Another process holding the lock past busy_timeout: a miss now, not a broken file."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code in (5, 6)  # BUSY, LOCKED


def cache_backers(
    compactions: Iterable[tuple[str, str, str | None, bool]],
) -> dict[str, list[tuple[str, str]]]:
    """Which sessions a cache row backs: cache key -> [(session id, title)], from (session id,
    title, record cache key, undone) per compaction. An undone compaction backs nothing."""
    backers: dict[str, list[tuple[str, str]]] = {}
    for session_id, title, key, undone in compactions:
        if key and not undone:
            backers.setdefault(key, []).append((session_id, title))
    return backers


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _CacheFace:
    """What both faces share: the file, its identity when opened, and the degraded state."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._identity: tuple[int, int] | None = None
        self._problem: str | None = None
        self._closed = False

    @property
    def degraded(self) -> bool:
        return self._problem is not None

    @property
    def problem(self) -> str | None:
        return self._problem

    @property
    def status(self) -> CacheStatus:
        state = "closed" if self._closed else "degraded" if self._problem else "ok"
        return CacheStatus(state=state, path=str(self.path), problem=self._problem)

    def _file_changed(self) -> bool:
        # Deleted or replaced since the last open (the user fixed a broken file, or cleared the
        # cache by hand): open again. (dev, inode) only, so the other process's writes don't count.
        return file_identity(self.path) != self._identity

    def _set_problem(self, problem: str) -> None:
        log.warning("%s", problem)  # the path and SQLite's message only: never summary text
        self._problem = problem


class CompactionCache(_CacheFace):
    """Synchronous cache; one connection behind a threading.RLock (§5.4)."""

    def __init__(
        self, path: Path, *, max_rows: int = 1000, clock: Callable[[], int] = _now_ms
    ) -> None:
        if max_rows < 0:
            raise ValueError("max_rows must be >= 0")
        super().__init__(path)
        self.max_rows, self._clock = max_rows, clock
        self.rejected: list[str] = []  # what each bad row read back was (BadRow messages)
        self._lock = threading.RLock()
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
                foreign = ownership_problem(self.path) if self._identity else None
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
        # Never evicts: a preview (`compact --dry-run`) writes nothing (issue 17, finding 7).
        return self._checked(row, evict=False) if row else None

    def _checked(self, values: Any, *, evict: bool = True) -> CacheRow | None:
        """A bad row is a miss: reported (`rejected`, the log) and evicted, never spliced in."""
        try:
            return decode_row(values)
        except BadRow as bad:
            self.rejected.append(str(bad))
            log.warning("compaction cache %s: %s; treated as a miss", self.path, bad)
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
        sql, params = list_query(order_by, descending, limit, None, columns=_ENTRY_COLS)
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
                    log.warning("compaction cache %s busy; treated as a miss", self.path)
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


class AsyncCompactionCache(_CacheFace):
    """The Textual app's face (aiosqlite): browse, evict, trim, clear. Opens on first use; every
    failure surfaces as one `CacheUnavailable(problem)`, never a raw sqlite error."""

    def __init__(self, path: Path) -> None:
        import asyncio

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
            foreign = ownership_problem(self.path) if self._identity else None
            if foreign:
                await self._degrade(describe(self.path, foreign))
                return
            prepare_file(self.path)
            self._identity = file_identity(self.path)
            import aiosqlite

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
