"""Yes/no before anything destructive (evict, trim, clear, undo). Dismisses with True or False."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from metis_compaction_tui.actions import bindings_for


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("confirm")

    def __init__(self, title: str, body: Text, *, yes: str = "Yes", danger: bool = True) -> None:
        super().__init__()
        self.title_text, self.body, self.yes, self.danger = title, body, yes, danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            yield Static(self.body, id="confirm-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(
                    f"{self.yes} (y)", id="yes", variant="error" if self.danger else "primary"
                )
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe choice has the focus

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
