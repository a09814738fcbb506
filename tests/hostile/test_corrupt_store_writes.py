"""Engine side: undo and compact refuse to write to a corrupt store, and the
exit code says nothing was written. Before: `undo` committed over a compaction whose record could
not be read (then reported it), and `compact` wrote into a file that fails its integrity check
(a damaged page of another session's rows, which the compaction itself never reads).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from engine.layout import store_path
from engine.store import SessionStore
from metis_compaction_tui.cli import main
from tests.history_builders import assistant, user
from tests.hostile.test_read_back import CONFIG, SESSION, edit, grown_store

MARK = "QQcorruptmeQQ"


def _digest(path: Path) -> str:
    with sqlite3.connect(path) as conn:  # the logical content: what a commit would change
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()


def _with_a_compaction(tmp_path: Path) -> None:
    store = grown_store(tmp_path)
    assert main(["compact", SESSION, str(tmp_path)]) == 0
    store.close()


def test_undo_refuses_a_compaction_whose_record_is_unreadable(tmp_path: Path, capsys) -> None:
    _with_a_compaction(tmp_path)
    edit(store_path(tmp_path), "UPDATE compactions SET record = '{\"kind\": 3}'")
    before = _digest(store_path(tmp_path))
    capsys.readouterr()
    assert main(["undo", SESSION, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "compaction" in err and "Traceback" not in err
    assert _digest(store_path(tmp_path)) == before  # nothing written


def test_undo_and_compact_refuse_an_archived_row_they_cannot_read(tmp_path: Path, capsys) -> None:
    _with_a_compaction(tmp_path)
    edit(
        store_path(tmp_path),
        "UPDATE messages SET tokens = 'lots' WHERE seq = "
        "(SELECT min(seq) FROM messages WHERE position IS NULL)",
    )
    before = _digest(store_path(tmp_path))
    assert main(["undo", SESSION, str(tmp_path)]) == 2
    assert main(["compact", SESSION, str(tmp_path)]) in (1, 2)
    assert "tokens" in capsys.readouterr().err
    assert _digest(store_path(tmp_path)) == before


def _damage_a_page_of_another_session(tmp_path: Path) -> None:
    """A leaf page of the messages table holding only another session's rows, its header
    overwritten: the compaction of SESSION never reads it, PRAGMA quick_check does."""
    path = store_path(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    offset = data.find(MARK.encode(), len(data) // 4)
    assert offset > 0
    page = offset // page_size
    start = page * page_size
    data[start : start + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("command", ["compact", "undo"])
def test_a_store_failing_its_integrity_check_is_not_written(
    tmp_path: Path, capsys, command: str
) -> None:
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session("other", config=CONFIG)
        other = store.manager("other", cache=None)
        for index in range(300):
            other.append(user(f"ou{index}", f"{MARK} {index} " + "x" * 200))
            other.append(assistant(f"oa{index}", "ok"))
    _with_a_compaction(tmp_path)
    if command == "compact":
        assert main(["undo", SESSION, str(tmp_path)]) == 0
    _damage_a_page_of_another_session(tmp_path)
    before = store_path(tmp_path).read_bytes()
    capsys.readouterr()
    assert main([command, SESSION, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "integrity" in err or "corrupt" in err
    assert store_path(tmp_path).read_bytes() == before
    wal = store_path(tmp_path).with_name("sessions.sqlite-wal")
    assert not wal.exists() or wal.stat().st_size == 0
