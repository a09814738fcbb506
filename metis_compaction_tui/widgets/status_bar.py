"""The top line: what is being inspected, how big it is, and whether follow mode is on."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from metis_compaction_tui.safe_text import safe_text


class StatusBar(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status--app",
        "status--session",
        "status--detail",
        "status--follow",
        "status--paused",
        "status--busy",
    }

    follow: reactive[bool] = reactive(True)
    busy: reactive[str] = reactive("")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source_label = ""
        self.session_title = ""
        self.detail = ""

    def set_session(self, source_label: str, session_title: str, detail: str) -> None:
        self.source_label, self.session_title, self.detail = source_label, session_title, detail
        self.refresh()

    def render(self) -> Text:
        style = self.get_component_rich_style
        width = max(20, self.size.width)
        right = Text(no_wrap=True, end="")
        if self.busy:
            right.append(f" {self.busy} ", style("status--busy"))
            right.append(" ")
        if self.follow:
            right.append(" ● FOLLOW ", style("status--follow"))
        else:
            right.append(" ‖ PAUSED · f to follow ", style("status--paused"))
        left = Text(no_wrap=True, end="")
        left.append(" metis compaction ", style("status--app"))
        left.append(" ")
        room = max(8, width - right.cell_len - left.cell_len - 2)
        title = safe_text(
            self.session_title or "no session",
            style("status--session"),
            single_line=True,
            max_chars=max(8, room // 2),
        )
        left.append_text(title)
        detail = f" · {self.detail}" if self.detail else ""
        detail += f" · {self.source_label}" if self.source_label else ""
        left.append_text(
            safe_text(
                detail,
                style("status--detail"),
                single_line=True,
                max_chars=max(0, room - title.cell_len),
            )
        )
        left.truncate(max(1, width - right.cell_len), overflow="ellipsis", pad=True)
        left.append_text(right)
        return left
