"""§5.2–§5.4: the compaction cache on real SQLite files in tmp_path."""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cache import (
    AsyncCompactionCache,
    CacheRow,
    CacheUnavailable,
    CompactionCache,
    is_transient,
)
from engine.layout import cache_path

# §5.2 as the spec prints it (SQLite stores the text without IF NOT EXISTS and the semicolon).
SPEC_TABLE_SQL = """CREATE TABLE compaction_cache (
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
SPEC_INDEX_SQL = "CREATE INDEX idx_compaction_cache_last_read ON compaction_cache(last_read_at_ms)"


class Clock:
    """A deterministic ms clock: each reading is one ms later."""

    def __init__(self, start: int = 1_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now


def row(key: str, summary: str = "summary", model: str = "anthropic:claude-haiku-4-5") -> CacheRow:
    return CacheRow(key, summary, model, "1.0.0", 12, 9_000, 400)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return cache_path(tmp_path)


@pytest.fixture
def cache(path: Path) -> Iterator[CompactionCache]:
    c = CompactionCache(path, max_rows=1000, clock=Clock())
    yield c
    c.close()


def test_schema_is_exactly_the_spec_table_and_index(cache: CompactionCache, path: Path) -> None:
    with sqlite3.connect(path) as conn:
        objects = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_autoindex%'"
        ).fetchall()
        columns = conn.execute("PRAGMA table_info(compaction_cache)").fetchall()
        index_columns = conn.execute("PRAGMA index_info(idx_compaction_cache_last_read)").fetchall()
    assert sorted(objects) == [
        ("index", "idx_compaction_cache_last_read", SPEC_INDEX_SQL),
        ("table", "compaction_cache", SPEC_TABLE_SQL),
    ]
    text, integer = "TEXT", "INTEGER"
    assert [c[1:] for c in columns] == [
        ("cache_key", text, 0, None, 1),
        ("summary_text", text, 1, None, 0),
        ("summarization_model", text, 1, None, 0),
        ("summarization_prompt_version", text, 1, None, 0),
        ("span_message_count", integer, 1, None, 0),
        ("span_token_count_in", integer, 1, None, 0),
        ("span_token_count_out", integer, 1, None, 0),
        ("created_at_ms", integer, 1, None, 0),
        ("last_read_at_ms", integer, 1, None, 0),
        ("use_count", integer, 1, "1", 0),
    ]
    assert [c[2] for c in index_columns] == ["last_read_at_ms"]


def test_file_is_owner_only_and_its_new_folder_too(cache: CompactionCache, path: Path) -> None:
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert cache.status.state == "ok" and cache.problem is None


def test_put_stamps_times_and_get_returns_the_row(cache: CompactionCache) -> None:
    cache.put(row("k1"))
    stored = cache.peek("k1")
    assert stored is not None
    assert stored.created_at_ms == stored.last_read_at_ms > 0 and stored.use_count == 1
    assert cache.get("missing") is None and cache.peek("missing") is None


def test_hit_bumps_use_count_and_last_read(cache: CompactionCache) -> None:
    cache.put(row("k1"))
    before = cache.peek("k1")
    hit = cache.get("k1")
    assert before is not None and hit is not None
    assert hit.use_count == 2 and hit.last_read_at_ms > before.last_read_at_ms
    assert hit.created_at_ms == before.created_at_ms
    assert cache.peek("k1") == hit  # stored, not just returned


def test_peek_does_not_bump(cache: CompactionCache) -> None:
    cache.put(row("k1"))
    first = cache.peek("k1")
    assert cache.peek("k1") == first


def test_lru_eviction_past_max_rows_evicts_the_least_recently_read(path: Path) -> None:
    cache = CompactionCache(path, max_rows=3, clock=Clock())
    for key in ("a", "b", "c"):
        assert cache.put(row(key)) == 0
    cache.get("a")  # a is now the most recently read; b the least
    assert cache.put(row("d")) == 1
    assert {r.cache_key for r in cache.list_rows()} == {"a", "c", "d"}
    cache.get("c")  # now a (read before d was written) is the least recently read
    cache.put(row("e"))
    assert {r.cache_key for r in cache.list_rows()} == {"c", "d", "e"}
    assert cache.count() == 3
    cache.close()


def test_put_replaces_an_existing_key(cache: CompactionCache) -> None:
    cache.put(row("k1", summary="old"))
    cache.put(row("k1", summary="new"))
    assert cache.count() == 1 and cache.peek("k1").summary_text == "new"  # type: ignore[union-attr]


def test_trim_evict_and_clear_return_counts(cache: CompactionCache) -> None:
    for i in range(10):
        cache.put(row(f"k{i}"))
    assert cache.trim(4) == 6
    assert [r.cache_key for r in cache.list_rows()] == ["k9", "k8", "k7", "k6"]
    assert cache.trim(10) == 0
    assert cache.evict("k9") is True and cache.evict("k9") is False
    assert cache.clear() == 3 and cache.count() == 0


def test_list_rows_orders_filters_and_limits(cache: CompactionCache) -> None:
    cache.put(row("k1", summary="edited src/app.py"))
    cache.put(row("k2", summary="ran the tests", model="local:extractive"))
    cache.put(row("k3", summary="100% done_ok"))
    assert [r.cache_key for r in cache.list_rows(order_by="cache_key", descending=False)] == [
        "k1",
        "k2",
        "k3",
    ]
    assert [r.cache_key for r in cache.list_rows(filter_text="APP.PY")] == ["k1"]
    assert [r.cache_key for r in cache.list_rows(filter_text="extractive")] == ["k2"]
    assert [r.cache_key for r in cache.list_rows(filter_text="0%")] == ["k3"]  # % is literal
    assert [r.cache_key for r in cache.list_rows(filter_text="d_t")] == []  # _ is literal
    assert len(cache.list_rows(limit=2)) == 2
    with pytest.raises(ValueError):
        cache.list_rows(order_by="cache_key; DROP TABLE compaction_cache")


def write_garbage(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database\n" * 400)


def test_garbage_file_degrades_without_raising(path: Path) -> None:
    write_garbage(path)
    cache = CompactionCache(path)
    assert cache.degraded and cache.status.state == "degraded"
    assert str(path) in (cache.problem or "") and "not a SQLite database" in (cache.problem or "")
    assert cache.get("k1") is None
    assert cache.put(row("k1")) == 0
    assert cache.peek("k1") is None and cache.count() == 0 and cache.list_rows() == []
    assert path.read_bytes().startswith(b"this is not a database")  # never overwritten


def test_truncated_file_degrades(path: Path) -> None:
    cache = CompactionCache(path)
    for i in range(200):
        cache.put(row(f"k{i}", summary="x" * 2000))
    cache.close()
    data = path.read_bytes()
    for size in (len(data) // 2, 50):
        path.write_bytes(data[:size])
        truncated = CompactionCache(path)
        assert truncated.degraded, size
        assert truncated.get("k1") is None and truncated.put(row("new")) == 0
        truncated.close()


def test_a_failing_statement_degrades_to_an_always_miss_store(cache: CompactionCache) -> None:
    cache.put(row("k1"))

    class Broken:
        def execute(self, *args: Any) -> Any:
            raise sqlite3.DatabaseError("database disk image is malformed")

        def close(self) -> None:
            pass

    cache._conn = Broken()  # type: ignore[assignment]
    assert cache.get("k1") is None
    assert cache.degraded and "corrupt or truncated" in (cache.problem or "")
    assert cache.put(row("k2")) == 0
    assert cache.reopen().state == "ok" and cache.peek("k1") is not None


def test_reopen_after_the_user_deletes_a_garbage_file(path: Path) -> None:
    write_garbage(path)
    cache = CompactionCache(path)
    assert cache.degraded
    path.unlink()
    assert cache.reopen().state == "ok"
    cache.put(row("k1"))
    assert cache.get("k1") is not None
    cache.close()


def test_a_degraded_cache_recovers_by_itself_once_the_file_is_replaced(path: Path) -> None:
    write_garbage(path)
    cache = CompactionCache(path)
    path.unlink()  # metis dev's cache recovers without the app calling reopen()
    cache.put(row("k1"))
    assert not cache.degraded and cache.peek("k1") is not None
    cache.close()


def test_file_deleted_while_open_is_recreated(cache: CompactionCache, path: Path) -> None:
    cache.put(row("k1"))
    path.unlink()
    assert cache.reopen().state == "ok"
    assert path.exists() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert cache.count() == 0
    path.unlink()  # and without reopen(): the next write goes to a new file another reader sees
    cache.put(row("k2"))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT cache_key FROM compaction_cache").fetchall() == [("k2",)]


def test_wrong_schema_degrades(path: Path) -> None:
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE compaction_cache (cache_key TEXT PRIMARY KEY, body TEXT)")
    cache = CompactionCache(path)
    assert cache.degraded and "§5.2" in (cache.problem or "")
    assert cache.get("k") is None


def test_busy_and_locked_are_transient_other_errors_are_not() -> None:
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 5  # type: ignore[attr-defined]
    assert is_transient(busy)
    assert not is_transient(sqlite3.DatabaseError("file is not a database"))


def test_closed_cache_is_a_quiet_no_op(cache: CompactionCache) -> None:
    cache.put(row("k1"))
    cache.close()
    assert cache.status.state == "closed"
    assert cache.get("k1") is None and cache.put(row("k2")) == 0


def test_eight_threads_hammering_one_cache(path: Path) -> None:
    cache = CompactionCache(path, max_rows=50)
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            for _ in range(300):
                key = f"k{rng.randrange(100)}"
                action = rng.random()
                if action < 0.45:
                    cache.put(row(key))
                elif action < 0.9:
                    cache.get(key)
                elif action < 0.95:
                    cache.list_rows(limit=5)
                else:
                    cache.count()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not cache.degraded and cache.count() <= 50
    cache.close()


# --- the async face --------------------------------------------------------------------------


def test_async_face_lists_sorted_and_filtered_evicts_trims_and_clears(path: Path) -> None:
    sync = CompactionCache(path, clock=Clock())
    for i in range(6):
        sync.put(row(f"k{i}", summary=f"summary {i}" + (" pytest" if i % 2 else "")))
    sync.get("k0")  # k0 becomes the most recently read

    async def scenario() -> None:
        cache = AsyncCompactionCache(path)
        try:
            assert await cache.count() == 6
            newest_first = [r.cache_key for r in await cache.list_rows()]
            assert newest_first == ["k0", "k5", "k4", "k3", "k2", "k1"]
            filtered = await cache.list_rows("cache_key", descending=False, filter_text="PYTEST")
            assert [r.cache_key for r in filtered] == ["k1", "k3", "k5"]
            assert len(await cache.list_rows(limit=2)) == 2
            before = await cache.get_row("k0")
            assert before is not None and await cache.get_row("k0") == before  # no bump
            assert await cache.get_row("nope") is None
            assert await cache.evict("k5") is True and await cache.evict("k5") is False
            assert await cache.trim(3) == 2
            assert {r.cache_key for r in await cache.list_rows()} == {"k0", "k4", "k3"}
            assert await cache.clear() == 3 and await cache.count() == 0
            assert cache.status.state == "ok"
        finally:
            await cache.close()

    asyncio.run(scenario())
    assert sync.count() == 0  # the sync face sees the app's evictions
    sync.close()


def test_async_face_on_a_garbage_file_raises_cache_unavailable(path: Path) -> None:
    write_garbage(path)

    async def scenario() -> None:
        cache = AsyncCompactionCache(path)
        with pytest.raises(CacheUnavailable) as caught:
            await cache.list_rows()
        assert str(path) in caught.value.problem and cache.degraded
        with pytest.raises(CacheUnavailable):
            await cache.count()
        path.unlink()
        assert (await cache.reopen()).state == "ok"
        assert await cache.count() == 0
        await cache.close()

    asyncio.run(scenario())
