"""The key to the colours the watermark strip and the message list share."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from metis_compaction_tui.widgets.fit import fit, lines

ENTRIES = (
    ("legend--prefix", "stable prefix"),
    ("legend--summary", "Σ summaries"),
    ("legend--span", "compactable span"),
    ("legend--held", "held back"),
    ("legend--tail", "preserved tail"),
)


class ZoneLegend(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {name for name, _ in ENTRIES} | {"legend--text"}

    def render(self) -> Text:
        style = self.get_component_rich_style
        width = max(4, self.size.width)
        rows = []
        for name, words in ENTRIES:
            row = Text(no_wrap=True, end="")
            row.append("▌", style(name))
            row.append(f" {words}", style("legend--text"))
            rows.append(fit(row, width))
        cycle = Text(no_wrap=True, end="")
        cycle.append("╭╰", style("legend--span"))
        cycle.append(" tool cycle", style("legend--text"))
        rows.append(fit(cycle, width))
        return lines(*rows)
