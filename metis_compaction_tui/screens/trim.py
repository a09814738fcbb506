"""Ask how many cache rows to keep; the browser then confirms what that evicts."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from metis_compaction_tui.actions import bindings_for


class TrimScreen(ModalScreen[int | None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("trim")

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = total

    def compose(self) -> ComposeResult:
        with Vertical(id="trim", classes="dialog"):
            yield Static(Text("Trim the cache", style="bold"), classes="dialog-title")
            yield Static(
                Text(
                    f"The cache holds {self.total:,} rows. Keep how many of the most recently "
                    "read? (Enter to continue, Esc to cancel)"
                )
            )
            keep = Input(placeholder="rows to keep", type="integer", id="trim-keep")
            keep.cursor_blink = False
            yield keep
            yield Static("", id="trim-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            keep = int(event.value)
        except ValueError:
            keep = -1
        if keep < 0:
            self.query_one("#trim-error", Static).update(Text("a whole number of 0 or more"))
            return
        self.dismiss(keep)

    def action_close(self) -> None:
        self.dismiss(None)
