"""What-if: change a recording's §11 knobs and see the watermark, span and trigger move.

Only tunable sources (a transcript) take new knobs; a metis store's belong to metis dev. The
values are checked by `CompactionConfig` itself, so the error shown is the engine's, naming the
knob.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, Static

from engine import CompactionConfig, ConfigError, config_with_text
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.error_text import error_line

# (knob, label): integer knobs first, then the model; the rest keep their values.
KNOBS: tuple[tuple[str, str], ...] = (
    ("compaction_threshold_tokens", "threshold tokens"),
    ("compaction_hard_cap_tokens", "hard cap tokens"),
    ("compaction_preserve_recent_turns", "preserve recent"),
    ("compaction_max_summary_tokens", "max summary tokens"),
    ("compaction_model", "model"),
)


class KnobsScreen(ModalScreen[CompactionConfig | None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("knobs")

    def __init__(self, config: CompactionConfig, title: str) -> None:
        super().__init__()
        self.config = config
        self.session_title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="knobs", classes="dialog"):
            yield Static(Text(f"What-if knobs · {self.session_title}", style="bold"))
            yield Static(
                Text(
                    "Re-plan the recording under other knobs (Enter applies, Esc cancels). The "
                    "transcript is never written; what-if compactions made so far are dropped.",
                    style="dim",
                )
            )
            for knob, label in KNOBS:
                with Horizontal(classes="knob"):
                    yield Label(label, classes="knob-label")
                    field = Input(str(getattr(self.config, knob)), id=f"knob-{knob}")
                    field.cursor_blink = False
                    yield field
            yield Static("", id="knobs-error")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, _: Input.Submitted) -> None:
        self.action_apply()

    def action_apply(self) -> None:
        values = {knob: self.query_one(f"#knob-{knob}", Input).value for knob, _ in KNOBS}
        try:
            config = config_with_text(self.config, values)
        except ConfigError as error:
            self.query_one("#knobs-error", Static).update(Text(error_line(error, "checking")))
            return
        self.dismiss(config)

    def action_close(self) -> None:
        self.dismiss(None)
