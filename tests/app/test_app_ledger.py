"""The summary view shows a summary's prose and its work ledger apart, each ledger entry marked
as restored by the engine."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from engine.ledger import HEADING, split
from engine.policy.splice import summary_body
from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen
from tests.app.app_helpers import SIZE, loaded, make_app, open_latest_summary


async def test_the_summary_view_shows_prose_and_ledger_apart(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app, "ledger")
        await open_latest_summary(pilot, app)
        screen = app.screen
        assert isinstance(screen, SummaryDetailScreen)
        section = split(summary_body(screen.message.text()))
        assert section.entries, "the demo's summaries carry a work ledger"
        prose = screen.query_one("#summary-text", Static).render()
        ledger = screen.query_one("#summary-ledger", Static).render()
        assert HEADING not in str(prose)
        shown = str(ledger)
        assert f"{len(section.entries)} restored by the engine" in shown
        assert shown.count("↺ ") == len(section.entries)
        assert section.entries[-1].text in shown
