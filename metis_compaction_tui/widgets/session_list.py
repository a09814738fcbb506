"""The workspace's sessions, each with a live pressure bar; pick one to inspect.

Titles are untrusted (the writer names sessions): each option is a `Text` built by safe_text,
never a str an OptionList would parse as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.color import Color, ColorParseError
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engine import TriggerAction
from metis_compaction_tui.actions import bindings_for
from metis_compaction_tui.safe_text import safe_text
from metis_compaction_tui.sources.base import SessionRow
from metis_compaction_tui.sources.session_data import short_tokens

BAR_CELLS = 8


Palette = dict[str, str]  # zone → colour, from the theme (below / soft / forced / dim)
DEFAULT_PALETTE: Palette = {"below": "green", "soft": "yellow", "forced": "red", "dim": "dim"}


def session_prompt(
    row: SessionRow, current: bool, width: int, palette: Palette = DEFAULT_PALETTE
) -> Text:
    """Two lines: the title, then a pressure bar against the hard cap with the numbers."""
    width = max(12, width)
    text = Text(no_wrap=True, end="")
    text.append("● " if current else "  ", "bold" if current else "")
    text.append_text(
        safe_text(
            row.title or row.session_id,
            "bold" if current else "",
            single_line=True,
            max_chars=width - 3,
        )
    )
    text.append("\n  ")
    if row.problem is not None:  # a file that cannot be read: why, not an empty pressure bar
        text.append_text(
            safe_text(f"✗ {row.problem}", palette["forced"], single_line=True, max_chars=width - 2)
        )
        return text
    scale = max(row.hard_cap_tokens, row.pending_history_tokens, 1)
    filled = min(BAR_CELLS, round(row.pending_history_tokens / scale * BAR_CELLS))
    colour = palette[row.zone.value]
    text.append("█" * filled, colour)
    text.append("░" * (BAR_CELLS - filled), palette["dim"])
    label = {TriggerAction.SKIP: "", TriggerAction.SOFT: " soft", TriggerAction.FORCED: " FORCED"}
    numbers = f" {short_tokens(row.pending_history_tokens)}/{short_tokens(row.threshold_tokens)}"
    room = width - text.cell_len + text.plain.rindex("\n") + 1  # what is left of line two
    action = label[row.action]
    if len(numbers) + len(action) > room:  # the word matters more than the threshold
        numbers = f" {short_tokens(row.pending_history_tokens)}"
    text.append(
        f"{numbers}{action}"[:room],
        colour if row.action is not TriggerAction.SKIP else palette["dim"],
    )
    return text


class SessionList(OptionList):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for("sessions")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[SessionRow] = []
        self.current: str | None = None

    def _palette(self) -> Palette:
        variables = self.app.theme_variables

        def colour(name: str, fallback: str) -> str:
            try:
                return Color.parse(variables[name]).hex6
            except (KeyError, ColorParseError):
                return fallback

        return {
            "below": colour("success", "green"),
            "soft": colour("warning", "yellow"),
            "forced": colour("error", "red"),
            "dim": "dim",
        }

    def show(self, rows: Sequence[SessionRow], current: str | None) -> None:
        """Replace the rows; keeps the highlight on the same session when it is still there."""
        highlighted = self.highlighted_option.id if self.highlighted_option else current
        same_ids = [r.session_id for r in rows] == [r.session_id for r in self.rows]
        self.rows, self.current = list(rows), current
        width = self.size.width - 2 if self.size.width else 24
        palette = self._palette()

        def prompt(row: SessionRow) -> Text:
            return session_prompt(row, row.session_id == current, width, palette)

        if same_ids and self.option_count == len(rows):
            for index, row in enumerate(rows):
                self.replace_option_prompt_at_index(index, prompt(row))
            return
        self.set_options(Option(prompt(row), id=row.session_id) for row in rows)
        ids = [r.session_id for r in rows]
        if highlighted in ids:
            self.highlighted = ids.index(highlighted)
        elif rows:
            self.highlighted = 0

    def restyle(self) -> None:
        """The theme changed: redraw the prompts in its colours."""
        rows, self.rows = self.rows, []
        self.show(rows, self.current)
