"""History tokens over turns, two rows of eighth-blocks (16 levels), compactions marked ▼.

Textual's Sparkline has no way to mark a point, so this draws its own: one column per turn (or per
bucket of turns when there are more turns than columns, each bucket showing its maximum), the
columns holding a compaction in the compaction colour with a ▼ above the bar.
"""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from metis_compaction_tui.sources.session_data import short_tokens
from metis_compaction_tui.timeline import Timeline
from metis_compaction_tui.widgets.fit import append_cells

LABEL = "Tokens    "
BLOCKS = " ▁▂▃▄▅▆▇█"


class TokenSparkline(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sparkline--label",
        "sparkline--bar",
        "sparkline--compaction",
        "sparkline--truncation",
        "sparkline--legend",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.timeline = Timeline()

    def set_points(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.refresh()

    def render(self) -> Text:
        style = self.get_component_rich_style
        width = max(10, self.size.width)
        timeline = self.timeline
        peak = timeline.peak
        now = timeline[-1].history_tokens if timeline else 0
        legend = f" now {short_tokens(now)} · peak {short_tokens(peak)} · ▼ {timeline.compactions}"
        columns = max(1, width - len(LABEL) - len(legend))
        buckets = timeline.columns(columns)
        top, bottom = Text(no_wrap=True, end=""), Text(no_wrap=True, end="")
        top.append(LABEL, style("sparkline--label"))
        count = len(timeline)
        turns = f"{short_tokens(count)} turn{'' if count == 1 else 's'}"  # a space before the bars
        bottom.append(turns[: len(LABEL) - 1].ljust(len(LABEL)), style("sparkline--legend"))
        scale = max(peak, 1)
        uppers: list[tuple[str, Style]] = []
        lowers: list[tuple[str, Style]] = []
        for value, mark in buckets:
            level = round(value / scale * 16)
            kind = "bar" if mark is None else "truncation" if mark == "truncation" else "compaction"
            cell_style = style(f"sparkline--{kind}")
            lower = BLOCKS[min(8, level)]
            upper = BLOCKS[max(0, level - 8)] if level > 8 else ("▼" if mark else " ")
            uppers.append((upper, cell_style))
            lowers.append((lower if level > 0 else ("▁" if value > 0 else " "), cell_style))
        append_cells(top, uppers)
        append_cells(bottom, lowers)
        top.append(" " * (columns - len(buckets)))
        bottom.append(" " * (columns - len(buckets)))
        top.append(legend, style("sparkline--legend"))
        text = Text(no_wrap=True, end="")
        text.append_text(top)
        text.append("\n")
        text.append_text(bottom)
        return text
