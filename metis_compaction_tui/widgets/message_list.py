"""The active history, one row per message, virtualised for 100,000 messages.

A row reads: zone bar · index · role · tool-cycle bracket · tokens · text. Tool cycles (§3.3: a
tool_use and the tool_result in the next message) are bracketed ╭ … ╰ so a reader sees the unit
the watermark will not split; synthetic summaries are marked Σ, their fillers and truncation
notices too. Any list of engine Messages can be shown, so transcripts reuse it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import msgspec
from rich.text import Text
from textual.binding import BindingType
from textual.message import Message as TextualMessage

from engine import (
    Message,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    summary_body,
)
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.sources.session_data import Zone, ZoneRange, short_tokens
from metis_compaction_tui.widgets.row_list import RowList

ZONE_CLASSES = {
    Zone.PREFIX: "messagelist--prefix",
    Zone.SUMMARY: "messagelist--summary",
    Zone.SPAN: "messagelist--span",
    Zone.HELD: "messagelist--held",
    Zone.TAIL: "messagelist--tail",
}


def kind_of(message: Message) -> str:
    """user · asst · tool (a user message carrying results) · summary · filler · truncation."""
    if message.synthetic:
        if message.metadata.compaction_span is not None:
            return "summary"
        return "filler" if message.role == "assistant" else "truncation"
    if message.role == "user":
        return "tool" if message.tool_result_ids() else "user"
    return "asst"


def preview_text(message: Message) -> tuple[str, str]:
    """(lead symbol, one-line untrusted preview) for a row; reads only the first few KB."""
    parts: list[str] = []
    lead = ""
    for block in message.content:
        if isinstance(block, TextContentBlock):
            parts.append(block.text[:2000])
        elif isinstance(block, ToolUseContentBlock):
            lead = lead or "⚙"
            args = msgspec.json.encode(block.input).decode()[:400]
            parts.append(f"{block.name}({args})")
        elif isinstance(block, ToolResultContentBlock):
            lead = lead or ("✗" if block.is_error else "↳")
            parts.append(block.content[:2000])
        if sum(len(p) for p in parts) > 2000:
            break
    return lead, " · ".join(p.strip() for p in parts)


class MessageList(RowList):
    """Rows over `messages` (not copied: live appends show up at the next refresh)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings_for("messages")
    COMPONENT_CLASSES: ClassVar[set[str]] = RowList.COMPONENT_CLASSES | {
        *ZONE_CLASSES.values(),
        "messagelist--index",
        "messagelist--role",
        "messagelist--tokens",
        "messagelist--summary-row",
        "messagelist--synthetic",
        "messagelist--bracket",
        "messagelist--error",
    }
    empty_text = "no messages in this session yet"

    class Open(TextualMessage):
        """Enter on a row: the app opens its detail (a summary opens beside its originals)."""

        def __init__(self, message_list: MessageList, index: int, message: Message) -> None:
            super().__init__()
            self.message_list = message_list
            self.index = index
            self.message = message

        @property
        def control(self) -> MessageList:
            return self.message_list

    def __init__(
        self, *, name: str | None = None, id: str | None = None, follow: bool = True
    ) -> None:
        super().__init__(name=name, id=id, follow=follow)
        self.messages: Sequence[Message] = ()
        self.tokens: Sequence[int] = ()
        self.zones: Sequence[ZoneRange] = ()
        self.first_index = 0
        self.agent_summaries: frozenset[str] = frozenset()  # a transcript's own summaries, by id

    def show(
        self,
        messages: Sequence[Message],
        tokens: Sequence[int],
        zones: Sequence[ZoneRange] = (),
        *,
        first_index: int = 0,
    ) -> None:
        """A new list (a session loaded, a compaction renumbered it)."""
        self.messages, self.tokens, self.zones = messages, tokens, zones
        self.first_index = first_index
        self.rows_replaced()

    def appended(self, zones: Sequence[ZoneRange] = (), *, changed_from: int | None = None) -> None:
        """`messages` grew (and, for a recording whose newest messages were rewritten, changed
        from row `changed_from` on); the zones moved with the tail: a row whose zone changed is
        drawn again (its zone is in `row_state`), the others come from the strip cache."""
        self.zones = zones
        if changed_from is not None:
            self.rows_changed_from(changed_from)
        self.rows_appended()

    def row_count(self) -> int:
        return len(self.messages)

    def selected(self) -> tuple[int, Message] | None:
        if 0 <= self.cursor < len(self.messages):
            return self.cursor + self.first_index, self.messages[self.cursor]
        return None

    def _zone(self, index: int) -> Zone | None:
        for zone_range in self.zones:
            if zone_range.start <= index < zone_range.end:
                return zone_range.zone
        return None

    def row_state(self, row: int) -> object:
        """The zone bar, the index column's width, the ┄ of a last row whose tool results are
        still running, and an agent summary's mark: what an append can change in a kept row."""
        message = self.messages[row]
        return (
            self._zone(row + self.first_index),
            len(str(self.first_index + len(self.messages) - 1)),
            row + 1 < len(self.messages),
            message.id in self.agent_summaries,
        )

    def _bracket(self, row: int) -> str:
        message = self.messages[row]
        opens = bool(message.tool_use_ids())
        closes = bool(message.tool_result_ids()) and row > 0
        if opens and closes:
            return "├"
        if opens:
            return "╭" if row + 1 < len(self.messages) else "┄"  # ┄: results still running
        if closes:
            return "╰"
        return " "

    def render_row(self, row: int, width: int) -> Text:
        message = self.messages[row]
        index = row + self.first_index
        style = self.get_component_rich_style
        zone = self._zone(index)
        text = Text(no_wrap=True, end="")
        if zone is not None:
            text.append("▌", style(ZONE_CLASSES[zone]))
        else:
            text.append(" ")
        digits = max(3, len(str(self.first_index + len(self.messages) - 1)))
        text.append(f"{index:>{digits}} ", style("messagelist--index"))
        kind = "agent" if message.id in self.agent_summaries else kind_of(message)
        role = {
            "summary": "Σ sum",
            "filler": "fill ",
            "truncation": "✂ cut",
            "agent": "Σ agt",
        }.get(kind, kind)
        text.append(f"{role:<5}", style("messagelist--role"))
        text.append(self._bracket(row), style("messagelist--bracket"))
        tokens = self.tokens[row] if row < len(self.tokens) else 0
        text.append(f"{short_tokens(tokens):>6} ", style("messagelist--tokens"))
        if kind == "summary":
            span = message.metadata.compaction_span or (0, 0)
            text.append(f"Σ {span[0]}–{span[1] - 1} ", style("messagelist--summary-row"))
            body = summary_body(message.text())
            text.append_text(safe_text(body, style("messagelist--summary-row"), single_line=True))
            return text
        lead, preview = preview_text(message)
        if lead:
            lead_style = (
                style("messagelist--error") if lead == "✗" else style("messagelist--bracket")
            )
            text.append(f"{lead} ", lead_style)
        body_style = style("messagelist--synthetic") if message.synthetic else ""
        text.append_text(safe_text(preview, body_style, single_line=True, max_chars=width + 8))
        return text

    def row_activated(self, index: int) -> None:
        if 0 <= index < len(self.messages):
            self.post_message(self.Open(self, index + self.first_index, self.messages[index]))

    def action_open(self) -> None:
        self.row_activated(self.cursor)
