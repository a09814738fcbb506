"""Snapshots of the main views at 100x30 and 160x48 (pytest-textual-snapshot), from the small
deterministic app in tests/snapshot_apps/demo_app.py; cursor blink is off in every input.
Update with `pytest tests/test_snapshots.py --snapshot-update` after a deliberate change."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen
from metis_compaction_tui.widgets.message_list import MessageList
from metis_compaction_tui.widgets.session_list import SessionList
from tests.app.app_helpers import wait_until, wait_workers
from tests.snapshot_apps.demo_app import make_snapshot_app

SIZES = [pytest.param((100, 30), id="100x30"), pytest.param((160, 48), id="160x48")]


async def ready(pilot: Pilot[object]) -> None:
    app = pilot.app
    await wait_until(pilot, lambda: app.data is not None, what="loaded")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: app.query_one(SessionList).option_count == 3, what="list")
    for field in app.query(Input):
        field.cursor_blink = False
    await pilot.pause()


def then(
    *steps: Callable[[Pilot[object]], Awaitable[None]],
) -> Callable[[Pilot[object]], Awaitable[None]]:
    async def run_before(pilot: Pilot[object]) -> None:
        await ready(pilot)
        for step in steps:
            await step(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await pilot.pause()

    return run_before


async def open_latest_summary(pilot: Pilot[object]) -> None:
    app = pilot.app
    messages = app.query_one("#messages", MessageList)
    index = max(i for i, m in enumerate(messages.messages) if m.metadata.compaction_span)
    messages.follow = False
    messages.cursor = index
    await pilot.press("enter")
    assert isinstance(app.screen, SummaryDetailScreen)
    await wait_workers(app)  # type: ignore[arg-type]
    await pilot.pause()


async def compact_now_preview(pilot: Pilot[object]) -> None:
    await pilot.press("c")
    assert isinstance(pilot.app.screen, CompactNowScreen)
    await wait_workers(pilot.app)  # type: ignore[arg-type]
    await pilot.pause()


async def press_help(pilot: Pilot[object]) -> None:
    await pilot.press("question_mark")


async def light_theme(pilot: Pilot[object]) -> None:
    await pilot.press("t")


@pytest.mark.parametrize("size", SIZES)
def test_dashboard(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_snapshot_app(), terminal_size=size, run_before=then())


@pytest.mark.parametrize("size", SIZES)
def test_dashboard_forced_session(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_snapshot_app("forced"), terminal_size=size, run_before=then())


@pytest.mark.parametrize("size", SIZES)
def test_summary_beside_originals(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = make_snapshot_app()
    assert snap_compare(app, terminal_size=size, run_before=then(open_latest_summary))


@pytest.mark.parametrize("size", SIZES)
def test_compact_now_preview(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = make_snapshot_app()
    assert snap_compare(app, terminal_size=size, run_before=then(compact_now_preview))


def test_help_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_snapshot_app(), terminal_size=(100, 30), run_before=then(press_help))


def test_dashboard_light_theme(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_snapshot_app(), terminal_size=(100, 30), run_before=then(light_theme))
