"""`cache list`: listing loaded every summary text only to show its
length. Measured with tracemalloc (Python allocations, not time): listing 60 rows of 200 KB
summaries (12 MB of text) must stay far below the texts' size."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from engine.cache import CacheRow, CompactionCache
from engine.layout import cache_path
from metis_compaction_tui.cli import main

ROWS, CHARS = 60, 200_000


def test_cache_list_does_not_load_the_summary_texts(tmp_path: Path, capsys) -> None:
    cache = CompactionCache(cache_path(tmp_path))
    for index in range(ROWS):
        text = f"summary {index} " + "w" * CHARS
        cache.put(CacheRow(f"{index:02x}" + "0" * 62, text, "local:extractive", "1", 4, 900, 300))
    cache.close()
    assert main(["cache", "list", str(tmp_path)]) == 0  # warm: imports are not the listing
    capsys.readouterr()
    tracemalloc.start()
    try:
        assert main(["cache", "list", "--json", str(tmp_path)]) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    listed = json.loads(capsys.readouterr().out)
    assert listed["count"] == ROWS
    assert all(row["summary_chars"] > CHARS for row in listed["rows"])
    assert "summary_text" not in listed["rows"][0]
    print(f"cache list peak {peak} bytes for {ROWS * CHARS} chars of summaries")
    assert peak < ROWS * CHARS / 10, f"peak {peak} bytes while listing {ROWS * CHARS} chars"
    assert main(["cache", "show", "0", str(tmp_path)]) == 2  # a prefix of several keys
    assert main(["cache", "show", "07", str(tmp_path)]) == 0  # a unique one
