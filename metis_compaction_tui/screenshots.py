"""`python -m metis_compaction_tui.screenshots [OUT_DIR]`: SVGs of the real app on a demo store.

A fresh demo workspace is built in a temp folder (the demo workload's scripted session through a
real SessionManager and the real SQLite store), then the real app is driven headless and each
view saved with `save_screenshot`: the dashboard mid-session, a forced compaction, a summary
beside its originals, the cache browser, and the compact-now preview. Then `inspect` on a real
Claude Code transcript (the shared fixture, read-only) under small what-if knobs, so the agent
panel, the span and our projected compactions all show on a short session.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from engine import CompactionConfig, SessionStore, estimate_message_tokens
from metis_compaction_tui.app import MetisInspector
from metis_compaction_tui.demo.store import build_demo_workspace
from metis_compaction_tui.demo.workload import scripted_session
from metis_compaction_tui.screens.cache_browser import CacheBrowserScreen
from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.screens.summary_detail import SummaryDetailScreen
from metis_compaction_tui.sources.store import StoreSource
from metis_compaction_tui.sources.transcript import TranscriptSource
from metis_compaction_tui.widgets.message_list import MessageList

SIZE = (100, 30)
WIDE = (160, 48)
Step = Callable[[Pilot[int], MetisInspector], Awaitable[None]]


async def _until(pilot: Pilot[int], condition: Callable[[], bool], timeout: float = 15) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("the app did not reach the state to photograph")
        await pilot.pause(0.05)


async def _settle(pilot: Pilot[int], app: MetisInspector) -> None:
    ending = [w for w in app.workers if w.group != "feed"]
    if ending:  # an empty list would mean every worker, and the feed never ends
        await app.workers.wait_for_complete(ending)
    await pilot.pause(0.2)


def mid_session(workspace: Path) -> None:
    """Four more turns of the ledger session, appended as metis dev would between compactions,
    so the dashboard shows a session past its threshold: the next turn would compact."""
    turns = list(scripted_session(seed=7, turns=56))[52:56]
    with SessionStore.open(workspace) as store:
        for turn in turns:
            for message in turn:
                store.append_message("ledger", message, estimate_message_tokens(message))


async def dashboard(pilot: Pilot[int], app: MetisInspector) -> None:
    await pilot.pause(0.2)


async def forced(pilot: Pilot[int], app: MetisInspector) -> None:
    app.select_session("forced")
    await _until(pilot, lambda: app.data is not None and app.data.session_id == "forced")
    await pilot.pause(0.2)


async def summary(pilot: Pilot[int], app: MetisInspector) -> None:
    messages = app.query_one("#messages", MessageList)
    index = max(i for i, m in enumerate(messages.messages) if m.metadata.compaction_span)
    messages.follow = False
    messages.cursor = index
    await pilot.press("enter")
    await _until(pilot, lambda: isinstance(app.screen, SummaryDetailScreen))
    await _settle(pilot, app)


async def cache(pilot: Pilot[int], app: MetisInspector) -> None:
    await pilot.press("b")
    await _until(pilot, lambda: isinstance(app.screen, CacheBrowserScreen))
    screen = app.screen
    assert isinstance(screen, CacheBrowserScreen)
    await _until(pilot, lambda: bool(screen.rows) and bool(screen.backers))
    await _settle(pilot, app)


async def compact_now(pilot: Pilot[int], app: MetisInspector) -> None:
    await pilot.press("c")
    await _until(pilot, lambda: isinstance(app.screen, CompactNowScreen))
    await _settle(pilot, app)
    await pilot.press(*"keep the LEDGER_TIMEOUT facts")
    await pilot.pause(0.2)


SHOTS: tuple[tuple[str, Step, tuple[int, int]], ...] = (
    ("dashboard-mid-session", dashboard, SIZE),
    ("dashboard-mid-session-wide", dashboard, WIDE),
    ("forced-compaction", forced, SIZE),
    ("summary-beside-originals", summary, SIZE),
    ("cache-browser", cache, SIZE),
    ("compact-now-preview", compact_now, SIZE),
)


async def shoot(workspace: Path, out: Path, name: str, step: Step, size: tuple[int, int]) -> Path:
    app = MetisInspector(StoreSource(workspace, poll_interval_s=0.05), poll_interval_s=0.05)
    async with app.run_test(size=size) as pilot:
        await _until(pilot, lambda: app.data is not None and app.rows != [])
        await pilot.pause(0.3)
        await step(pilot, app)
        for field in app.screen.query("Input"):
            field.cursor_blink = False  # type: ignore[attr-defined]
        path = app.save_screenshot(f"{name}.svg", str(out))
    return Path(path)


REAL_TRANSCRIPT = (
    Path(__file__).resolve().parents[2]
    / "shared/fixtures/transcripts/claude-code/representative_messages.jsonl"
)
WHAT_IF = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=300,
    compaction_hard_cap_tokens=900,
    compaction_preserve_recent_turns=2,
)


async def shoot_transcript(transcript: Path, out: Path, scratch: Path) -> Path:
    source = TranscriptSource([transcript], scratch=scratch, config=WHAT_IF)
    app = MetisInspector(source, poll_interval_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.data is not None and app.rows != [])
        await _until(pilot, lambda: all(row.message_count for row in app.rows))  # listed again
        await pilot.pause(0.3)
        path = app.save_screenshot("inspect-claude-code-transcript.svg", str(out))
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="metis-demo-") as tmp:
        workspace = build_demo_workspace(Path(tmp) / "workspace")
        mid_session(workspace)
        for name, step, size in SHOTS:
            path = asyncio.run(shoot(workspace, out, name, step, size))
            print(path)
        if REAL_TRANSCRIPT.is_file():
            print(asyncio.run(shoot_transcript(REAL_TRANSCRIPT, out, Path(tmp) / "scratch")))
        else:
            print(f"skipped the transcript shot: no {REAL_TRANSCRIPT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
