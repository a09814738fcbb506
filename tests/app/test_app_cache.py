"""The cache browser over the workspace's real compaction-cache.sqlite: rows, sort, filter,
which sessions a row backs, and evict / trim / clear, each only after a confirmation."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from engine import CompactionCache
from engine.layout import cache_path
from engine.store import SessionStore
from metis_compaction_tui.screens.cache_browser import CacheBrowserScreen, age
from metis_compaction_tui.screens.confirm import ConfirmScreen
from metis_compaction_tui.screens.trim import TrimScreen
from tests.app.app_helpers import (
    SIZE,
    cache_keys,
    loaded,
    make_app,
    wait_until,
    wait_workers,
)


async def open_browser(pilot, app) -> CacheBrowserScreen:  # type: ignore[no-untyped-def]
    await loaded(pilot, app)
    await pilot.press("b")
    screen = app.screen
    assert isinstance(screen, CacheBrowserScreen)
    await wait_until(pilot, lambda: bool(screen.rows) and bool(screen.backers), what="rows")
    await wait_workers(app)
    await pilot.pause()
    return screen


async def test_browser_lists_every_row_and_the_sessions_each_backs(workspace: Path) -> None:
    keys = cache_keys(workspace)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot, app)
        assert sorted(r.cache_key for r in screen.rows) == sorted(keys)
        assert screen.query_one(DataTable).row_count == len(keys)
        with SessionStore.open(workspace) as store:
            live = {
                (c.record.cache_key, info.session_id)
                for info in store.list_sessions()
                for c in store.compactions(info.session_id)
                if not c.undone
            }
        shown = {(key, sid) for key, pairs in screen.backers.items() for sid, _ in pairs}
        assert shown == live
        assert "backs" in str(screen.query_one("#cache-detail").render())


async def test_sort_and_filter_change_the_rows(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot, app)
        await pilot.press("s")  # last_read_at_ms → use_count, then round to cache_key
        await wait_workers(app)
        assert screen.order_by == "use_count"
        await pilot.press("s")
        await wait_workers(app)
        assert screen.order_by == "cache_key"
        keys = [r.cache_key for r in screen.rows]
        assert keys == sorted(keys, reverse=True)
        await pilot.press("v")
        await wait_workers(app)
        assert [r.cache_key for r in screen.rows] == sorted(keys)
        wanted = keys[0][:10]
        await pilot.press("slash", *wanted)
        await wait_until(pilot, lambda: len(screen.rows) == 1, what="the filter")
        assert screen.rows[0].cache_key.startswith(wanted)


async def test_evict_asks_first_and_deletes_only_on_yes(workspace: Path) -> None:
    before = cache_keys(workspace)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot, app)
        target = screen.selected_row()
        assert target is not None
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await wait_workers(app)
        assert cache_keys(workspace) == before
        await pilot.press("d")
        await pilot.press("y")
        await wait_workers(app)
        await wait_until(pilot, lambda: len(screen.rows) == len(before) - 1, what="refresh")
        assert target.cache_key not in cache_keys(workspace)
        assert len(cache_keys(workspace)) == len(before) - 1


async def test_trim_to_n_keeps_the_most_recently_read(workspace: Path) -> None:
    before = CompactionCache(cache_path(workspace))
    newest = [r.cache_key for r in before.list_rows(order_by="last_read_at_ms")][:2]
    before.close()
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await open_browser(pilot, app)
        await pilot.press("n")
        assert isinstance(app.screen, TrimScreen)
        await pilot.press("2", "enter")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_workers(app)
    assert sorted(cache_keys(workspace)) == sorted(newest)


async def test_clear_empties_the_cache_after_confirmation(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot, app)
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        assert cache_keys(workspace)
        await pilot.press("x", "y")
        await wait_workers(app)
        await wait_until(pilot, lambda: not screen.rows, what="empty")
        await pilot.press("escape")
        assert not isinstance(app.screen, CacheBrowserScreen)
    assert cache_keys(workspace) == []


async def test_quitting_with_the_browser_open_leaves_no_thread_behind(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await open_browser(pilot, app)
        await pilot.press("q")
    await wait_until_threads_gone()


async def wait_until_threads_gone() -> None:
    import asyncio
    import threading

    for _ in range(200):
        alive = [
            t
            for t in threading.enumerate()
            if not t.daemon
            and t is not threading.main_thread()
            and type(t).__name__ == "Connection"
        ]
        if not alive:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"aiosqlite threads left running: {alive}")


def test_age_is_one_short_word() -> None:
    now = 100_000_000
    assert age(0, now) == "—"
    assert age(now, now) == "now"
    assert age(now - 42_000, now) == "42s"
    assert age(now - 5 * 60_000, now) == "5m"
    assert age(now - 3 * 3_600_000, now) == "3h"
