"""One session at a glance: pressure, tokens over turns, watermark, trigger, messages, events.

Renders from a `SessionData` only, so any list of engine Messages (the live store, a transcript)
can be shown. The app owns the data and calls `show` (a new or rewritten session) or `grew`
(appends) on the UI thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer

from metis_compaction_tui.sources.session_data import SessionData, ZoneRange, short_tokens
from metis_compaction_tui.widgets.agent_panel import AgentPanel
from metis_compaction_tui.widgets.events_timeline import EventsTimeline
from metis_compaction_tui.widgets.message_list import MessageList
from metis_compaction_tui.widgets.pressure_gauge import PressureGauge
from metis_compaction_tui.widgets.token_sparkline import TokenSparkline
from metis_compaction_tui.widgets.trigger_panel import TriggerPanel
from metis_compaction_tui.widgets.watermark_strip import WatermarkStrip

# While messages stream in, the panels above the list (gauge, sparkline, watermark, trigger) are
# drawn at most this often; the list, its title and the status line on every append. Drawing the
# panels cost more than the new rows, and a frame longer than Textual's 1/60 s pushes the next one
# back by one to two more (its screen timer skips ticks): drawn on every append they made every
# new row later (tests/perf/bench_app.py). The last append is always drawn: a timer follows it.
PANELS_EVERY_S = 0.1


class Dashboard(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: SessionData | None = None
        self._panels_at = 0.0  # monotonic time the panels were last drawn
        self._panels_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="overview"):
            yield PressureGauge(id="gauge")
            yield TokenSparkline(id="sparkline")
            yield WatermarkStrip(id="watermark")
            yield TriggerPanel(id="trigger")
            yield AgentPanel(id="agent")
        yield MessageList(id="messages")
        yield EventsTimeline(id="events")

    def on_mount(self) -> None:
        self.query_one(MessageList).border_title = "Messages"
        self.query_one(EventsTimeline).border_title = "Events"

    @property
    def messages(self) -> MessageList:
        return self.query_one(MessageList)

    @property
    def events(self) -> EventsTimeline:
        return self.query_one(EventsTimeline)

    def show(self, data: SessionData) -> None:
        self.data = data
        zones = data.zones()
        self.messages.show(data.history.messages, data.history.tokens, zones)
        self.events.show(data.events)
        self._titles(data)
        self._panels_now()

    def grew(
        self,
        added_messages: int,
        added_events: int,
        rewritten_from: int | None = None,
        *,
        panels_now: bool = False,
    ) -> None:
        """An append (`rewritten_from`: a recording's messages from that index on were replaced
        first). `panels_now`: more than messages changed (events, spend, the agent's side): the
        panels are drawn at once rather than at most every PANELS_EVERY_S."""
        data = self.data
        if data is None:
            return
        if added_messages:
            self.messages.appended(data.zones(), changed_from=rewritten_from)
        if added_events:
            self.events.appended()
        self._titles(data)
        if panels_now or time.monotonic() - self._panels_at >= PANELS_EVERY_S:
            self._panels_now()
        elif self._panels_timer is None:
            wait = self._panels_at + PANELS_EVERY_S - time.monotonic()
            self._panels_timer = self.set_timer(max(0.0, wait), self._panels_now)

    def _panels_now(self) -> None:
        if self._panels_timer is not None:
            self._panels_timer.stop()
            self._panels_timer = None
        self._panels_at = time.monotonic()
        if self.data is not None:
            self._overview(self.data, self.data.zones())

    def _titles(self, data: SessionData) -> None:
        self.messages.agent_summaries = data.agent.summary_ids if data.agent else frozenset()
        self.messages.border_title = (
            f"Messages · {data.message_count:,} · {short_tokens(data.history.total_tokens)} tok"
        )
        summaries = sum(1 for info in data.compactions if not info.undone)
        title = f"Events · {len(data.events):,} · {summaries} compactions"
        if self.events.border_title != title:  # setting a title repaints, even the same one
            self.events.border_title = title

    def _overview(self, data: SessionData, zones: Sequence[ZoneRange]) -> None:
        plan, config = data.plan, data.config
        self.query_one(PressureGauge).set_pressure(plan.decision)
        self.query_one(TokenSparkline).set_points(data.timeline)
        self.query_one(WatermarkStrip).set_watermark(
            zones, plan.span, plan.message_count, plan.floor
        )
        last = data.latest_compaction()
        self.query_one(TriggerPanel).set_plan(
            plan,
            config.compaction_model,
            last.record if last is not None else None,
            data.price_origin,
            data.summarizer,
        )
        self.query_one(AgentPanel).set_view(data.agent)
