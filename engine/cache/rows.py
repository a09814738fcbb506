"""§5.2 rows as the engine holds them: the CacheRow Struct (its fields are the table's columns),
the listing's CacheEntry, the cache's status, and decoding a row read back (untrusted: each
column is checked before it is used)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec

from engine.row_check import MAX_SUMMARY_CHARS, BadRow, int_col, text_col


def _skipped(path: Path, bad: BadRow) -> None:
    """A bad row is logged and skipped; logging is imported only then (a reader's start)."""
    import logging

    logging.getLogger("engine.cache").warning("compaction cache %s: %s; row skipped", path, bad)


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


COLUMNS: tuple[str, ...] = CacheRow.__struct_fields__

TABLE = "compaction_cache"


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
    """A row as read back, checked column by column (a float token count, a BLOB summary
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
            _skipped(path, bad)
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
    (listing loaded every summary only to count it)."""

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
            _skipped(path, bad)
    return good


ENTRY_COLUMNS: tuple[str, ...] = CacheEntry.__struct_fields__


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
