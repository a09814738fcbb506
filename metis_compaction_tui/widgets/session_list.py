"""The workspace's sessions, each with a live pressure bar; pick one to inspect.

Titles are untrusted (the writer names sessions): each option is a `Text` built by safe_text,
never a str an OptionList would parse as markup.
"""

from __future__ import annotations

from collections import Counter
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


def list_titles(rows: Sequence[SessionRow], max_chars: int) -> dict[str, str]:
    """Each session's title as the list shows it, no two alike: a title two sessions share gets
    the end of the session id; a title cut to `max_chars` is cut at its end, unless that leaves
    two rows reading the same: then cut around where the titles differ (the end of
    "project · 7d1c0b7e", a rollout's time, "run" against "rerun" in the middle), and failing
    that the end of the session id says which is which."""
    titles = {row.session_id: row.title or row.session_id for row in rows}
    shared = Counter(titles.values())
    titles = {
        sid: f"{title} ·{sid[-4:]}" if shared[title] > 1 and title != sid else title
        for sid, title in titles.items()
    }
    shown = {sid: _cut_end(title, max_chars) for sid, title in titles.items()}
    alike: dict[str, list[str]] = {}
    for sid, text in shown.items():
        alike.setdefault(text, []).append(sid)
    for group in (sids for sids in alike.values() if len(sids) > 1):
        differ = _first_difference([titles[sid] for sid in group])
        around = {sid: _cut_around(titles[sid], differ, max_chars) for sid in group}
        if len(set(around.values())) < len(group):
            around = {sid: _cut_end(titles[sid], max_chars - 6) + f" ·{sid[-4:]}" for sid in group}
        shown.update(around)
    return shown


def _cut_end(title: str, max_chars: int) -> str:
    return title if len(title) <= max_chars else title[: max_chars - 1] + "…"


def _first_difference(titles: list[str]) -> int:
    """The first position at which the titles do not all agree."""
    shortest = min(len(title) for title in titles)
    return next((i for i in range(shortest) if len({t[i] for t in titles}) > 1), shortest)


def _cut_around(title: str, differ: int, max_chars: int) -> str:
    """`title` in `max_chars`: its head, "…", and the part from just before `differ` on."""
    if len(title) <= max_chars:
        return title
    head = max(1, max_chars // 3)
    room = max_chars - head - 1
    start = min(max(head, differ - 2), len(title) - room)
    if start <= head:
        return _cut_end(title, max_chars)
    window = title[start : start + room]
    if start + room < len(title):
        window = window[:-1] + "…"
    return title[:head] + "…" + window


def session_prompt(
    row: SessionRow,
    current: bool,
    width: int,
    palette: Palette = DEFAULT_PALETTE,
    title: str | None = None,
) -> Text:
    """Two lines: the title, then a pressure bar against the hard cap with the numbers."""
    width = max(12, width)
    text = Text(no_wrap=True, end="")
    text.append("● " if current else "  ", "bold" if current else "")
    text.append_text(
        safe_text(
            title or row.title or row.session_id,
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
    if not row.read:  # a transcript read when picked: no figures yet, not a bar at zero
        text.append("not read yet · ⏎ reads it"[: width - 2], palette["dim"])
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
        moved = current != self.current  # another session is shown: the list follows it
        highlighted = (
            self.highlighted_option.id if self.highlighted_option and not moved else current
        )
        same_ids = [r.session_id for r in rows] == [r.session_id for r in self.rows]
        self.rows, self.current = list(rows), current
        # The rows' room: inside the border, less a scrollbar when one shows (24 before layout).
        width = self.scrollable_content_region.width if self.size.width else 24
        palette = self._palette()

        titles = list_titles(rows, max(12, width) - 3)

        def prompt(row: SessionRow) -> Text:
            current_row = row.session_id == current
            return session_prompt(row, current_row, width, palette, titles[row.session_id])

        ids = [r.session_id for r in rows]
        if same_ids and self.option_count == len(rows):
            for index, row in enumerate(rows):
                self.replace_option_prompt_at_index(index, prompt(row))
            if moved and current in ids:
                self.highlighted = ids.index(current)
        else:
            self.set_options(Option(prompt(row), id=row.session_id) for row in rows)
            if highlighted in ids:
                self.highlighted = ids.index(highlighted)
            elif rows:
                self.highlighted = 0
        # Once laid out: the highlighted session in view, wherever the rows put it.
        self.call_after_refresh(self.scroll_to_highlight)

    def on_resize(self) -> None:
        """Titles are cut to the list's width: cut again once it is known, or when it changes
        (the first rows may be shown before the layout)."""
        if self.rows:
            self.show(self.rows, self.current)

    def restyle(self) -> None:
        """The theme changed: redraw the prompts in its colours."""
        rows, self.rows = self.rows, []
        self.show(rows, self.current)
