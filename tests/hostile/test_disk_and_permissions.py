"""The disk filling up, a read-only store, and the modes files are created with.

Disk full two ways: `PRAGMA max_page_count` on the writer's connection (anywhere), and a real
tiny tmpfs filled with ballast (Linux, root). Read-only: a tmpfs remounted read-only under an
open store, and a chmod'ed store for a non-root user. Each must give one clear StoreError, write
nothing partial (the store reopens, validates, and holds exactly what committed before) and leave
the in-memory session equal to the store.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from engine import (
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.layout import CACHE_FILE, STORE_FILE, metis_dir
from engine.manager import SessionManager
from engine.store import SessionStore, StoreError
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.test_store_processes import check_consistent
from tests.history_builders import QUIET_CONFIG
from tests.hostile.conftest import can_mount, remount, tmpfs

SESSION = "s"
CONFIG = QUIET_CONFIG


def turn(number: int, size: int) -> list[Message]:
    """One tool cycle: ask, call, result, answer (a valid boundary after each)."""
    call = f"call{number}"
    return [
        Message(f"u{number}", Role.USER, (TextContentBlock(f"ask {number} " + "u" * size),)),
        Message(
            f"c{number}",
            Role.ASSISTANT,
            (TextContentBlock("running"), ToolUseContentBlock(call, "bash", {"cmd": "ls"})),
        ),
        Message(f"r{number}", Role.USER, (ToolResultContentBlock(call, "r" * size),)),
        Message(f"a{number}", Role.ASSISTANT, (TextContentBlock(f"done {number}"),)),
    ]


def new_store(workspace: Path, turns: int = 6) -> tuple[SessionStore, SessionManager]:
    store = SessionStore.open(workspace, create=True)
    store.create_session(SESSION, config=CONFIG)
    manager = store.manager(SESSION, cache=None)
    for number in range(turns):
        for message in turn(number, 200):
            manager.append(message)
    return store, manager


def assert_unharmed(workspace: Path, manager: SessionManager, ids: list[str]) -> None:
    """Reopened fresh: valid, exactly the committed messages, and the session agrees with it."""
    with SessionStore.open(workspace) as store:
        check_consistent(store)
        snapshot = store.snapshot(SESSION)
        assert [m.id for m in snapshot.messages] == ids
        assert [m.id for m in manager.messages] == ids, "the session ran ahead of its store"
        assert snapshot.revision == manager.revision


def fill_until_refused(manager: SessionManager, start: int) -> StoreError:
    for number in range(start, start + 10_000):
        for message in turn(number, 4_000):
            try:
                manager.append(message)
            except StoreError as error:
                return error
    raise AssertionError("the store never filled up")


def test_max_page_count_full_gives_a_clear_error_and_no_partial_write(tmp_path: Path) -> None:
    store, manager = new_store(tmp_path)
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages + 4}")
    error = fill_until_refused(manager, 100)
    assert "full" in str(error) and str(store.path) in str(error)
    committed = [m.id for m in manager.messages]
    # A compaction on the full store is refused whole as well.
    prepared_error: StoreError | None = None
    try:
        import asyncio

        manager.commit(asyncio.run(manager.prepare()))
    except StoreError as refused:
        prepared_error = refused
    store.close()
    if prepared_error is not None:
        assert "full" in str(prepared_error)
    else:  # it fitted: then it committed whole
        committed = [m.id for m in manager.messages]
    assert_unharmed(tmp_path, manager, committed)


@pytest.mark.skipif(not can_mount(), reason="needs root on Linux to mount a tmpfs")
async def test_a_really_full_disk_refuses_appends_and_compactions_whole(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "2m") as disk:
        store, manager = new_store(disk, turns=20)
        ballast = disk / "ballast"
        fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
        try:  # fill what is left, to the last block
            while True:
                os.write(fd, b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        errors = [fill_until_refused(manager, 100)]
        committed = [m.id for m in manager.messages]
        try:
            manager.commit(await manager.prepare())
        except StoreError as error:
            errors.append(error)
        else:
            committed = [m.id for m in manager.messages]
        for error in errors:
            assert "full" in str(error), error
        store.close()
        ballast.unlink()  # space again: the store opens and holds what committed, whole
        assert_unharmed(disk, manager, committed)


@pytest.mark.skipif(not can_mount(), reason="needs root on Linux to mount a tmpfs")
async def test_a_store_on_a_read_only_disk_refuses_writes_clearly(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "8m") as disk:
        store, manager = new_store(disk, turns=10)
        committed = [m.id for m in manager.messages]
        path = store.path
        store.close()
        remount(disk, "ro")
        try:
            try:
                reader = SessionStore.open(disk)
            except StoreError as error:  # refused on opening: one line naming the file
                assert str(path) in str(error), error
            else:
                with reader:
                    manager = reader.manager(SESSION, cache=None)
                    with pytest.raises(StoreError) as appended:
                        manager.append(turn(99, 10)[0])
                    with pytest.raises(StoreError) as compacted:
                        manager.commit(await manager.prepare())
                    for error in (appended.value, compacted.value):
                        text = str(error)
                        assert "readonly" in text or "read-only" in text, text
                        assert str(path) in text
                    assert [m.id for m in manager.messages] == committed
        finally:
            remount(disk, "rw")
        assert_unharmed(disk, manager, committed)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes")
def test_a_chmod_read_only_store_refuses_writes_clearly(tmp_path: Path) -> None:
    store, manager = new_store(tmp_path)
    store.close()
    committed = [m.id for m in manager.messages]
    metis = metis_dir(tmp_path)
    for path in metis.iterdir():
        path.chmod(0o400)
    metis.chmod(0o500)
    try:
        try:
            store = SessionStore.open(tmp_path)
        except StoreError as error:
            assert str(store.path) in str(error)
        else:
            manager = store.manager(SESSION, cache=None)
            with pytest.raises(StoreError):
                manager.append(turn(99, 10)[0])
            store.close()
    finally:
        metis.chmod(0o700)
        for path in metis.iterdir():
            path.chmod(0o600)
    assert_unharmed(tmp_path, manager, committed)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_and_cache_files_are_created_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a common umask that would leave them world-readable
    try:
        store = SessionStore.open(tmp_path, create=True)
        store.create_session(SESSION, config=CONFIG)
        manager = store.manager(SESSION)  # opens (creates) the compaction cache beside it
        for message in (m for t in scripted_session(3, 12) for m in t):
            manager.append(message)
        import asyncio

        manager.commit(asyncio.run(manager.prepare()))  # a cache write: its -wal exists
        metis = metis_dir(tmp_path)
        files = sorted(p for p in metis.iterdir() if p.is_file())
        names = {p.name for p in files}
        assert {STORE_FILE, CACHE_FILE} <= names
        assert mode(metis) == 0o700
        for path in files:
            assert mode(path) == 0o600, f"{path.name} is {oct(mode(path))}"
        assert manager.cache is not None
        manager.cache.close()
        store.close()
    finally:
        os.umask(old)
