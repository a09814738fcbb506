"""§6 live: started / completed / failed, newest at the bottom, with failure modes and truncations.

Error messages come from the store (already redacted by the engine, §6) and are still untrusted
text: they go through safe_text like everything else.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text

from engine import CompactionCompleted, CompactionFailed, CompactionStarted
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.sources.session_data import (
    AgentCompactionView,
    EventRow,
    money,
    short_tokens,
)
from metis_compaction_tui.widgets.row_list import RowList

# A failed event that is no failure of the compaction: the budget was spent before it began.
OVER_BUDGET = "budget_exhausted_forced"


def clock(ms: int) -> str:
    if ms <= 0:
        return "--:--:--"
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000))


class EventsTimeline(RowList):
    COMPONENT_CLASSES: ClassVar[set[str]] = RowList.COMPONENT_CLASSES | {
        "events--time",
        "events--started",
        "events--completed",
        "events--failed",
        "events--agent",
        "events--detail",
    }
    empty_text = "no compaction events yet"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.events: Sequence[EventRow] = ()

    def show(self, events: Sequence[EventRow]) -> None:
        self.events = events
        self.rows_replaced()

    def appended(self) -> None:
        self.rows_appended()

    def row_count(self) -> int:
        return len(self.events)

    def row_state(self, index: int) -> object:
        """An agent's compaction row is replaced when its size after is learnt."""
        event = self.events[index].event
        return event if isinstance(event, AgentCompactionView) else None

    def render_row(self, index: int, width: int) -> Text:
        style = self.get_component_rich_style
        row = self.events[index]
        event = row.event
        text = Text(no_wrap=True, end="")
        text.append(f"{clock(row.created_at_ms)} ", style("events--time"))
        detail = style("events--detail")
        if isinstance(event, CompactionStarted):
            text.append("▶ started   ", style("events--started"))
            text.append(
                f"{event.threshold_or_hard_cap:<9} {event.watermark_before}+"
                f"{event.span_message_count} msgs · {short_tokens(event.span_token_count_in)} tok",
                detail,
            )
        elif isinstance(event, CompactionCompleted):
            text.append("✓ completed ", style("events--completed"))
            # A mask (engine.policy.strategies) makes no call and has no cache key.
            how = "cache hit" if event.cache_hit else "miss" if event.cache_key else "mask"
            key = f" · key {event.cache_key[:10]}" if event.cache_key else ""
            text.append(
                f"{how:<9} "
                f"{event.watermark_before}–{event.watermark_after - 1} · "
                f"{short_tokens(event.span_token_count_in)}→"
                f"{short_tokens(event.span_token_count_out)} tok · {money(event.cost_usd)} · "
                f"{event.latency_ms:,} ms{key}",
                detail,
            )
        elif isinstance(event, AgentCompactionView):
            text.append("◆ agent     ", style("events--agent"))
            text.append_text(safe_text(agent_compaction_text(event), detail, single_line=True))
        elif isinstance(event, CompactionFailed) and event.failure_mode == OVER_BUDGET:
            # §3.1 step 2: reported before the call that runs anyway; the row after it (completed,
            # or failed with the truncation) is what the compaction came to.
            text.append("! over budget ", style("events--agent"))
            text.append(f"at {event.watermark_before} · compacting anyway at the hard cap", detail)
        elif isinstance(event, CompactionFailed):
            text.append("✗ failed    ", style("events--failed"))
            text.append(f"{event.failure_mode} ", style("events--failed"))
            pieces = [f"at {event.watermark_before}"]
            if event.truncated_message_count:
                pieces.append(f"truncated {event.truncated_message_count:,} msgs")
            if event.error_class:
                pieces.append(event.error_class)
            text.append(" · ".join(pieces), detail)
            if event.error_message:
                text.append(" · ", detail)
                text.append_text(safe_text(event.error_message, detail, single_line=True))
        return text


def agent_compaction_text(view: AgentCompactionView) -> str:
    """`auto      at 12 · 167k→21k tok · 38.5 s`: what the agent recorded of its own
    compaction (a figure it did not record is left out)."""
    pieces = [f"at {view.message_index}"]
    before = short_tokens(view.pre_tokens) if view.pre_tokens is not None else "?"
    if view.pre_tokens is not None or view.post_tokens is not None:
        after = short_tokens(view.post_tokens) if view.post_tokens is not None else "?"
        pieces.append(f"{before}→{after} tok")
    if view.duration_ms is not None:
        pieces.append(f"{view.duration_ms / 1000:.1f} s")
    trigger = view.trigger or "compacted"  # Codex records no trigger
    return f"{trigger[:9]:<9} " + " · ".join(pieces)
