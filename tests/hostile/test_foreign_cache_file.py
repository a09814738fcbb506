"""`.metis/compaction-cache.sqlite` in a folder is another program's SQLite
database. Before: opening it as the cache switched it to WAL and created the cache table in it,
even for `cache list` and `compact --dry-run`. Now its ownership and schema are checked before
the first write, and the file is never touched: bytes and mtime unchanged, no -wal/-shm created.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from engine.layout import cache_path
from metis_compaction_tui.cli import main
from tests.hostile.test_read_back import SESSION, grown_store


def _foreign(path: Path) -> None:
    path.parent.mkdir(exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 7")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount TEXT)")
    conn.execute("INSERT INTO invoices (amount) VALUES ('12.50')")
    conn.commit()
    conn.close()
    os.utime(path, (1_000_000_000, 1_000_000_000))


def _state(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


COMMANDS = {
    "list": ["cache", "list"],
    "list_json": ["cache", "list", "--json"],
    "show": ["cache", "show", "abc"],
    "evict": ["cache", "evict", "abc"],
    "trim": ["cache", "trim", "0", "--yes"],
    "clear": ["cache", "clear", "--yes"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_cache_commands_never_touch_another_programs_database(
    tmp_path: Path, capsys, command: str
) -> None:
    cache = cache_path(tmp_path)
    _foreign(cache)
    before = _state(cache.parent)
    capsys.readouterr()
    assert main([*COMMANDS[command], str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "another program" in err and "Traceback" not in err
    assert _state(cache.parent) == before
    with sqlite3.connect(cache) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_compact_dry_run_writes_nothing_anywhere(tmp_path: Path, capsys) -> None:
    grown_store(tmp_path).close()
    cache = cache_path(tmp_path)
    cache.unlink()
    for side in ("-wal", "-shm"):
        Path(f"{cache}{side}").unlink(missing_ok=True)
    _foreign(cache)
    before = _state(cache.parent)
    assert main(["compact", SESSION, "--dry-run", str(tmp_path)]) == 0
    assert "dry run" in capsys.readouterr().out
    assert _state(cache.parent) == before


def test_a_preview_of_a_malformed_row_does_not_evict_it(tmp_path: Path) -> None:
    """peek (what `compact --dry-run` and the compact-now preview use) reports a bad row as a
    miss but leaves it: only a real compaction's read evicts."""
    from engine.cache import CompactionCache

    cache = CompactionCache(tmp_path / "c.sqlite")
    with sqlite3.connect(cache.path) as conn:
        conn.execute(
            "INSERT INTO compaction_cache VALUES ('k', 'x', 'm', 'v1', 1, 1.5, 1, 1, 1, 1)"
        )
    assert cache.peek("k") is None and cache.rejected
    assert cache.count() == 1
    assert cache.get("k") is None and cache.count() == 0
    cache.close()
