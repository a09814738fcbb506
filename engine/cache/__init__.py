"""The compaction cache (§5.2-§5.4): one SQLite file per workspace, LRU-bounded by row count.

`rows` (the CacheRow Struct, decoding rows read back), `schema` (the table and its SQL), `files`
(creating the file, whether a file is ours to open), `sync_cache` (CompactionCache, what the
engine uses during compaction) and `async_cache` (AsyncCompactionCache, what the app browses
through). The names below load on first use (PEP 562): `from engine.cache import CacheRow`
costs no asyncio or aiosqlite import.
"""

from __future__ import annotations

import importlib
from typing import Any

# module -> the public names it defines
_EXPORTS: dict[str, tuple[str, ...]] = {
    "engine.cache.rows": (
        "COLUMNS",
        "ENTRY_COLUMNS",
        "TABLE",
        "CacheEntry",
        "CacheRow",
        "CacheStatus",
        "CacheUnavailable",
        "cache_backers",
        "decode_entries",
        "decode_row",
        "decode_rows",
        "row_values",
    ),
    "engine.cache.schema": (
        "INDEX_DDL",
        "OPEN_STATEMENTS",
        "SQL_CLEAR",
        "SQL_COUNT",
        "SQL_EVICT",
        "SQL_HIT",
        "SQL_KEEP_NEWEST",
        "SQL_PUT",
        "SQL_SELECT",
        "TABLE_DDL",
        "list_query",
        "open_steps",
    ),
    "engine.cache.files": (
        "describe",
        "is_transient",
        "open_refusal",
        "ownership_problem",
        "prepare_file",
    ),
    "engine.cache.sync_cache": ("CompactionCache",),
    "engine.cache.async_cache": ("AsyncCompactionCache",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
