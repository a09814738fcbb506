"""The compaction cache file deleted, truncated or replaced by garbage while a session runs (in
the engine) and while the app runs (its cache browser): compaction goes on uncached, and the
cache's status (CompactionCache.status / the browser's problem line) says so."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.layout import cache_path
from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from metis_compaction_tui.screens.cache_browser import CacheBrowserScreen
from tests.app.app_helpers import SIZE, loaded, make_app, wait_until
from tests.engine.store.test_store_processes import check_consistent
from tests.history_builders import QUIET_CONFIG

SESSION = "s"
CONFIG = QUIET_CONFIG
GARBAGE = b"this is not a SQLite database\n" * 200


def delete(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def truncate(path: Path) -> None:
    os.truncate(path, 100)  # in place: the same inode, cut short mid-header


def truncate_to_zero(path: Path) -> None:
    os.truncate(path, 0)


def overwrite(path: Path) -> None:
    with path.open("r+b") as out:  # in place: the open connection's own file turns to garbage
        out.write(GARBAGE)


def replace(path: Path) -> None:
    fresh = path.with_name("garbage")
    fresh.write_bytes(GARBAGE)
    os.replace(fresh, path)  # a new inode at the name


SABOTAGE: dict[str, Callable[[Path], None]] = {
    "deleted": delete,
    "truncated": truncate,
    "truncated_to_zero": truncate_to_zero,
    "overwritten": overwrite,
    "replaced": replace,
}


@pytest.mark.parametrize("how", SABOTAGE)
async def test_a_sabotaged_cache_mid_session_leaves_compaction_going_uncached(
    tmp_path: Path, how: str
) -> None:
    store = SessionStore.open(tmp_path, create=True)
    store.create_session(SESSION, config=CONFIG)
    manager = store.manager(SESSION)  # the real cache beside the store
    turns = scripted_session(11, 60)
    for turn in (next(turns) for _ in range(20)):
        for message in turn:
            manager.append(message)
    first = manager.commit(await manager.prepare())
    assert first.status == "compacted" and manager.cache is not None
    assert manager.cache.count() == 1 and manager.cache.status.state == "ok"

    SABOTAGE[how](manager.cache.path)
    for turn in (next(turns) for _ in range(20)):  # the session goes on
        for message in turn:
            manager.append(message)
    prepared = await manager.prepare()
    outcome = manager.commit(prepared)
    assert outcome.status == "compacted"
    assert not prepared.cache_hit
    status = manager.cache.status
    if status.state == "degraded":  # the file is unusable: said so, and compaction went on
        assert status.problem is not None
        assert "continues uncached" in status.problem and str(manager.cache.path) in status.problem
    else:  # recreated (deleted), or still whole through its -wal: "ok" must then be true
        assert status.state == "ok", status
        assert manager.cache.peek(prepared.cache_key) is not None, "ok, yet the row is not there"
        if how == "deleted":
            assert manager.cache.count() == 1  # a new file, holding only the new summary
    check_consistent(store)
    manager.cache.close()
    store.close()


@pytest.mark.parametrize("how", ["truncated", "overwritten", "replaced"])
async def test_the_app_says_the_cache_is_broken_and_compaction_goes_on(
    demo_workspace: Path,
    how: str,
) -> None:
    cache_file = cache_path(demo_workspace)
    app = make_app(demo_workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        SABOTAGE[how](cache_file)
        app.action_cache_browser()
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, CacheBrowserScreen) and app.screen.problem is not None,
            what="the cache browser's problem line",
        )
        screen = app.screen
        assert isinstance(screen, CacheBrowserScreen) and screen.problem is not None
        assert "uncached" in screen.problem
        # Compaction through the app's own source still works, uncached.
        assert app.data is not None
        session_id = app.data.session_id
        with app.source.managing(session_id) as manager:  # type: ignore[attr-defined]
            prepared = await manager.prepare()
            assert not prepared.cache_hit
            assert manager.commit(prepared).status == "compacted"
            assert manager.cache is not None and manager.cache.status.state == "degraded"
        assert app.is_running
    with SessionStore.open(demo_workspace) as store:
        check_consistent(store)
