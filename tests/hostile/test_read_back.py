"""Data side: rows read back from the store and the cache are untrusted. Each test is an
attack by hand-editing a real SQLite file (as `sqlite3` would) between two engine calls."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.layout import store_path
from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.test_store_processes import check_consistent
from tests.history_builders import QUIET_CONFIG

SESSION = "s"
CONFIG = QUIET_CONFIG


def grown_store(path: Path, turns: int = 20) -> SessionStore:
    store = SessionStore.open(path, create=True)
    store.create_session(SESSION, config=CONFIG)
    manager = store.manager(SESSION)
    script = scripted_session(11, 60)
    for turn in (next(script) for _ in range(turns)):
        for message in turn:
            manager.append(message)
    assert manager.cache is not None
    manager.cache.close()
    return store


# A cache row whose key matches the next span, with a wrong-typed or oversized column.
BAD_CACHE_ROWS = {
    "float_tokens_out": ("span_token_count_out", 12.5),
    "text_tokens_in": ("span_token_count_in", "many"),
    "blob_summary": ("summary_text", b"\x93\x01\x02 not text"),
    "huge_summary": ("summary_text", "word " * 600_000),  # 3 MB
    "blob_model": ("summarization_model", b"\x1b]52;c;x\x07"),
    "negative_count": ("span_message_count", -4),
    "wrong_span_count": ("span_message_count", 1),
}


@pytest.mark.parametrize("attack", BAD_CACHE_ROWS)
async def test_a_malformed_cache_row_is_a_miss_reported_and_evicted(
    tmp_path: Path, attack: str
) -> None:
    store = grown_store(tmp_path)
    manager = store.manager(SESSION)
    assert manager.cache is not None
    preview = manager.preview()
    assert preview is not None
    # A good row first (what a real summary would be), then one column spoiled by hand.
    good = await manager.prepare()
    assert not good.cache_hit and manager.cache.peek(preview.cache_key) is not None
    column, value = BAD_CACHE_ROWS[attack]
    with sqlite3.connect(manager.cache.path) as conn:
        conn.execute(
            f"UPDATE compaction_cache SET {column} = ? WHERE cache_key = ?",
            (value, preview.cache_key),
        )
    prepared = await manager.prepare()
    assert not prepared.cache_hit, "a malformed cache row was used as a hit"
    assert manager.cache.rejected and preview.cache_key[:8] in manager.cache.rejected[-1]
    outcome = manager.commit(prepared)
    assert outcome.status == "compacted"
    assert len(prepared.summary) < 100_000
    # The store stays readable by every reader, and the session under its hard cap.
    check_consistent(store)
    with SessionStore.open(tmp_path) as again:
        view = again.view(SESSION)
        assert sum(view.snapshot.tokens) < CONFIG.compaction_hard_cap_tokens
        assert view.compactions[-1].record.span_token_count_out == prepared.tokens_out
    manager.cache.close()
    store.close()


def test_a_blob_cache_key_does_not_break_listing(tmp_path: Path) -> None:
    from engine.cache import CompactionCache

    cache = CompactionCache(tmp_path / "c.sqlite")
    with sqlite3.connect(cache.path) as conn:
        conn.execute(
            "INSERT INTO compaction_cache VALUES (?, 'x', 'm', 'v1', 1, 1, 1, 1, 1, 1)",
            (b"\xff\xfe blob key",),
        )
    assert cache.list_rows() == []  # skipped, logged: never a TypeError in `cache list`/`show`
    cache.close()


# Hand-edited session columns.
BAD_SESSION_COLUMNS = {
    "spent_text": ("spent_usd", "abc"),
    "spent_nan": ("spent_usd", "NaN"),
    "spent_inf": ("spent_usd", "-Infinity"),
    "spent_blob": ("spent_usd", b"1"),
    "revision_text": ("revision", "3rd"),  # '3' would be stored as 3 (INTEGER affinity)
    "revision_float": ("revision", 2.5),
    "title_blob": ("title", b"\x1b]0;owned\x07"),
    "count_negative": ("message_count", -1),
    "config_blob": ("config", b"\x00\x01"),
}


def edit(path: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA ignore_check_constraints = 1")
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("attack", BAD_SESSION_COLUMNS)
def test_a_hand_edited_session_column_is_a_located_store_error(tmp_path: Path, attack: str) -> None:
    grown_store(tmp_path, turns=2).close()
    column, value = BAD_SESSION_COLUMNS[attack]
    edit(store_path(tmp_path), f"UPDATE sessions SET {column} = ?", value)
    from engine.store import StoreError

    with SessionStore.open(tmp_path) as store:
        for read in (store.list_sessions, lambda: store.session_info(SESSION),
                     lambda: store.view(SESSION), lambda: store.manager(SESSION)):  # fmt: skip
            with pytest.raises(StoreError) as caught:
                read()
            assert f"sessions.{column}" in str(caught.value) or column in str(caught.value)


def test_a_message_whose_id_and_body_disagree_is_refused_not_looped_on(tmp_path: Path) -> None:
    grown_store(tmp_path).close()
    edit(
        store_path(tmp_path),
        "UPDATE messages SET message_id = 'someone-else' WHERE position = 1",
    )
    from engine.store import StoreError

    with SessionStore.open(tmp_path) as store:
        # A resumed manager reads a body when it first needs it: the compaction's span is read
        # before anything is summarized or committed, and the disagreement is named there.
        manager = store.manager(SESSION, cache=None)
        with pytest.raises(StoreError, match="message_id"):
            manager.preview()
        with pytest.raises(StoreError, match="message_id"):  # what `compact` checks first
            store.verify(SESSION)
