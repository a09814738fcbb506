"""§3.1 at a glance: pending history tokens against the threshold and the hard cap.

The bar has three zones (below threshold | soft | forced) drawn dim, filled solid up to the
pending count, with a tick at the threshold and at the hard cap; the line under it gives the
numbers and which zone the session is in. Limits and zone are the trigger decision's
(engine.TriggerDecision): the gauge draws them, it does not decide them.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from engine import PressureZone, TriggerDecision, pressure_zone
from metis_compaction_tui.sources.session_data import short_tokens
from metis_compaction_tui.widgets.fit import append_cells, first_fitting, lines

LABEL = "Pressure  "


class PressureGauge(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gauge--label",
        "gauge--below",
        "gauge--soft",
        "gauge--forced",
        "gauge--below-empty",
        "gauge--soft-empty",
        "gauge--forced-empty",
        "gauge--tick",
        "gauge--numbers",
        "gauge--zone-below",
        "gauge--zone-soft",
        "gauge--zone-forced",
    }

    pending: reactive[int] = reactive(0, layout=False)
    threshold: reactive[int] = reactive(30_000)
    hard_cap: reactive[int] = reactive(80_000)

    def set_pressure(self, decision: TriggerDecision) -> None:
        with self.prevent():
            self.threshold, self.hard_cap = decision.threshold_tokens, decision.hard_cap_tokens
        self.pending = decision.pending_history_tokens
        self.refresh()

    @property
    def zone(self) -> PressureZone:
        return pressure_zone(self.pending, self.threshold, self.hard_cap)

    def _scale(self) -> int:
        # Room past the hard cap so "over the cap" is visible, and never shorter than pending.
        return max(int(self.hard_cap * 1.15), int(self.pending * 1.05), 1)

    def render(self) -> Text:
        style = self.get_component_rich_style
        width = max(10, self.size.width)
        bar_width = max(4, width - len(LABEL) - 1)
        scale = self._scale()

        def cell_of(tokens: int) -> int:
            return min(bar_width - 1, round(tokens / scale * bar_width))

        thr_cell, cap_cell = cell_of(self.threshold), cell_of(self.hard_cap)
        filled = min(bar_width, round(self.pending / scale * bar_width))
        if self.pending > 0:
            filled = max(filled, 1)
        bar = Text(no_wrap=True, end="")
        bar.append(LABEL, style("gauge--label"))

        def cells() -> Iterator[tuple[str, Style]]:
            for cell in range(bar_width):
                zone = pressure_zone(cell, thr_cell, cap_cell).value  # the same rule, in cells
                if cell in (thr_cell, cap_cell):
                    yield ("┃" if cell < filled else "│"), style("gauge--tick")
                elif cell < filled:
                    yield "█", style(f"gauge--{zone}")
                else:
                    yield "░", style(f"gauge--{zone}-empty")

        append_cells(bar, cells())
        room = width - len(LABEL)
        numbers = first_fitting((partial(self._numbers, long) for long in (2, 1, 0)), room)
        return lines(bar, Text(" " * len(LABEL), end="") + numbers)

    def _numbers(self, detail: int) -> Text:
        """The numbers line, at three levels of detail (2: full words … 0: bare)."""
        style = self.get_component_rich_style
        zone_style = style(f"gauge--zone-{self.zone}")
        muted = style("gauge--numbers")
        text = Text(no_wrap=True, end="")
        if detail == 0:
            text.append(short_tokens(self.pending), zone_style)
            text.append(
                f" / {short_tokens(self.threshold)} / {short_tokens(self.hard_cap)} ", muted
            )
            text.append(self._zone_words(0), zone_style)
            return text
        text.append(f"{self.pending:,}", zone_style)
        if detail == 2:
            text.append(
                f" pending · threshold {self.threshold:,} · hard cap {self.hard_cap:,} · ", muted
            )
        else:
            text.append(f" pending · thr {self.threshold:,} · cap {self.hard_cap:,} · ", muted)
        text.append(self._zone_words(detail), zone_style)
        return text

    def _zone_words(self, detail: int) -> str:
        over_cap, over = self.pending - self.hard_cap, self.pending - self.threshold
        if self.zone is PressureZone.FORCED:
            return ("FORCED", f"FORCED +{over_cap:,}", f"FORCED (+{over_cap:,} over the cap)")[
                detail
            ]
        if self.zone is PressureZone.SOFT:
            return ("SOFT", f"SOFT +{over:,}", f"SOFT (+{over:,} over)")[detail]
        to_go = self.threshold - self.pending
        return ("below", f"below, {to_go:,} to go", f"below ({to_go:,} to go)")[detail]
