"""Keys (from the action registry, so they can never drift) and how to read the dashboard."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from metis_compaction_tui.actions import SCOPE_TITLES, actions_for, bindings_for

READING = (
    (
        "Pressure",
        "pending history tokens (§3.1: between the stable prefix and the preserved "
        "tail) against the threshold (soft) and hard cap (forced); ticks mark both.",
    ),
    (
        "Tokens",
        "history tokens at the end of each turn; ▼ and the accent colour mark a "
        "compaction (a truncation in the error colour).",
    ),
    (
        "Watermark",
        "stable prefix | Σ summaries | compactable span | held back | preserved tail, "
        "widths by tokens, message indexes inside; 'slid back' is §3.3 keeping a tool cycle whole.",
    ),
    (
        "Trigger",
        "what the next turn would do and why: skip, soft, forced, budget exhausted, "
        "no valid boundary; spend is compaction spend against the per-session budget.",
    ),
    (
        "Messages",
        "▌ zone colour · index · role · ╭╰ a tool cycle · tokens · text. Σ marks a "
        "summary (⏎ opens it beside the originals it replaced). Text is shown literally.",
    ),
    ("Events", "session.compaction_started / completed / failed, with failure modes."),
)


def help_text() -> Text:
    text = Text(end="")
    text.append("Keys\n", style="bold underline")
    for scope, title in SCOPE_TITLES.items():
        specs = [s for s in actions_for(scope) if s.keys]
        if not specs:
            continue
        text.append(f"\n{title}\n", style="bold")
        for spec in specs:
            text.append(f"  {spec.shown_key:>8}  ", style="bold")
            text.append(f"{spec.title}", style="")
            text.append(f" — {spec.description}\n", style="dim")
    text.append("\n  ↑ ↓ PgUp PgDn  move in a list (moving back pauses follow); Tab next pane\n")
    text.append("\nReading the dashboard\n", style="bold underline")
    for name, words in READING:
        text.append(f"\n{name}: ", style="bold")
        text.append(f"{words}\n")
    return text


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("help")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="dialog"):
            yield Static(help_text(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
