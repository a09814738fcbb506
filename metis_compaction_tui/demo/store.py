"""Demo sessions for screenshots, snapshots and tests: the demo workload's scripted coding session
played through a real SessionManager (local:extractive, offline and deterministic), so every
compaction, cache row and event on screen is one the engine really made.

`build_demo_workspace` writes a real store (`<workspace>/.metis/sessions.sqlite` and the cache);
`build_demo_memory` fills a MemorySource the same way, with no file and no clock in the picture.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

import msgspec

from engine import (
    CompactionConfig,
    ExtractiveSummarizer,
    Message,
    SessionManager,
    SummaryRequest,
    SummaryResult,
)
from metis_compaction_tui.demo.workload import scripted_session
from metis_compaction_tui.sources.memory import MemorySource

DEMO_MODEL = "local:extractive"

# (session id, title, turns, threshold, hard cap, budget): a long session that compacted twice,
# one whose spent budget let it run to the hard cap (a forced compaction), and a young one.
DEMO_SESSIONS: tuple[tuple[str, str, int, int, int, Decimal], ...] = (
    ("ledger", "ledger import: fix export + retries", 52, 14_000, 40_000, Decimal("0.20")),
    ("forced", "billing migration (budget spent)", 40, 8_000, 16_000, Decimal("0")),
    ("fresh", "docs pass", 6, 30_000, 80_000, Decimal("0.20")),
)


def demo_config(threshold: int, hard_cap: int, budget: Decimal) -> CompactionConfig:
    return CompactionConfig(
        compaction_threshold_tokens=threshold,
        compaction_hard_cap_tokens=hard_cap,
        compaction_preserve_recent_turns=6,
        compaction_model=DEMO_MODEL,
        compaction_max_cost_per_session_usd=budget,
    )


async def play(manager: SessionManager, turns: Iterable[list[Message]]) -> None:
    """What metis dev does: at the start of each turn the engine decides (§3.1), then the turn's
    messages are appended."""
    for number, turn in enumerate(turns):
        await manager.before_turn(turn_id=f"turn-{number:04d}")
        for message in turn:
            manager.append(message)
    await manager.aclose()


def build_demo_workspace(workspace: Path, *, seed: int = 7) -> Path:
    """A workspace with the demo sessions in a real store; returns the workspace."""
    from engine import SessionStore

    workspace.mkdir(parents=True, exist_ok=True)
    with SessionStore.open(workspace, create=True) as store:
        for session_id, title, turns, threshold, cap, budget in DEMO_SESSIONS:
            store.create_session(
                session_id, config=demo_config(threshold, cap, budget), title=title
            )
            manager = store.manager(session_id)
            try:
                asyncio.run(play(manager, scripted_session(seed=seed, turns=turns)))
            finally:
                if manager.cache is not None:
                    manager.cache.close()
    return workspace


class SteadySummarizer(ExtractiveSummarizer):
    """local:extractive with its latency reported as 0 ms: the same frame on every run."""

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        result = await super().summarize(request)
        return msgspec.structs.replace(result, latency_ms=0)


FIXED_CLOCK_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: snapshots show the same time


def build_demo_memory(*, seed: int = 7, workspace: Path | None = None) -> MemorySource:
    """The same sessions in a MemorySource (deterministic: no file, a fixed clock)."""
    source = MemorySource(
        "demo (in memory)",
        workspace=workspace,
        clock=lambda: FIXED_CLOCK_MS,
        summarizer=SteadySummarizer,
    )
    for session_id, title, turns, threshold, cap, budget in DEMO_SESSIONS:
        source.add_session(session_id, title=title, config=demo_config(threshold, cap, budget))
        with source.managing(session_id) as manager:
            asyncio.run(play(manager, scripted_session(seed=seed, turns=turns)))
    source.poll()  # the building is not news to an app opened afterwards
    return source
