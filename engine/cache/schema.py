"""§5.2 schema and the SQL both cache faces run: the table, its index, the statements, the
cache browser's listing query, and the open procedure that checks a file before it is used."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from engine.cache.rows import COLUMNS

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

ENTRY_COLS = ", ".join(c for c in COLUMNS if c != "summary_text") + ", length(summary_text)"


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
