"""CLI `compact` ignored the session's compaction_cache_max_rows (it opened
the cache with the default 1000), so a session capped at 2 rows grew its cache past the cap."""

from __future__ import annotations

from pathlib import Path

import msgspec

from engine.cache import CacheRow, CompactionCache
from engine.layout import cache_path
from engine.store import SessionStore
from metis_compaction_tui.cli import main
from tests.hostile.test_read_back import CONFIG, SESSION, grown_store


def test_cli_compact_keeps_the_cache_within_the_sessions_max_rows(tmp_path: Path) -> None:
    grown_store(tmp_path).close()
    with SessionStore.open(tmp_path) as store:
        store.update_config(SESSION, msgspec.structs.replace(CONFIG, compaction_cache_max_rows=2))
        cache = CompactionCache(store.cache_path)
    for index in range(5):
        cache.put(CacheRow(f"{index:064x}", "an older summary", "local:extractive", "1", 2, 9, 3))
    cache.close()
    assert main(["compact", SESSION, str(tmp_path)]) == 0
    cache = CompactionCache(cache_path(tmp_path))
    assert cache.count() == 2
    cache.close()
