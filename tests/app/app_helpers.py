"""Shared by the app's Pilot tests: helpers to make the app and waits that poll a
condition the feed thread will make true (never a bare sleep), or wait on the workers that end."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from engine import CompactionCache, Message, Role, TextContentBlock
from engine.layout import cache_path
from metis_compaction_tui.app import MetisInspector
from metis_compaction_tui.sources.store import StoreSource

SIZE = (100, 30)


def make_app(workspace: Path, **options: object) -> MetisInspector:
    return MetisInspector(
        StoreSource(workspace, poll_interval_s=0.05), poll_interval_s=0.05, **options
    )  # type: ignore[arg-type]


def cache_keys(workspace: Path) -> list[str]:
    cache = CompactionCache(cache_path(workspace))
    try:
        return [row.cache_key for row in cache.list_rows()]
    finally:
        cache.close()


async def wait_until(
    pilot: Pilot[object],
    condition: Callable[[], bool],
    timeout: float = 10.0,
    what: str = "condition",
) -> None:
    """The feed is a thread that never ends, so its effects are awaited by condition."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def wait_workers(app: MetisInspector) -> None:
    """Every worker that ends (compact-now steps, undo, cache reads): not the endless feed."""
    ending = [w for w in app.workers if w.group != "feed"]
    if ending:  # an empty list means "all" to wait_for_complete, and the feed never ends
        await app.workers.wait_for_complete(ending)


async def press_and_settle(pilot: Pilot[object], app: MetisInspector, *keys: str) -> None:
    """Press `keys`, wait for the workers they started, then for the screen to catch up."""
    await pilot.press(*keys)
    await wait_workers(app)
    await pilot.pause()


async def loaded(pilot: Pilot[object], app: MetisInspector, session_id: str | None = None) -> None:
    await wait_until(
        pilot,
        lambda: app.data is not None and (session_id is None or app.data.session_id == session_id),
        what=f"session {session_id or 'any'} loaded",
    )
    await pilot.pause()


async def open_latest_summary(pilot: Pilot[object], app: MetisInspector) -> int:
    """Put the cursor on the session's latest summary and open its detail screen; its index."""
    assert app.data is not None
    index = max(i for i, m in enumerate(app.data.history.messages) if m.metadata.compaction_span)
    from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen
    from metis_compaction_tui.widgets.message_list import MessageList

    messages = app.query_one("#messages", MessageList)
    messages.follow = False
    messages.cursor = index
    await pilot.press("enter")
    assert isinstance(app.screen, SummaryDetailScreen)
    await wait_workers(app)
    await pilot.pause()
    return index


async def first_toast(pilot: Pilot[object], app: MetisInspector, *keys: str) -> object:
    """Press `keys`, wait for their workers, and return the one toast they raised."""
    await pilot.press(*keys)
    await wait_workers(app)
    await wait_until(pilot, lambda: len(app._notifications) > 0, what="a toast")
    (toast,) = list(app._notifications)
    return toast


def user_text(message_id: str, text: str) -> Message:
    return Message(id=message_id, role=Role.USER, content=(TextContentBlock(text),))


def assistant_text(message_id: str, text: str) -> Message:
    return Message(id=message_id, role=Role.ASSISTANT, content=(TextContentBlock(text),))
