"""The row decoder, as a property: any SQLite value (integer, float incl. NaN and
infinities, text incl. NUL and huge, blob, NULL, the 64-bit extremes) in any column of any table
the engine reads gives a typed value or a clear located error (BadRow, or the store's StoreError
that names table, column and row), never another exception.

Each example takes a real row read from a real store or cache, puts one value into one column
and decodes it. The value goes through SQLite first (`SELECT ?`), so it is what SQLite would hand
back: a NaN comes back as NULL, a big integer as it is stored."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cache import COLUMNS as CACHE_COLUMNS
from engine.cache import CacheRow, CompactionCache, decode_entries, decode_row
from engine.layout import store_path
from engine.row_check import BadRow
from engine.store import StoreError
from engine.store.rows import (
    COMPACTION_COLUMNS,
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    session_info,
    stored_compaction,
    stored_event,
    stored_message,
)
from metis_compaction_tui.cli import main
from tests.hostile.test_read_back import SESSION, grown_store

PROFILE = settings.get_profile("hostile")
_SQLITE = sqlite3.connect(":memory:")

sqlite_values = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, -1, 2**62, 2**62 + 1, 2**63 - 1, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0, 1e308]),
    st.text(max_size=60),
    st.sampled_from(["", "\x00", "NaN", "-Infinity", "1e999", "abc", "3rd", "[]", "{}", "null"]),
    st.binary(max_size=60),
    st.sampled_from([b"", b"\x00", b"\x93\x01", b'{"kind": 3}']),
    st.builds(lambda n: "w" * n, st.integers(2_000_000, 3_000_000)),
    st.builds(lambda n: b"\xff" * n, st.integers(2_000_000, 3_000_000)),
)


def as_sqlite(value: Any) -> Any:
    """The value as SQLite stores and returns it."""
    return _SQLITE.execute("SELECT ?", (value,)).fetchone()[0]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, ...]]:
    """One real row of each table, as each reader selects it."""
    workspace = tmp_path_factory.mktemp("decoder")
    grown_store(workspace).close()
    assert main(["compact", SESSION, str(workspace)]) == 0
    conn = sqlite3.connect(store_path(workspace))
    found = {
        "sessions": conn.execute(f"SELECT {SESSION_COLUMNS} FROM sessions s").fetchone(),
        "messages": conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages").fetchone(),
        "compactions": conn.execute(f"SELECT {COMPACTION_COLUMNS} FROM compactions").fetchone(),
        "events": conn.execute(f"SELECT {EVENT_COLUMNS} FROM events").fetchone(),
    }
    conn.close()
    cache = CompactionCache(workspace / "cache.sqlite")
    cache.put(CacheRow("k" * 64, "a summary", "local:extractive", "1.0.0", 4, 900, 30))
    found["compaction_cache"] = tuple(
        sqlite3.connect(cache.path)
        .execute(f"SELECT {', '.join(CACHE_COLUMNS)} FROM compaction_cache")
        .fetchone()
    )
    cache.close()
    assert all(found.values())
    return found


DECODERS: dict[str, Callable[[tuple[Any, ...]], object]] = {
    "sessions": session_info,
    "messages": lambda row: stored_message(row, SESSION),
    "compactions": stored_compaction,
    "events": stored_event,
    "compaction_cache": decode_row,
}


@pytest.mark.parametrize("table", DECODERS)
def test_the_real_rows_decode(rows: dict[str, tuple[Any, ...]], table: str) -> None:
    DECODERS[table](rows[table])  # the baseline: every failure below is the edited column's


@pytest.mark.parametrize("table", DECODERS)
@settings(PROFILE, max_examples=max(20, PROFILE.max_examples // 4))
@given(data=st.data())
def test_any_value_in_any_column_is_a_typed_value_or_a_located_error(
    rows: dict[str, tuple[Any, ...]], table: str, data: st.DataObject
) -> None:
    row = list(rows[table])
    column = data.draw(st.integers(0, len(row) - 1), label="column")
    row[column] = as_sqlite(data.draw(sqlite_values, label="value"))
    try:
        decoded = DECODERS[table](tuple(row))
    except BadRow as bad:
        assert bad.table == table and bad.column
    except StoreError as error:
        assert str(error).strip() and "\n" not in str(error)
    else:
        assert decoded is not None
    if table == "compaction_cache":  # the listing decoder skips a bad row, never raises
        listing = [v for i, v in enumerate(row) if i != 1] + [len(str(row[1]))]
        assert len(decode_entries([tuple(listing)], Path("c.sqlite"))) <= 1
