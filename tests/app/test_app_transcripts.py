"""The app on agent transcripts (`inspect`): the agent panel, live tailing, what-if knobs and
a what-if compaction that never writes the transcript."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from textual.widgets import Input

from engine import CompactionConfig
from engine.layout import cache_path
from metis_compaction_tui.app import MetisInspector
from metis_compaction_tui.screens.compact_now import CompactNowScreen
from metis_compaction_tui.screens.knobs import KnobsScreen
from metis_compaction_tui.sources.transcript import TranscriptSource
from metis_compaction_tui.widgets.agent_panel import AgentPanel
from metis_compaction_tui.widgets.events_timeline import EventsTimeline
from metis_compaction_tui.widgets.message_list import MessageList
from metis_compaction_tui.widgets.session_list import session_prompt
from metis_compaction_tui.widgets.store_banner import StoreBanner
from metis_compaction_tui.widgets.trigger_panel import TriggerPanel
from tests.app.app_helpers import (
    SIZE,
    loaded,
    make_app,
    wait_until,
    wait_workers,
)
from tests.app.transcript_helpers import TRANSCRIPT_CONFIG as CONFIG
from tests.app.transcript_helpers import transcript_source
from tests.importers.test_importers import (
    CODEX_BEFORE_COMPACTING,
    COMPACTED,
    OURS,
    RECOUNT,
    SHARED,
    write_jsonl,
)
from tests.transcript_writer import ClaudeCodeWriter


def _app(path: Path, tmp_path: Path, config: CompactionConfig = CONFIG) -> MetisInspector:
    source = transcript_source(path, tmp_path, config)
    return MetisInspector(source, poll_interval_s=0.05)


async def test_a_real_claude_code_transcript_shows_the_agent_beside_our_engine(
    tmp_path: Path,
) -> None:
    path = tmp_path / "representative_messages.jsonl"
    shutil.copy(SHARED / "representative_messages.jsonl", path)
    app = _app(path, tmp_path, CompactionConfig(compaction_model="local:extractive"))
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        panel = app.query_one(AgentPanel)
        assert panel.display
        text = panel.render().plain
        assert "Agent" in text and "no compaction of its own" in text
        assert "would not compact" in text  # 907 tokens against the default 30,000 threshold
        assert "Usage" in text and "recorded" in text
        assert app.data is not None and app.data.message_count == 11


async def test_the_ours_line_says_why_ours_fires_every_turn_in_one_line_at_100_columns(
    tmp_path: Path,
) -> None:
    """v1 stand-in summaries pile past a small hard cap (§3.2): the agent panel's Ours row says
    from which turn every turn is forced and why, in one row that fits 100 columns."""
    writer = ClaudeCodeWriter(5)
    path = tmp_path / "long.jsonl"
    path.write_text("".join(line for _ in range(120) for line in writer.turn()))
    piled = CompactionConfig(
        compaction_model="local:extractive",
        compaction_threshold_tokens=1_500,
        compaction_hard_cap_tokens=3_000,
        compaction_max_summary_tokens=200,
    )
    app = _app(path, tmp_path, piled)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot, app)
        panel = app.query_one(AgentPanel)
        view = app.data.agent if app.data is not None else None
        assert view is not None and view.projected_forced is not None
        forced = view.projected_forced
        rows = panel.render().plain.splitlines()
        assert len(rows) == 3
        (ours,) = [row for row in rows if row.startswith("Ours")]
        assert len(ours) <= panel.size.width <= 100
        # The panel beside the session list is 72 columns: the wording that says most and fits.
        assert ours.startswith(f"Ours      {view.projected_count:,}; every turn ")
        assert f" {forced.turn:,} forced: summaries " in ours and "> cap 3.0k" in ours
        assert "…" not in ours  # a wording that fits, not one cut


async def test_the_app_tails_the_transcript_as_the_agent_writes_it(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(7, compact_every=4)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(writer.turn()))
    app = _app(path, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        assert app.data is not None and app.data.message_count == 4
        with open(path, "a") as out:
            for _ in range(8):
                out.writelines(writer.turn())
                out.flush()
                await pilot.pause(0.02)
        await wait_until(pilot, lambda: app.data is not None and app.data.message_count == 36)
        view = app.data.agent
        assert view is not None and len(view.compactions) == 2
        await wait_until(
            pilot,
            lambda: (
                "2 compaction(s) of its own" in app.query_one(AgentPanel).render().plain
                or "2 of its own" in app.query_one(AgentPanel).render().plain
            ),
        )
        last = app.data.history.messages[-1]
        assert last.role == "assistant"
        messages = app.query_one("#messages", MessageList)
        marked = [
            i for i in range(messages.row_count()) if "Σ agt" in messages.render_row(i, 90).plain
        ]
        assert [app.data.history.messages[i].id for i in marked] == [
            c.message_id for c in view.compactions
        ]


async def test_what_if_knobs_move_the_trigger_and_bad_values_are_named(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(8)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(line for _ in range(6) for line in writer.turn()))
    relaxed = CompactionConfig(compaction_model="local:extractive")
    app = _app(path, tmp_path, relaxed)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        assert "SKIP" in app.query_one(TriggerPanel).render().plain
        await pilot.press("w")
        assert isinstance(app.screen, KnobsScreen)
        threshold = app.screen.query_one("#knob-compaction_threshold_tokens", Input)
        threshold.value = "99999999"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, KnobsScreen)  # refused: above the hard cap
        error = str(app.screen.query_one("#knobs-error").render())
        assert "compaction_threshold_tokens" in error and "hard_cap" in error
        threshold.value = "500"
        await pilot.press("ctrl+s")
        await wait_workers(app)
        await wait_until(
            pilot,
            lambda: app.data is not None and app.data.config.compaction_threshold_tokens == 500,
            what="re-planned",
        )
        await pilot.pause()
        assert "SOFT" in app.query_one(TriggerPanel).render().plain
        assert "under these knobs" in app.query_one(AgentPanel).render().plain


async def test_a_what_if_compaction_never_writes_the_transcript(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(9)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(line for _ in range(20) for line in writer.turn()))
    original = path.read_bytes()
    app = _app(path, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        count = app.data.message_count if app.data else 0
        await pilot.press("c")
        assert isinstance(app.screen, CompactNowScreen)
        await wait_workers(app)
        await pilot.press("ctrl+r")
        await wait_workers(app)
        await pilot.pause()
        await pilot.press("a")
        await wait_workers(app)
        assert "transcript is unchanged" in str(app.screen.query_one("#cn-result").render())
        await pilot.press("escape")
        await wait_until(
            pilot, lambda: app.data is not None and app.data.message_count < count, what="spliced"
        )
        assert path.read_bytes() == original
        with open(path, "a") as out:
            out.writelines(writer.turn())
        await wait_until(
            pilot,
            lambda: (
                app.data is not None and app.data.history.messages[-1].id == writer_last_id(path)
            ),
            what="tailed after the what-if",
        )
    assert path.read_bytes().startswith(original)  # only the agent's append changed it
    assert cache_path(tmp_path / "scratch").exists()


def writer_last_id(path: Path) -> str:
    from metis_compaction_tui.importers import load_transcript

    return load_transcript(path).messages[-1].id


async def test_the_events_timeline_shows_the_agents_own_compaction(tmp_path: Path) -> None:
    path = tmp_path / "compacted.jsonl"
    shutil.copy(OURS / "claude-code" / "preserved_segment.jsonl", path)
    app = _app(path, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await loaded(pilot, app)
        events = app.query_one(EventsTimeline)
        assert events.row_count() == 1
        row = events.render_row(0, 120).plain
        assert "◆ agent" in row and "auto" in row
        assert "167k→21k tok" in row and "38.5 s" in row


async def test_an_agents_compaction_row_is_drawn_again_when_its_size_after_arrives(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rollout.jsonl"
    write_jsonl(path, [*CODEX_BEFORE_COMPACTING, COMPACTED])
    app = _app(path, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await loaded(pilot, app)
        events = app.query_one(EventsTimeline)
        assert "62k→? tok" in events.render_line(0).text  # drawn, so its strip is cached
        with open(path, "a") as out:
            out.write(RECOUNT + "\n")
        await wait_until(pilot, lambda: "62k→3.1k tok" in events.render_line(0).text)
        assert events.row_count() == 1


async def test_a_folder_lists_bad_files_with_their_problem_and_opens_a_good_one(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(OURS / "folder", folder)
    os.utime(folder / "unreadable.jsonl", (2e9, 2e9))  # the newest: listed first
    source = TranscriptSource.for_path(folder, scratch=tmp_path / "scratch", config=CONFIG)
    app = MetisInspector(source, poll_interval_s=0.05)
    notices = _record_notices(app)
    async with app.run_test(size=(140, 30)) as pilot:
        await loaded(pilot, app, "good-session")
        assert app.data is not None and app.data.message_count == 8
        # Read now: its row is listed again with its figures (it was "not read yet").
        await wait_until(
            pilot,
            lambda: any(r.read for r in app.rows if r.session_id == "good-session"),
            what="the read session's row",
        )
        shown = {
            row.session_id: session_prompt(row, False, 200).plain.split("\n")[1] for row in app.rows
        }
        assert shown["unreadable"].strip() == (
            "✗ not a transcript: binary data (NUL bytes), not lines of JSON"
        )
        assert "✗ not a transcript: 2 of 2 lines are JSON objects" in shown["notes"]
        assert "█" in shown["good-session"] or "░" in shown["good-session"]  # its pressure
        assert app.rows[0].session_id == "unreadable"
        await pilot.pause(0.3)
        assert not app.query_one(StoreBanner).display and notices == []


async def test_an_empty_session_says_why_once(tmp_path: Path) -> None:
    path = tmp_path / "agent-a7f3.jsonl"
    shutil.copy(OURS / "claude-code" / "agent-a7f3.jsonl", path)
    app = _app(path, tmp_path)
    notices = _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        why = "subagent log: 4 sidechain records, no main conversation"
        await wait_until(pilot, lambda: why in notices, what="the reason")
        await pilot.pause(0.3)
        assert notices == [why]


def _record_notices(app: MetisInspector) -> list[str]:
    """Every notice the app raises, kept (toasts expire; the count is what is tested)."""
    notices: list[str] = []
    notify = app.notify

    def recording(message: str, **kwargs: object) -> None:
        notices.append(message)
        notify(message, **kwargs)  # type: ignore[arg-type]

    app.notify = recording  # type: ignore[method-assign]
    return notices


async def test_a_malformed_line_is_skipped_and_noticed_once(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(10)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(writer.turn()))
    app = _app(path, tmp_path)
    notices = _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        count = app.data.message_count if app.data else 0
        with open(path, "a") as out:
            out.write('{"type": "user", "uuid": broken\n')  # line 6
            out.writelines(writer.turn())  # reading goes on past it
        await wait_until(
            pilot, lambda: app.data is not None and app.data.message_count > count, what="tail"
        )
        skipped = "1 line skipped (line 6: invalid JSON)"
        await wait_until(pilot, lambda: skipped in notices, what="the notice")
        await pilot.pause(0.3)  # several polls: the notice is not repeated
        with open(path, "a") as out:
            out.writelines(writer.turn())
        await wait_until(pilot, lambda: app.data is not None and app.data.message_count > count + 4)
        assert notices.count(skipped) == 1
        assert app.data.agent is not None and skipped in app.data.agent.notes
        await wait_until(
            pilot,
            lambda: f"⚠ {skipped}" in app.query_one(AgentPanel).render().plain,
            what="the note kept in the agent panel",
        )
        assert not app.query_one(StoreBanner).display and app.problem is None


async def test_a_file_lost_and_back_is_said_once_in_a_files_words(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(12)
    path = tmp_path / "live.jsonl"
    good = "".join(writer.turn())
    path.write_text(good)
    app = _app(path, tmp_path)
    notices = _record_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        path.write_bytes(b"\0" * 64)  # zeroed in place: no transcript record left
        banner = app.query_one(StoreBanner)
        await wait_until(pilot, lambda: banner.display, what="the banner")
        text = banner.render().plain
        assert "file unavailable" in text and "store" not in text
        assert "NUL bytes" in text
        await pilot.pause(0.5)  # the feed retries meanwhile: no "back" until it is
        assert not any("again" in n for n in notices)
        path.write_text(good)
        await wait_until(pilot, lambda: not banner.display, what="recovery")
        await pilot.pause(0.5)  # many polls later, still said once
        back = [n for n in notices if "readable again" in n]
        assert back == ["the file is readable again; reloaded"]
        assert not any("store" in n for n in notices)
        count = app.data.message_count if app.data else 0
        path.unlink()  # gone: a problem, not a session emptied
        await wait_until(pilot, lambda: banner.display, what="the banner again")
        assert "the file is gone" in banner.render().plain
        assert app.data is not None and app.data.message_count == count  # last data kept
        path.write_text(good)
        await wait_until(pilot, lambda: not banner.display, what="back again")
        await pilot.pause(0.3)
        assert [n for n in notices if "readable again" in n] == [back[0]] * 2


async def test_a_metis_store_refuses_what_if_knobs(workspace: Path) -> None:
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        await pilot.press("w")
        await pilot.pause()
        assert not isinstance(app.screen, KnobsScreen)
        assert any("belong to metis dev" in str(n.message) for n in app._notifications)
