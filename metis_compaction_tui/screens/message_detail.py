"""One message in full: every content block, literally (untrusted text through safe_text)."""

from __future__ import annotations

from typing import ClassVar

import msgspec
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from engine import Message, TextContentBlock, ToolResultContentBlock, ToolUseContentBlock
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.widgets.message_list import kind_of


def message_body(message: Message) -> Text:
    text = Text(end="")
    for number, block in enumerate(message.content):
        if number:
            text.append("\n\n")
        if isinstance(block, TextContentBlock):
            text.append("text\n", style="bold dim")
            text.append_text(safe_text(block.text))
        elif isinstance(block, ToolUseContentBlock):
            text.append("tool_use ", style="bold dim")
            text.append_text(safe_text(f"{block.name} · id {block.id}", "bold", single_line=True))
            text.append("\n")
            pretty = msgspec.json.format(msgspec.json.encode(block.input), indent=2).decode()
            text.append_text(safe_text(pretty))
        elif isinstance(block, ToolResultContentBlock):
            label = "tool_result (error) " if block.is_error else "tool_result "
            text.append(label, style="bold red" if block.is_error else "bold dim")
            text.append_text(safe_text(f"for {block.tool_use_id}", "dim", single_line=True))
            text.append("\n")
            text.append_text(safe_text(block.content))
    return text


def message_heading(index: int, message: Message, tokens: int) -> Text:
    heading = Text(f"Message {index} · {kind_of(message)} · {tokens:,} tokens · id ", end="")
    heading.append_text(safe_text(message.id, single_line=True, max_chars=60))
    return heading


class MessageDetailScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("detail")

    def __init__(self, index: int, message: Message, tokens: int) -> None:
        super().__init__()
        self.index, self.message, self.tokens = index, message, tokens

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="message-detail", classes="dialog") as scroll:
            scroll.border_title = "Message"
            yield Static(
                message_heading(self.index, self.message, self.tokens), classes="dialog-title"
            )
            yield Static(message_body(self.message), id="message-body")

    def action_close(self) -> None:
        self.dismiss(None)
