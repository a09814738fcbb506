"""The session store's file: its schema (the contract metis dev writes to), migrations, and opening.

docs/store-schema.md describes every table and column for writers outside this package. The
schema is versioned with `PRAGMA user_version`: MIGRATIONS[i] takes version i to i + 1. A store
of a newer version than this code knows is refused, never rewritten (DESIGN "The session store").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.errors import StoreError
from engine.safe_files import sqlite_files_problem

# 'MCTS' (metis compaction store): tells our file from another program's SQLite database.
APPLICATION_ID = 0x4D435453
BUSY_TIMEOUT_MS = 5_000
WAL_SIZE_LIMIT = 8 * 1024 * 1024

_V1 = (
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at_ms INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL,
        stable_prefix_end INTEGER NOT NULL DEFAULT 0 CHECK (stable_prefix_end >= 0),
        watermark INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        total_tokens INTEGER NOT NULL DEFAULT 0,
        spent_usd TEXT NOT NULL DEFAULT '0',
        revision INTEGER NOT NULL DEFAULT 0,
        config TEXT NOT NULL
    )""",
    """CREATE TABLE compactions (
        compaction_id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(session_id),
        revision INTEGER NOT NULL,
        kind TEXT NOT NULL,
        start_position INTEGER NOT NULL,
        span_count INTEGER NOT NULL,
        replacement_count INTEGER NOT NULL,
        record TEXT NOT NULL,
        undone INTEGER NOT NULL DEFAULT 0,
        undone_revision INTEGER,
        created_at_ms INTEGER NOT NULL
    )""",
    "CREATE INDEX compactions_session ON compactions(session_id, compaction_id)",
    """CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(session_id),
        position INTEGER,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        tokens INTEGER NOT NULL CHECK (tokens >= 0),
        tool_use_ids TEXT NOT NULL DEFAULT '[]',
        tool_result_ids TEXT NOT NULL DEFAULT '[]',
        synthetic INTEGER NOT NULL DEFAULT 0,
        message_id TEXT NOT NULL,
        body BLOB NOT NULL,
        compaction_id INTEGER REFERENCES compactions(compaction_id),
        archived_position INTEGER,
        introduced_by INTEGER REFERENCES compactions(compaction_id),
        created_at_ms INTEGER NOT NULL
    )""",
    # The active history, in order; unique so two writers can never put two messages in one place.
    "CREATE UNIQUE INDEX messages_active ON messages(session_id, position) "
    "WHERE position IS NOT NULL",
    "CREATE INDEX messages_session_seq ON messages(session_id, seq)",
    "CREATE INDEX messages_archived ON messages(compaction_id, archived_position) "
    "WHERE compaction_id IS NOT NULL",
    "CREATE INDEX messages_introduced ON messages(introduced_by) WHERE introduced_by IS NOT NULL",
    # The floor is just past the last synthetic message (History.floor): found in O(log n).
    "CREATE INDEX messages_synthetic ON messages(session_id, position) WHERE synthetic = 1",
    """CREATE TABLE events (
        event_id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL
    )""",
    "CREATE INDEX events_session ON events(session_id, event_id)",
)

# v2: `sessions.watermark` was the floor (where the active, compactable history starts), not the
# spec's compaction_watermark; the column now says so.
_V2 = ("ALTER TABLE sessions RENAME COLUMN watermark TO floor",)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2)
SCHEMA_VERSION = len(MIGRATIONS)


def describe_sqlite_error(path: Path, exc: BaseException) -> str:
    reason = str(exc)
    if "not a database" in reason:
        return f"{path} is not a SQLite database (garbage, or another kind of file): move it aside"
    if "malformed" in reason:
        return f"{path} is corrupt or truncated (database disk image is malformed): restore it"
    if "locked" in reason or "busy" in reason:
        return f"{path} is locked by another process for over {BUSY_TIMEOUT_MS} ms: try again"
    return f"{path} cannot be used ({type(exc).__name__}: {reason})"


def connect(path: Path, *, create: bool) -> sqlite3.Connection:
    """Open (and with `create`, make or migrate) the store. Raises StoreError; with create=False
    nothing is written."""
    # engine.safe_files: SQLite writes through links, so none is opened (nor a FIFO, a folder).
    refused = sqlite_files_problem(path, workspace=path.parent.parent)
    if refused is not None:
        raise StoreError(f"session store {path}: {refused}")
    if not path.exists():
        if not create:
            raise StoreError(
                f"{path} does not exist: no metis session store in this workspace "
                "(start metis dev or `metis-compaction-tui simulate` there first)"
            )
        from engine.cache import prepare_file  # (engine.cache imports asyncio: writers only)

        prepare_file(path)  # .metis 0o700, the file 0o600 (-wal/-shm inherit its mode)
    elif path.is_dir():
        raise StoreError(f"{path} is a folder, not a session store file")
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(describe_sqlite_error(path, exc)) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _check_and_migrate(conn, path, create=create)
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable against a killed process
        # Each time the WAL restarts, cut it back to this size: bounded on disk.
        conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
        conn.execute("PRAGMA foreign_keys = ON")
    except StoreError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(describe_sqlite_error(path, exc)) from None
    return conn


def _check_and_migrate(conn: sqlite3.Connection, path: Path, *, create: bool) -> None:
    version = check_version(conn, path)  # garbage fails here, on the first read
    if version == SCHEMA_VERSION:
        return
    if not create:
        what = "has no session store schema yet" if version == 0 else f"is schema version {version}"
        raise StoreError(
            f"{path} {what}; this metis-compaction-tui uses version {SCHEMA_VERSION}: "
            "open it once with metis dev (or `metis-compaction-tui simulate`) to migrate it"
        )
    conn.execute("PRAGMA journal_mode = WAL")  # persistent; must be set outside a transaction
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = check_version(conn, path)  # another process may have migrated meanwhile
        for steps in MIGRATIONS[version:]:
            for statement in steps:
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def check_version(conn: sqlite3.Connection, path: Path) -> int:
    """The store's schema version; StoreError for a newer version or a foreign database."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} is schema version {version}; this metis-compaction-tui knows up to "
            f"{SCHEMA_VERSION}: upgrade it"
        )
    application_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    foreign = application_id not in (0, APPLICATION_ID) or (version == 0 and tables)
    if foreign:
        raise StoreError(
            f"{path} is a SQLite database but not a metis session store "
            f"(tables: {', '.join(tables[:5]) or 'none'}): move it aside"
        )
    return version
