"""§3.2-§3.3 and §7: stable prefix | summaries | compactable span | held back | preserved tail.

Segment widths follow tokens (what compaction is about), each non-empty zone at least a few cells
wide so a 3-message prefix never vanishes; each segment names its message indexes when they fit.
The line under it gives the watermark's position and how far it slid back for a tool cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from engine import SpanPlan
from metis_compaction_tui.sources.session_data import Zone, ZoneRange, short_tokens
from metis_compaction_tui.widgets.fit import first_fitting, lines

LABEL = "Watermark "
MIN_CELLS = 3
ZONE_SHORT = {
    Zone.PREFIX: "prefix",
    Zone.SUMMARY: "Σ",
    Zone.SPAN: "span",
    Zone.HELD: "held",
    Zone.TAIL: "tail",
}


def allocate(widths: Sequence[int], total: int, minimum: int = MIN_CELLS) -> list[int]:
    """Split `total` cells in proportion to `widths`, each non-zero entry at least `minimum`."""
    cells = [minimum if w > 0 else 0 for w in widths]
    spare = total - sum(cells)
    weight = sum(widths)
    if spare <= 0 or weight <= 0:
        return cells
    shares = [w / weight * spare for w in widths]
    cells = [c + int(s) for c, s in zip(cells, shares, strict=True)]
    remainders = sorted(range(len(widths)), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in remainders[: total - sum(cells)]:
        if widths[i] > 0:
            cells[i] += 1
    return cells


class WatermarkStrip(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "watermark--label",
        "watermark--prefix",
        "watermark--summary",
        "watermark--span",
        "watermark--held",
        "watermark--tail",
        "watermark--detail",
        "watermark--warning",
        "watermark--mark",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.zones: Sequence[ZoneRange] = ()
        self.span: SpanPlan | None = None
        self.message_count = 0
        self.floor = 0

    def set_watermark(
        self, zones: Sequence[ZoneRange], span: SpanPlan | None, message_count: int, floor: int
    ) -> None:
        self.zones, self.span, self.message_count, self.floor = zones, span, message_count, floor
        self.refresh()

    def _segment_label(self, zone_range: ZoneRange, cells: int) -> str:
        last = zone_range.end - 1
        indexes = str(zone_range.start) if zone_range.count == 1 else f"{zone_range.start}–{last}"
        for label in (
            f"{ZONE_SHORT[zone_range.zone]} {indexes} · {short_tokens(zone_range.tokens)}",
            f"{ZONE_SHORT[zone_range.zone]} {indexes}",
            indexes,
            ZONE_SHORT[zone_range.zone],
        ):
            if len(label) + 2 <= cells:
                return label
        return ""

    def render(self) -> Text:
        style = self.get_component_rich_style
        width = max(10, self.size.width)
        bar_width = max(5, width - len(LABEL) - 1)
        text = Text(no_wrap=True, end="")
        text.append(LABEL, style("watermark--label"))
        if not self.zones:
            text.append("empty session", style("watermark--detail"))
            return text
        cells = allocate([max(1, z.tokens) for z in self.zones], bar_width)
        for zone_range, count in zip(self.zones, cells, strict=True):
            if count <= 0:
                continue
            label = self._segment_label(zone_range, count)
            text.append(
                label.center(count)[:count], style(f"watermark--{zone_range.zone.name.lower()}")
            )
        room = width - len(LABEL)
        detail = first_fitting((partial(self._detail, level) for level in (2, 1, 0)), room)
        return lines(text, Text(" " * len(LABEL), end="") + detail)

    def _detail(self, level: int) -> Text:
        """The watermark line, at three levels of detail (2: full words … 0: bare)."""
        style = self.get_component_rich_style
        detail = Text(no_wrap=True, end="")
        span = self.span
        if span is None:
            held = next((z for z in self.zones if z.zone is Zone.HELD), None)
            if held is None:
                words = (
                    "nothing to compact yet",
                    "nothing to compact: all in the tail",
                    "nothing to compact yet: every message is in the preserved tail",
                )
                detail.append(words[level], style("watermark--detail"))
            else:
                where = f"{held.start}–{held.end - 1}"
                words = (
                    f"no boundary in {where}",
                    f"no tool-cycle boundary in {where}",
                    f"no tool-cycle boundary in {where}: no span to compact (§3.3)",
                )
                detail.append(words[level], style("watermark--warning"))
            return detail
        name = "watermark" if level == 2 else "wm"
        detail.append(f"{name} {span.compaction_watermark}", style("watermark--mark"))
        if span.slid_back_by:
            words = (
                f" ↶{span.slid_back_by}",
                f" slid back {span.slid_back_by} (tool cycle)",
                f" · slid back {span.slid_back_by} from {span.nominal_watermark} (tool cycle)",
            )
            detail.append(words[level], style("watermark--warning"))
        elif level:
            detail.append(" · on a boundary", style("watermark--detail"))
        last = span.compaction_watermark - 1
        words = (
            f" · {span.start}–{last} · {short_tokens(span.span_tokens)}",
            f" · span {span.start}–{last}: {span.span_message_count:,} msgs, "
            f"{short_tokens(span.span_tokens)} tok",
            f" · span {span.start}–{last}: {span.span_message_count:,} msgs, "
            f"{span.span_tokens:,} tok",
        )
        detail.append(words[level], style("watermark--detail"))
        return detail
