"""The dashboard on a real store: what it shows, sessions, follow mode, themes, palette, help,
the store going away and coming back."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

from rich.console import Console
from textual.command import CommandPalette

from engine import plan_turn
from engine.layout import config_path, metis_dir
from engine.savings import compaction_savings
from engine.store import SessionStore
from engine.summarizers.settings import StatedPrice, SummarizerSettings
from metis_compaction_tui.actions import actions_for, palette_entries
from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.screens.help import HelpScreen, help_text
from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen, summary_facts
from metis_compaction_tui.sources.session_data import money, short_tokens
from metis_compaction_tui.widgets.message_list import MessageList
from metis_compaction_tui.widgets.pressure_gauge import PressureGauge
from metis_compaction_tui.widgets.session_list import SessionList
from metis_compaction_tui.widgets.status_bar import StatusBar
from metis_compaction_tui.widgets.store_banner import StoreBanner
from metis_compaction_tui.widgets.trigger_panel import TriggerPanel
from tests.app.app_helpers import (
    SIZE,
    assistant_text,
    loaded,
    make_app,
    open_latest_summary,
    user_text,
    wait_until,
)


async def test_dashboard_shows_the_engines_own_plan_for_the_first_session(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        with SessionStore.open(workspace) as store:
            manager = store.manager("ledger")
            expected = plan_turn(manager.history, manager.config, manager.spent_usd)
            compactions = [c for c in store.compactions("ledger") if not c.undone]
        gauge = app.query_one(PressureGauge)
        assert gauge.pending == expected.decision.pending_history_tokens
        assert gauge.threshold == 14_000
        assert f"{expected.decision.pending_history_tokens:,}" in gauge.render().plain
        assert app.data is not None
        assert app.data.message_count == len(manager.history)
        assert sum(1 for p in app.data.timeline if p.compaction) == len(compactions)
        summaries = [m for m in app.data.history.messages if m.metadata.compaction_span]
        assert summaries, "the demo session has compacted"
        rows = app.query_one(SessionList).rows
        assert [r.session_id for r in rows] == ["ledger", "forced", "fresh"]


async def test_picking_a_session_in_the_list_inspects_it(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        await wait_until(pilot, lambda: app.query_one(SessionList).option_count == 3)
        sessions = app.query_one(SessionList)
        sessions.focus()
        sessions.highlighted = 2
        await pilot.press("enter")
        await loaded(pilot, app, "fresh")
        assert "docs pass" in app.query_one(StatusBar).render().plain
        await pilot.press("[")
        await loaded(pilot, app, "forced")
        await pilot.press("]")
        await loaded(pilot, app, "fresh")


async def test_follow_mode_scrolls_new_messages_in_and_a_key_pauses_it(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        messages = app.query_one("#messages", MessageList)
        assert messages.follow, "follow mode is on by default"
        count = app.data.message_count  # type: ignore[union-attr]
        assert messages.cursor == count - 1
        with SessionStore.open(workspace) as writer:
            writer.append_message("ledger", user_text("live-1", "a new ask"), 5)
        await wait_until(pilot, lambda: app.data.message_count == count + 1, what="append seen")  # type: ignore[union-attr]
        await pilot.pause()
        assert messages.cursor == count, "the new message scrolled in"
        assert messages.scroll_offset.y == messages.max_scroll_y

        await pilot.press("up")
        assert not messages.follow
        assert "PAUSED" in app.query_one(StatusBar).render().plain
        paused_at = messages.cursor
        with SessionStore.open(workspace) as writer:
            writer.append_message("ledger", assistant_text("live-2", "an answer"), 5)
        await wait_until(pilot, lambda: app.data.message_count == count + 2, what="2nd append")  # type: ignore[union-attr]
        await pilot.pause()
        assert messages.cursor == paused_at, "paused: the reader's place is kept"

        await pilot.press("f")
        await pilot.pause()
        assert messages.follow and messages.cursor == count + 1
        assert "FOLLOW" in app.query_one(StatusBar).render().plain


async def test_untrusted_text_is_shown_literally_and_runs_nothing(workspace: Path) -> None:
    hostile = "[b]x[/b] [@click=app.quit]click me[/] \x1b[2J \x1b]52;c;SGVsbG8=\x07 \u202eevil"
    with SessionStore.open(workspace) as store:
        store.create_session("hostile", title="[red]title[/red] \x1b[31m")
        store.append_message("hostile", user_text("h1", hostile), 20)
    app = make_app(workspace, session_id="hostile")
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "hostile")
        messages = app.query_one("#messages", MessageList)
        row = messages.render_row(0, 200).plain
        assert "[b]x[/b]" in row
        assert "[@click=app.quit]click me[/]" in row
        assert "␛[2J" in row and "\x1b" not in row
        assert "␛]52;c;SGVsbG8=␇" in row
        assert "⟨U+202E⟩" in row and "\u202e" not in row
        status = app.query_one(StatusBar).render().plain
        assert "[red]title[/red] ␛[31m" in status
        await pilot.click("#messages", offset=(30, 1))  # over the would-be link
        await pilot.click("#messages", offset=(30, 1))
        await pilot.pause()
        assert app.is_running and app.return_code is None
        screen_text = app.export_screenshot()
        assert "\x1b" not in screen_text.replace("&#27;", "")


async def test_theme_toggles_between_dark_and_light(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        assert app.current_theme.dark
        await pilot.press("t")
        assert not app.current_theme.dark and app.theme == "textual-light"
        await pilot.press("t")
        assert app.current_theme.dark


async def test_command_palette_lists_every_action(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        expected = [spec.title for spec in palette_entries(["app"])]
        assert set(expected) <= set(titles)
        assert {
            "Compact now",
            "Undo compaction",
            "Browse cache",
            "Follow mode",
            "Help",
            "Light/dark theme",
            "Quit",
        } <= set(titles)
        # Textual's own stay: the theme picker, the keys panel; none twice.
        assert {"Theme", "Keys"} <= set(titles)
        assert len(titles) == len({title.casefold() for title in titles})
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
        await pilot.press(*"compact now")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompactNowScreen), what="compact")


async def test_help_screen_lists_each_key_from_the_registry(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = help_text().plain
        for spec in actions_for("app"):
            assert spec.title in text and spec.shown_key in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_a_store_that_disappears_shows_a_banner_and_recovers(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        banner = app.query_one(StoreBanner)
        assert not banner.display
        moved = workspace.parent / "moved-away"
        shutil.move(metis_dir(workspace), moved)
        await wait_until(pilot, lambda: banner.display, what="the banner")
        assert "store unavailable" in banner.render().plain
        assert app.data is not None, "the last data read stays shown"
        shutil.move(moved, metis_dir(workspace))
        await wait_until(pilot, lambda: not banner.display, what="recovery")
        with SessionStore.open(workspace) as writer:
            writer.append_message("ledger", user_text("after", "back again"), 5)
        count = app.data.message_count
        await wait_until(pilot, lambda: app.data.message_count == count + 1, what="tailing again")


def test_a_session_row_never_wraps_its_pressure_line() -> None:
    from decimal import Decimal

    from engine import CompactionConfig, TriggerAction, decide_trigger
    from metis_compaction_tui.sources.base import SessionRow
    from metis_compaction_tui.widgets.session_list import session_prompt

    config = CompactionConfig(compaction_threshold_tokens=3_000, compaction_hard_cap_tokens=9_000)
    for pending, action in [(7_781, TriggerAction.SOFT), (120_000, TriggerAction.FORCED)]:
        row = SessionRow("s", "a title", 1, decide_trigger(pending, config, Decimal(0)))
        assert row.action is action
        second = session_prompt(row, True, 22).plain.split("\n")[1]
        assert len(second) <= 22
        assert second.endswith(action.value if action is TriggerAction.SOFT else "FORCED")


async def test_the_trigger_panel_names_the_strategy_and_what_the_last_compaction_saved(
    workspace: Path,
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot, app, "ledger")
        with SessionStore.open(workspace) as store:
            record = [c for c in store.compactions("ledger") if not c.undone][-1].record
        savings = compaction_savings(record)
        assert savings is not None and savings.saved_tokens > 0
        spend = app.query_one(TriggerPanel).render().plain.splitlines()[1]
        assert "strategy summarize" in spend
        assert f"last summarize −{short_tokens(savings.saved_tokens)} tok" in spend
        assert f"{money(savings.saved_usd_per_turn)}/turn" in spend


async def test_what_the_last_compaction_saved_is_priced_at_the_workspaces_stated_rates(
    workspace: Path,
) -> None:
    with SessionStore.open(workspace) as store:
        record = [c for c in store.compactions("ledger") if not c.undone][-1].record
    model = record.model or ""
    config_path(workspace).write_text(
        f'summarizer:\n  model: "{model}"\n  price:\n    input_per_mtok: 40\n'
        "    output_per_mtok: 80\n"
    )
    price = StatedPrice(input_per_mtok=Decimal(40), output_per_mtok=Decimal(80))
    savings = compaction_savings(record, SummarizerSettings(model=model, price=price))
    assert savings is not None and savings != compaction_savings(record)
    app = make_app(workspace)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot, app, "ledger")
        spend = app.query_one(TriggerPanel).render().plain.splitlines()[1]
        assert f"{money(savings.saved_usd_per_turn)}/turn" in spend
        await open_latest_summary(pilot, app)  # its detail prices it the same way
        screen = app.screen
        assert isinstance(screen, SummaryDetailScreen)
        console = Console(width=200, record=True)
        console.print(summary_facts(screen.message, screen.info, screen.summarizer))
        facts = console.export_text()
        assert f"{money(savings.saved_usd_per_turn)} a turn at {model}" in facts
