"""Where each value comes from: every §11 knob and summarizer setting of the session on screen,
with its origin (a flag, a METIS_* variable, a line of .metis/config.yaml, the session's own
stored knob, or the default) and where the model's price comes from. Read only."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.safe_text import neutralise
from metis_compaction_tui.sources.session_data import SessionData


def safe_line(text: str) -> str:
    """A value read from a file or the store, shown literally on one line."""
    return neutralise(text, single_line=True)


def settings_text(data: SessionData) -> Text:
    text = Text(end="")
    text.append(f"Settings · {safe_line(data.title)}\n", style="bold")
    if data.settings_file:
        text.append(f"config file  {safe_line(data.settings_file)}\n", style="dim")
        text.append(
            "precedence   flag > environment (METIS_*) > config.yaml > your user config > "
            "the session's own > default\n",
            style="dim",
        )
    if data.price_origin:
        text.append("price        ", style="bold")
        text.append(f"{safe_line(data.price_origin)}\n")
    text.append("\n")
    rows = data.settings_rows or [
        (knob, str(getattr(data.config, knob)), "this recording")
        for knob in data.config.__struct_fields__
    ]
    width = max(len(key) for key, _, _ in rows)
    for key, value, origin in rows:
        text.append(f"{key:<{width}}  ", style="bold")
        text.append(safe_line(value))
        text.append(f"  ({safe_line(origin)})\n", style="dim")
    return text


class SettingsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("help")

    def __init__(self, data: SessionData) -> None:
        super().__init__()
        self.data = data

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="settings", classes="dialog"):
            yield Static(settings_text(self.data), id="settings-text")

    def action_close(self) -> None:
        self.dismiss(None)
