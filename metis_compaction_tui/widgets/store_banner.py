"""A banner over the dashboard while the store (or transcript file) cannot be read; the last
good data stays shown."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from metis_compaction_tui.safe_text import safe_text


class StoreBanner(Static):
    def show_problem(self, problem: str, noun: str = "store") -> None:
        """`noun` names the source as the user knows it: a store, or a (transcript) file."""
        text = Text(f"⚠ {noun} unavailable: ", style="bold", end="")
        text.append_text(safe_text(problem, single_line=True, max_chars=300))
        text.append(" · retrying; the last data read is shown below", style="italic")
        self.update(text)
        self.display = True

    def clear_problem(self) -> None:
        self.update(Text(""))
        self.display = False
