"""In the dashboard's place while a folder has no session store yet: what is missing, how a store
comes about, and that the app opens it when it appears (no figures of a session that is not)."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from metis_compaction_tui.safe_text import safe_text


class NoStorePanel(Static):
    def show_missing(self, path: Path) -> None:
        folder = shlex.quote(str(path.parent.parent))
        text = Text("No session store here yet\n", style="bold")
        text.append_text(safe_text(str(path), "dim", single_line=True, max_chars=200))
        text.append("\n\nmetis dev creates it when it starts its first session in this folder.")
        text.append("\n\nTo try the app now:\n  ")
        simulate = f"metis-compaction-tui simulate {folder}"
        text.append_text(safe_text(simulate, "bold", single_line=True, max_chars=200))
        text.append("   a simulated session, written here\n  ")
        text.append("metis-compaction-tui demo", style="bold")
        text.append("   a demo in a temporary folder\n\n")
        text.append("This screen opens the store as soon as it appears.", style="italic")
        self.update(text)
        self.display = True
