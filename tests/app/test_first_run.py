"""The app's first minutes: a folder with no store yet, the session list's names and scroll,
what the events list says of a compaction over budget, and the times of what-if events."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Static

from engine import CompactionFailed, TriggerAction
from engine.errors import no_span_reason
from engine.layout import metis_dir
from engine.store import SessionStore
from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.sources.base import SessionRow
from metis_compaction_tui.sources.memory import MemorySource
from metis_compaction_tui.sources.session_data import EventRow
from metis_compaction_tui.widgets.dashboard import Dashboard
from metis_compaction_tui.widgets.events_timeline import EventsTimeline
from metis_compaction_tui.widgets.no_store import NoStorePanel
from metis_compaction_tui.widgets.session_list import SessionList, list_titles
from tests.app.app_helpers import assistant_text, make_app, user_text, wait_until
from tests.history_builders import SID, SMALL_CONFIG, tool_session

SIZE = (100, 30)


def screen_text(app: object) -> str:
    panel = app.query_one(NoStorePanel)  # type: ignore[attr-defined]
    rendered = panel.render()
    return str(getattr(rendered, "plain", rendered))


async def test_a_folder_without_a_store_says_how_to_make_one_and_shows_no_figures(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.query_one(NoStorePanel).display, what="the panel")
        text = screen_text(app)
        assert "No session store here yet" in text
        assert f"metis-compaction-tui simulate {tmp_path}" in text
        assert "metis-compaction-tui demo" in text
        assert not app.query_one(Dashboard).display  # no pressure, trigger or spend of nothing
        assert not metis_dir(tmp_path).exists()  # looking created nothing
        # metis dev starts: the store appears and the app shows it.
        with SessionStore.open(tmp_path, create=True) as store:
            store.create_session(SID, config=SMALL_CONFIG, title="first session")
        await wait_until(pilot, lambda: app.data is not None, timeout=20, what="the session")
        # The feed says the store is back after the round that loaded it: the panels change on
        # that message, which may follow the load by a frame on a busy machine.
        await wait_until(
            pilot, lambda: app.query_one(Dashboard).display, timeout=20, what="the dashboard"
        )
        assert not app.query_one(NoStorePanel).display


def row(session_id: str, title: str) -> SessionRow:
    return SessionRow(session_id, title, 0, 0, 100, 200, TriggerAction.SKIP)


def test_sessions_with_one_title_get_the_end_of_their_id() -> None:
    rows = [
        row("rollout-a1b2", "codex 09-10 08:00:12"),
        row("rollout-c3d4", "codex 09-10 08:00:12"),
    ]
    rows.append(row("other", "codex 09-10 08:00:13"))
    assert list_titles(rows, 40) == {
        "rollout-a1b2": "codex 09-10 08:00:12 ·a1b2",
        "rollout-c3d4": "codex 09-10 08:00:12 ·c3d4",
        "other": "codex 09-10 08:00:13",
    }
    # Cut to the list's width, they would read alike: cut in the middle, their ends stay.
    narrow = list_titles(rows, 19)
    assert len(set(narrow.values())) == 3 and all(len(t) <= 19 for t in narrow.values())
    assert narrow["rollout-a1b2"].endswith("·a1b2")


def test_a_long_title_is_cut_at_its_end_unless_that_makes_two_alike() -> None:
    rows = [row("a", "billing migration (budget spent)"), row("b", "docs pass")]
    assert list_titles(rows, 21)["a"] == "billing migration (b…"
    same_project = [
        row("x", "metis-compaction-tui · 7d1c0b7e"),
        row("y", "metis-compaction-tui · 0a9f3c21"),
    ]
    cut = list_titles(same_project, 21)
    assert cut["x"].endswith("· 7d1c0b7e") and cut["y"].endswith("· 0a9f3c21")
    assert all(len(t) == 21 for t in cut.values())


async def test_the_list_scrolls_to_the_session_shown(tmp_path: Path) -> None:
    with SessionStore.open(tmp_path, create=True) as store:
        for n in range(30):
            store.create_session(f"s{n:02d}", config=SMALL_CONFIG, title=f"session {n:02d}")
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.data is not None, what="a session")
        sessions = app.query_one(SessionList)
        await wait_until(pilot, lambda: sessions.option_count == 30, what="the list")
        last = sessions.rows[-1].session_id
        app.select_session(last)
        await wait_until(pilot, lambda: app.data is not None and app.data.session_id == last)
        await wait_until(pilot, lambda: sessions.scroll_y > 0, what="the list to scroll")
        assert sessions.highlighted == len(sessions.rows) - 1


async def test_a_compaction_over_budget_is_not_listed_as_failed(tmp_path: Path) -> None:
    over = CompactionFailed(
        session_id=SID,
        turn_id="t9",
        watermark_before=4,
        span_message_count=20,
        failure_mode="budget_exhausted_forced",
        error_message="compaction budget spent ($0.20 of $0.20); compacting anyway",
    )
    failed = CompactionFailed(
        session_id=SID,
        turn_id="t9",
        watermark_before=4,
        span_message_count=20,
        failure_mode="adapter_error",
        error_class="network",
        truncated_message_count=12,
    )
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE):
        timeline = app.query_one(EventsTimeline)
        timeline.events = [EventRow(1, "f", over, 0), EventRow(2, "f", failed, 0)]
        first = timeline.render_row(0, 100).plain
        second = timeline.render_row(1, 100).plain
    assert "over budget" in first and "compacting anyway" in first and "failed" not in first
    assert "✗ failed" in second and "truncated 12 msgs" in second


def test_what_if_events_carry_the_time_they_happened() -> None:
    source = MemorySource(clock=lambda: 1_767_225_600_000)
    source.add_session(SID, tool_session(8, size=400), config=SMALL_CONFIG)

    async def compact() -> None:
        with source.managing(SID) as manager:
            manager.commit(await manager.prepare())

    asyncio.run(compact())
    events = source.load(SID).events
    assert len(events) >= 2  # started, completed
    assert all(e.created_at_ms == 1_767_225_600_000 for e in events)


async def test_compact_now_on_a_short_session_gives_the_status_lines_reason(
    tmp_path: Path,
) -> None:
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SID, config=SMALL_CONFIG, title="two messages")
        store.append_message(SID, user_text("m1", "hello"), 5)
        store.append_message(SID, assistant_text("m2", "hi"), 5)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.data is not None, what="the session")
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CompactNowScreen))
        preview = app.screen.query_one("#cn-preview", Static)
        expected = no_span_reason(2, SMALL_CONFIG.compaction_preserve_recent_turns)
        await wait_until(pilot, lambda: expected in str(preview.render()), what="the reason")
        assert expected.startswith("no compactable span: all 2 messages")


def test_titles_that_differ_only_in_their_middle_are_cut_around_the_difference() -> None:
    title = "simulated metis dev, seed 0 run · local:extractive, spend notional (nothing billed)"
    rows = [row("s1", title), row("s2", title.replace("seed 0 run", "seed 0 rerun"))]
    cut = list_titles(rows, 21)
    assert cut["s1"] != cut["s2"] and all(len(t) <= 21 for t in cut.values())
    assert "run" in cut["s1"] and "rerun" in cut["s2"]
    # Alike wherever they are cut: the end of the session id tells them apart.
    twins = [row("s-0001", "x" * 40 + "a" + "y" * 40), row("s-0002", "x" * 40 + "b" + "y" * 40)]
    narrow = list_titles(twins, 12)
    assert narrow["s-0001"] != narrow["s-0002"] and all(len(t) <= 12 for t in narrow.values())
