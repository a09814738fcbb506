class DashboardApp(App[None]):
    CSS_PATH = APP_CSS

    def compose(self) -> ComposeResult:
        yield Dashboard(id="dashboard")


async def test_panels_are_drawn_at_most_every_so_often_and_the_last_append_always(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While messages stream in, the list shows each append at once and the panels above it
    follow at most every PANELS_EVERY_S; a timer draws the last append; anything but messages
    (events, spend, the agent's side) draws them at once."""
    monkeypatch.setattr(dashboard_module, "PANELS_EVERY_S", 3600.0)  # no redraw by the clock
    app = DashboardApp()
    async with app.run_test(size=(100, 40)) as pilot:
        dashboard = app.query_one(Dashboard)
        gauge = app.query_one(PressureGauge)
        data = SessionData.from_messages("s", chat(4), tokens=[100] * 4)
        dashboard.show(data)
        await pilot.pause()
        assert gauge.pending == data.pending_history_tokens
        shown = gauge.pending
        data.append([(m, 100) for m in chat(2, start=4)])
        dashboard.grew(2, 0)
        assert dashboard.messages.row_count() == 6, "the list has the new rows at once"
        assert "Messages · 6" in str(dashboard.messages.border_title)
        assert gauge.pending == shown, "the panels wait"
        data.append([(m, 100) for m in chat(2, start=6)])
        dashboard.grew(2, 0, panels_now=True)
        assert gauge.pending == data.pending_history_tokens != shown
        monkeypatch.setattr(dashboard_module, "PANELS_EVERY_S", 0.05)
        dashboard._panels_at = 0.0
        dashboard.grew(0, 0)  # past the interval: drawn at once
        data.append([(m, 100) for m in chat(2, start=8)])
        dashboard.grew(2, 0)  # within it: a timer draws this last append
        await wait_until(pilot, lambda: gauge.pending == data.pending_history_tokens)
