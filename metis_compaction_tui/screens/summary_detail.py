"""A summary beside what it replaced (§4.2, §5): its text, model, prompt version, cache key, hit
or miss, cost and latency on the left; the archived originals on the right, read in a worker.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from engine import (
    LedgerSection,
    Message,
    SummarizerSettings,
    compaction_savings,
    split_ledger,
    summary_body,
)
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.error_text import error_line, source_workspace
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.screens.message_detail import MessageDetailScreen
from metis_compaction_tui.sources.base import SessionSource
from metis_compaction_tui.sources.session_data import CompactionInfo, money
from metis_compaction_tui.widgets.message_list import MessageList


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms > 0 else "unknown"


def summary_facts(
    message: Message, info: CompactionInfo | None, summarizer: SummarizerSettings | None = None
) -> Table:
    """The key → value block at the top of the left pane (values wrap under themselves)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="bold", no_wrap=True)
    table.add_column(overflow="fold")

    def fact(name: str, value: str, style: str = "") -> None:
        table.add_row(Text(name, end=""), safe_text(value, style))

    span = message.metadata.compaction_span
    if info is None:
        fact("span", f"{span[0]}–{span[1] - 1}" if span else "unknown")
        fact("cache key", message.metadata.compaction_cache_key or "none")
        fact("record", "no compaction record for this summary in the source", "italic")
        return table
    record = info.record
    fact("kind", record.kind + (" (undone)" if info.undone else ""))
    fact(
        "span",
        f"{record.watermark_before}–{record.watermark_after - 1}: "
        f"{record.span_message_count:,} msgs → {record.replacement_count}",
    )
    fact("tokens", f"{record.span_token_count_in:,} in → {record.span_token_count_out:,} out")
    fact("model", record.model or "none")
    fact("prompt", record.prompt_version or "none")
    fact("cache key", record.cache_key or "none")
    fact("cache", "HIT (no call, cost 0)" if record.cache_hit else "miss (model called)")
    fact("cost", money(record.cost_usd))
    if record.usage is not None:
        u = record.usage
        fact(
            "usage",
            f"{u.input_tokens:,} in · {u.cache_read_tokens:,} cache read · "
            f"{u.cache_write_tokens:,} cache write · {u.output_tokens:,} out",
        )
    fact("strategy", record.strategy or "summarize (before strategies)")
    savings = compaction_savings(record, summarizer)
    if savings is not None:
        even = savings.break_even_turns
        fact(
            "saved",
            f"{savings.saved_tokens:,} tokens a request, {money(savings.saved_usd_per_turn)} a "
            f"turn at {savings.priced_at} cache-read rates; "
            + ("never pays back" if even is None else f"pays back after {even} more turns"),
        )
    fact("latency", f"{record.latency_ms:,} ms")
    fact("trigger", record.trigger)
    fact("committed", _when(info.created_at_ms or record.created_at_ms))
    if record.instructions:
        fact("instructions", record.instructions)
    return table


def ledger_text(section: LedgerSection) -> Text:
    """The work ledger apart from the prose: each entry marked as restored by the engine (the
    prose did not state it), and how many had no room."""
    text = Text(end="")
    text.append(
        f"Work ledger · {len(section.entries)} restored by the engine"
        + (f" · {section.left_out} left out" if section.left_out else ""),
        style="bold",
    )
    for entry in section.entries:
        text.append("\n↺ ", style="green")
        text.append(f"{entry.kind}: ", style="bold")
        text.append_text(safe_text(entry.text, single_line=True))
    return text


class SummaryDetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("summary")

    def __init__(
        self,
        source: SessionSource,
        message: Message,
        index: int,
        info: CompactionInfo | None,
        summarizer: SummarizerSettings | None = None,
    ) -> None:
        super().__init__()
        self.source, self.message, self.index, self.info = source, message, index, info
        self.summarizer = summarizer  # its stated price prices what the compaction saved

    def compose(self) -> ComposeResult:
        span = self.message.metadata.compaction_span
        label = f"Σ {span[0]}–{span[1] - 1}" if span else "truncation notice"
        heading = Text(f" Summary {label} · message {self.index} ", style="bold", end="")
        yield Static(heading, id="summary-heading")
        with Horizontal(id="summary-panes"):
            with VerticalScroll(id="summary-pane") as left:
                left.border_title = "Summary"
                facts = summary_facts(self.message, self.info, self.summarizer)
                yield Static(facts, id="summary-facts")
                section = split_ledger(summary_body(self.message.text()))
                yield Static(safe_text(section.prose), id="summary-text")
                if section.entries or section.left_out:
                    yield Static(ledger_text(section), id="summary-ledger")
            with Vertical(id="originals-pane"):
                originals = MessageList(id="originals", follow=False)  # read from the top
                originals.empty_text = "reading the archived originals…"
                yield originals
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#originals", MessageList).border_title = "Archived originals"
        self.query_one("#originals", MessageList).focus()
        self._load_originals()

    @work(thread=True, exclusive=True, group="originals", exit_on_error=False)
    def _load_originals(self) -> None:
        info = self.info
        if info is None:
            self.app.call_from_thread(self._show_originals, [], "no record: originals unknown")
            return
        try:
            originals = self.source.originals(info)
        except Exception as error:  # SourceUnavailable, or a bug: one plain line either way
            problem = error_line(
                error, "reading the originals", workspace=source_workspace(self.source)
            )
            self.app.call_from_thread(self._show_originals, [], problem)
            return
        note = "" if originals else "the source kept no originals for this compaction"
        self.app.call_from_thread(self._show_originals, originals, note)

    def _show_originals(self, originals: list[tuple[Message, int]], note: str) -> None:
        listing = self.query_one("#originals", MessageList)
        if note:
            listing.empty_text = note
        first = self.info.record.watermark_before if self.info else 0
        listing.show([m for m, _ in originals], [t for _, t in originals], first_index=first)
        listing.cursor = 0 if originals else -1
        listing.scroll_home(animate=False)
        tokens = sum(t for _, t in originals)
        listing.border_title = f"Archived originals · {len(originals):,} msgs · {tokens:,} tok"

    def on_message_list_open(self, event: MessageList.Open) -> None:
        event.stop()
        listing = self.query_one("#originals", MessageList)
        row = event.index - listing.first_index
        self.app.push_screen(MessageDetailScreen(event.index, event.message, listing.tokens[row]))

    def action_switch_pane(self) -> None:
        self.focus_next()

    def action_close(self) -> None:
        self.dismiss(None)
