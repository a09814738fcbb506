"""A small deterministic app for the snapshot tests: the demo sessions held in memory (real
engine compactions, a fixed clock, no files), so every frame is the same on every machine."""

from __future__ import annotations

from metis_compaction_tui.app import MetisInspector
from metis_compaction_tui.demo.store import build_demo_memory


def make_snapshot_app(session_id: str = "ledger") -> MetisInspector:
    return MetisInspector(build_demo_memory(), session_id=session_id, poll_interval_s=0.05)


app = make_snapshot_app()

if __name__ == "__main__":
    app.run()
