"""Compact now (preview → instructions → summary → accept / reject), SpanChanged, undo, and the
summary detail screen, against a real store with the offline summarizer."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from rich.console import Console

from engine import ExtractiveSummarizer, SummaryRequest, SummaryResult
from engine.store import SessionStore, StoredCompaction
from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.screens.confirm import ConfirmScreen
from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen, summary_facts
from metis_compaction_tui.widgets.events_timeline import EventsTimeline
from metis_compaction_tui.widgets.message_list import MessageList
from tests.app.app_helpers import (
    SIZE,
    assistant_text,
    loaded,
    make_app,
    open_latest_summary,
    press_and_settle,
    user_text,
    wait_until,
    wait_workers,
)


def live_compactions(workspace: Path, session_id: str = "ledger") -> list:  # type: ignore[type-arg]
    with SessionStore.open(workspace) as store:
        return [c for c in store.compactions(session_id) if not c.undone]


async def accept(  # type: ignore[no-untyped-def]
    pilot, app, screen: CompactNowScreen, workspace: Path, before: list
) -> StoredCompaction:
    """Accept the reviewed summary: the screen is done and exactly one compaction was added."""
    await press_and_settle(pilot, app, "a")
    assert screen.state == "done"
    after = live_compactions(workspace)
    assert len(after) == len(before) + 1
    return after[-1]


async def open_compact_now(pilot, app) -> CompactNowScreen:  # type: ignore[no-untyped-def]
    await loaded(pilot, app, "ledger")
    await pilot.press("c")
    screen = app.screen
    assert isinstance(screen, CompactNowScreen)
    await wait_workers(app)
    await pilot.pause()
    return screen


async def test_compact_now_previews_then_summarizes_with_instructions_then_commits(
    workspace: Path,
) -> None:
    before = live_compactions(workspace)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        assert screen.state == "ready"
        preview = screen.preview
        assert preview is not None and not preview.cache_hit
        assert preview.span.span_message_count > 0
        assert preview.model == "local:extractive"
        await pilot.press(*"keep LEDGER_TIMEOUT")
        await press_and_settle(pilot, app, "enter")
        assert screen.state == "review"
        assert screen.prepared is not None
        assert "keep LEDGER_TIMEOUT" in screen.prepared.summary
        assert live_compactions(workspace) == before, "nothing is spliced before acceptance"
        added = await accept(pilot, app, screen, workspace, before)
        record = added.record
        assert record.trigger == "manual" and record.instructions == "keep LEDGER_TIMEOUT"
        assert record.watermark_before == preview.span.start
        await pilot.press("escape")
        await wait_until(
            pilot,
            lambda: app.data.revision == added.revision,  # type: ignore[union-attr]
            what="the dashboard reloaded",
        )


async def test_the_review_names_the_span_summarized_when_the_session_moved_on(
    workspace: Path,
) -> None:
    """The agent writes between the preview and the call: the call plans again, and the review
    shows the span it summarized, saying the preview showed another."""
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        previewed = screen.preview.span  # type: ignore[union-attr]
        with SessionStore.open(workspace) as writer:
            for turn in range(6):
                writer.append_message(
                    "ledger", user_text(f"late-u{turn}", "one more ask " * 80), 300
                )
                writer.append_message(
                    "ledger", assistant_text(f"late-a{turn}", "done, as asked " * 80), 300
                )
        await press_and_settle(pilot, app, "ctrl+r")
        assert screen.state == "review" and screen.prepared is not None
        summarized = screen.prepared.span
        assert summarized.compaction_watermark != previewed.compaction_watermark
        line = str(screen.query_one("#cn-preview").render())
        end = summarized.compaction_watermark - 1
        assert f"span {summarized.start}–{end} · {summarized.span_message_count:,} msgs" in line
        assert f"the preview showed {previewed.start}–{previewed.compaction_watermark - 1}" in line


async def test_the_review_of_an_unchanged_session_shows_the_previewed_span(
    workspace: Path,
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        span = screen.preview.span  # type: ignore[union-attr]
        await press_and_settle(pilot, app, "ctrl+r")
        line = str(screen.query_one("#cn-preview").render())
        assert f"span {span.start}–{span.compaction_watermark - 1}" in line
        assert "moved on" not in line


async def test_rejecting_the_summary_changes_nothing(workspace: Path) -> None:
    before = live_compactions(workspace)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        await press_and_settle(pilot, app, "ctrl+r")
        assert screen.state == "review"
        await pilot.press("r")
        assert screen.state == "ready" and screen.prepared is None
        await pilot.press("escape")
        assert not isinstance(app.screen, CompactNowScreen)
    assert live_compactions(workspace) == before


async def test_a_span_compacted_elsewhere_first_is_explained_and_not_overwritten(
    workspace: Path,
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        await pilot.press("ctrl+r")
        await wait_workers(app)
        assert screen.state == "review"
        with SessionStore.open(workspace) as writer:  # metis dev compacts the same span first
            manager = writer.manager("ledger")
            prepared = await manager.prepare()
            manager.commit(prepared)
            manager.cache.close()  # type: ignore[union-attr]
        count = len(live_compactions(workspace))
        await press_and_settle(pilot, app, "a")
        result = str(screen.query_one("#cn-result").render())
        assert "changed before the summary could be spliced" in result
        assert "Nothing was written" in result
        assert len(live_compactions(workspace)) == count
        assert screen.state in ("ready", "nothing")  # a fresh preview of what is left


async def test_the_app_stays_responsive_while_the_call_runs(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    original = ExtractiveSummarizer.summarize

    async def slow(self: ExtractiveSummarizer, request: SummaryRequest) -> SummaryResult:
        await asyncio.to_thread(release.wait, 20)
        return await original(self, request)

    monkeypatch.setattr(ExtractiveSummarizer, "summarize", slow)
    before = live_compactions(workspace)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_compact_now(pilot, app)
        await pilot.press("enter")
        assert screen.state == "summarizing"
        elapsed = screen.query_one("#cn-elapsed")
        first = str(elapsed.render())
        await wait_until(pilot, lambda: str(elapsed.render()) != first, what="the ticker")
        assert screen.query_one("#cn-progress").display
        await pilot.press("escape")  # the UI answers while the call is still out
        assert not isinstance(app.screen, CompactNowScreen)
        await pilot.press("t")
        assert not app.current_theme.dark
        release.set()
        await wait_workers(app)
    assert live_compactions(workspace) == before, "closing before acceptance splices nothing"


async def test_undo_restores_the_latest_compaction_after_confirmation(workspace: Path) -> None:
    before = live_compactions(workspace)
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        await pilot.press("u")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert live_compactions(workspace) == before
        await pilot.press("u")
        await pilot.press("y")
        await wait_workers(app)
        after = live_compactions(workspace)
        assert [c.compaction_id for c in after] == [c.compaction_id for c in before[:-1]]
        restored = before[-1].record
        await wait_until(
            pilot,
            lambda: app.data.revision > before[-1].revision,  # type: ignore[union-attr]
            what="the undo reloaded",
        )
        assert app.data is not None
        assert not any(m.id == restored.summary_message_id for m in app.data.history.messages)


async def test_opening_a_summary_shows_it_beside_its_archived_originals(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        index = await open_latest_summary(pilot, app)
        assert app.data is not None
        info = app.data.compaction_for(app.data.history.messages[index])
        assert info is not None
        screen = app.screen
        originals = screen.query_one("#originals", MessageList)
        assert originals.row_count() == info.record.span_message_count
        assert originals.first_index == info.record.watermark_before
        console = Console(width=200, record=True)
        console.print(summary_facts(screen.message, screen.info))
        facts = console.export_text()
        assert info.record.cache_key is not None
        assert info.record.cache_key in facts
        assert "miss (model called)" in facts and "local:extractive" in facts
        await pilot.press("escape")
        assert not isinstance(app.screen, SummaryDetailScreen)


async def test_compact_now_with_the_mask_strategy_shows_the_placeholders_then_masks(
    workspace: Path,
) -> None:
    with SessionStore.open(workspace) as store:
        info = store.session_info("ledger")
        store.update_config("ledger", info.config.replace(compaction_strategy="mask"))
    before = live_compactions(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_compact_now(pilot, app)
        preview = screen.preview
        assert preview is not None and preview.action == "mask" and preview.cache_key == ""
        assert preview.expected_saved_tokens and preview.expected_saved_tokens > 0
        await press_and_settle(pilot, app, "enter")
        assert screen.state == "review" and screen.prepared is not None
        shown = str(screen.query_one("#cn-summary-text").render())
        assert shown.startswith("[tool result masked: ")
        added = await accept(pilot, app, screen, workspace, before)
        record = added.record
        assert record.kind == "mask" and record.strategy == "mask" and record.cost_usd == 0
        assert record.history_tokens_after < record.history_tokens_before
        await pilot.press("escape")
        await wait_until(
            pilot,
            lambda: app.data.revision == added.revision,  # type: ignore[union-attr]
            what="the dashboard reloaded",
        )
        events = app.query_one(EventsTimeline)
        last = events.render_row(events.row_count() - 1, 160).plain
        assert "✓ completed mask " in last and "key" not in last
