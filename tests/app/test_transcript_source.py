"""TranscriptSource: a transcript tailed into a session, what-ifs that never touch the file."""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import shutil
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from engine import validate_history
from engine.layout import cache_path
from engine.policy.projection import project_compactions
from engine.summarizers import price_origin
from engine.summarizers.settings import PRICE_STATED, StatedPrice, SummarizerSettings
from metis_compaction_tui.importers import load_transcript
from metis_compaction_tui.sources.base import SourceUnavailable
from metis_compaction_tui.sources.recording import (
    discover_transcripts,
    read_recording,
    transcript_title,
)
from metis_compaction_tui.sources.session_data import (
    AGENT_COMPACTION,
    AgentCompactionView,
    SessionData,
    build_timeline,
    message_log,
)
from metis_compaction_tui.sources.transcript import TranscriptSource
from tests.app.transcript_helpers import TRANSCRIPT_CONFIG as CONFIG
from tests.app.transcript_helpers import consume, grow_by, transcript_source
from tests.importers.test_importers import (
    ALL_FIXTURES,
    CLAUDE,
    CODEX_BEFORE_COMPACTING,
    COMPACTED,
    OURS,
    RECOUNT,
    write_jsonl,
)
from tests.transcript_writer import ClaudeCodeWriter

FOLDER = OURS / "folder"


def _expected(path: Path) -> list[tuple[str, str, int]]:
    """The fresh import, as (id, role, blocks): what tailing must end up with."""
    return [(m.id, m.role.value, len(m.content)) for m in load_transcript(path).messages]


def _shape(data: SessionData) -> list[tuple[str, str, int]]:
    return [(m.id, m.role.value, len(m.content)) for m in data.history.messages]


@pytest.mark.parametrize("fixture", ALL_FIXTURES, ids=lambda p: p.name)
def test_a_transcript_tailed_in_random_chunks_ends_as_a_fresh_read(
    fixture: Path, tmp_path: Path
) -> None:
    data_bytes = fixture.read_bytes()
    live = tmp_path / fixture.name
    cut = max(1, len(data_bytes) // 5)
    live.write_bytes(data_bytes[:cut])
    source = transcript_source(live, tmp_path)
    session_id = source.sessions()[0].session_id
    data = source.load(session_id)
    rng = random.Random(fixture.name)
    position = cut
    with open(live, "ab", buffering=0) as writer:
        while position < len(data_bytes):
            size = rng.randint(1, 300)
            writer.write(data_bytes[position : position + size])
            position += size
            data = consume(source, data)
    data = consume(source, data)
    assert _shape(data) == _expected(live)
    validate_history(data.history.messages)
    assert not any(m.synthetic for m in data.history.messages)  # the agent's summaries are text
    fresh = read_recording(live, CONFIG)
    assert data.agent == fresh.view(data.agent.notes if data.agent else ())
    assert data.timeline == build_timeline(
        message_log(zip(data.history.messages, data.history.tokens, strict=True))
    )
    assert data.history.tokens == fresh.tokens
    # The agent's own compactions reach the events timeline as they are tailed, once each.
    loaded_fresh = transcript_source(live, tmp_path / "fresh").load(session_id)
    agent_rows = [r for r in data.events if r.event_type == AGENT_COMPACTION]
    assert agent_rows == [r for r in loaded_fresh.events if r.event_type == AGENT_COMPACTION]
    assert len(agent_rows) == len(fresh.compactions)


def test_a_growing_session_is_appended_or_rewritten_never_reloaded(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(2, compact_every=7)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(writer.turn()))
    source = transcript_source(live, tmp_path)
    data = source.load("live")
    reloads = rewrites = 0
    with open(live, "a") as out:
        for _ in range(30):
            for line in writer.turn():  # one record a poll, as the agent writes them
                out.write(line)
                out.flush()
                for change in source.poll():
                    reloads += change.compacted
                    rewrites += change.rewrite_from is not None
                    grow_by(data, change)
    assert reloads == 0
    assert rewrites >= 30  # the tool_use record joins the text record's message every turn
    assert _shape(data) == _expected(live)
    assert data.agent is not None and len(data.agent.compactions) == 30 // 7
    history = [(m, t) for m, t in zip(data.history.messages, data.history.tokens, strict=True)]
    assert list(data.agent.projected) == project_compactions(history, CONFIG)
    assert data.agent.projected, "30 turns cross a 2,000-token threshold"


def test_what_if_compaction_keeps_tailing_and_never_writes_the_file(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(3)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(line for _ in range(25) for line in writer.turn()))
    before = hashlib.sha256(live.read_bytes()).hexdigest()
    source = transcript_source(live, tmp_path)
    data = source.load("live")
    assert data.plan.decision.fires

    async def compact() -> str:
        with source.managing("live") as manager:
            prepared = await manager.prepare()
            outcome = manager.commit(prepared)
            await manager.aclose()
            return outcome.status

    assert asyncio.run(compact()) == "compacted"
    assert hashlib.sha256(live.read_bytes()).hexdigest() == before
    assert cache_path(tmp_path / "scratch").exists()
    data = consume(source, data)
    compacted = len(data.history)
    assert data.history.messages[data.history.floor - 1].metadata.compaction_span is not None
    with open(live, "a") as out:
        for _ in range(2):
            for line in writer.turn():
                out.write(line)
                out.flush()
                data = consume(source, data)
    assert len(data.history) == compacted + 8  # appended after the what-if summary
    assert [m.id for m in data.history.messages[-8:]] == [i for i, _, _ in _expected(live)[-8:]]
    assert data.compactions and not data.compactions[-1].undone
    undone = source.undo_latest("live")
    data = consume(source, data)
    assert undone.undone and _shape(data) == _expected(live)


def test_new_knobs_replan_from_the_recording(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(4)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(line for _ in range(25) for line in writer.turn()))
    source = transcript_source(live, tmp_path)
    data = source.load("live")
    assert data.agent is not None and data.agent.projected
    relaxed = msgspec.structs.replace(
        CONFIG, compaction_threshold_tokens=10**6, compaction_hard_cap_tokens=10**7
    )
    source.set_config("live", relaxed)
    data = consume(source, data)
    assert data.config == relaxed
    assert data.agent is not None and data.agent.projected == ()
    assert not data.plan.decision.fires


def test_a_malformed_line_is_skipped_and_named_in_the_notes(tmp_path: Path) -> None:
    live = tmp_path / "bad.jsonl"
    live.write_bytes((CLAUDE / "malformed_line.jsonl").read_bytes())
    source = transcript_source(live, tmp_path)
    data = source.load("bad")
    assert data.agent is not None and data.agent.line_count == 4  # read on past line 3
    assert len(data.history.messages) == len(load_transcript(live).messages) == 2
    assert data.agent.notes == ("1 line skipped (line 3: invalid JSON)",)
    assert source.sessions()[0].problem is None


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"\0" * 512, "bad.jsonl, line 1: not a transcript: binary data (NUL bytes)"),
        (b"garbage, no newline", "bad.jsonl, line 1: not a transcript: 19 bytes without a newline"),
        (b'{"title": "todo"}\n' * 3, "3 of 3 lines are JSON objects, none a Claude Code"),
    ],
)
def test_a_file_with_no_transcript_record_is_refused_saying_what_it_is(
    content: bytes, what: str, tmp_path: Path
) -> None:
    live = tmp_path / "bad.jsonl"
    live.write_bytes(content)
    source = transcript_source(live, tmp_path)
    with pytest.raises(SourceUnavailable, match=re.escape(what)):
        source.load("bad")
    (row,) = source.sessions()
    assert row.problem is not None and "not a transcript" in row.problem  # no empty session


def test_a_folder_lists_its_bad_files_with_their_problem_and_reads_the_rest(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(FOLDER, folder)
    source = TranscriptSource.for_path(folder, scratch=tmp_path / "s")
    for row in source.sessions():
        try:
            source.load(row.session_id)
        except SourceUnavailable as error:
            assert str(folder / f"{row.session_id}.jsonl") in error.problem
    rows = {row.session_id: row for row in source.sessions()}
    assert rows["good-session"].problem is None and rows["good-session"].message_count == 8
    assert "binary data (NUL bytes)" in (rows["unreadable"].problem or "")
    assert "none a Claude Code or Codex record" in (rows["notes"].problem or "")
    assert not rows["notes"].read
    assert source.poll() is not None  # a bad file does not stop the others being polled


def test_the_agents_compaction_is_an_event_with_trigger_tokens_and_duration(
    tmp_path: Path,
) -> None:
    live = tmp_path / "live.jsonl"
    lines = (CLAUDE / "preserved_segment.jsonl").read_bytes().splitlines(keepends=True)
    live.write_bytes(b"".join(lines[:6]))  # before the compaction
    source = transcript_source(live, tmp_path)
    data = source.load("live")
    assert data.events == []
    with open(live, "ab") as out:
        out.writelines(lines[6:])
    data = consume(source, data)
    (row,) = data.events
    assert row.event_type == AGENT_COMPACTION and row.event_id < 0  # apart from what-if ids
    event = row.event
    assert isinstance(event, AgentCompactionView)
    assert (event.trigger, event.pre_tokens, event.post_tokens, event.duration_ms) == (
        "auto",
        167_000,
        21_000,
        38_500,
    )
    assert row.created_at_ms > 0  # when the summary was written
    assert consume(source, data).events == [row]  # not again on the next poll


def test_a_codex_compactions_size_after_reaches_its_event_when_it_arrives(
    tmp_path: Path,
) -> None:
    live = tmp_path / "rollout.jsonl"
    write_jsonl(live, [*CODEX_BEFORE_COMPACTING, COMPACTED])
    source = transcript_source(live, tmp_path)
    data = source.load(source.sessions()[0].session_id)
    (row,) = data.events
    assert isinstance(row.event, AgentCompactionView) and row.event.post_tokens is None
    with open(live, "a") as out:
        out.write(RECOUNT + "\n")
    data = consume(source, data)
    (row,) = data.events  # the same row, now with the size after
    assert isinstance(row.event, AgentCompactionView)
    assert (row.event.pre_tokens, row.event.post_tokens) == (62_700, 3_150)
    assert data.agent is not None and data.agent.compactions[0].post_tokens == 3_150


def test_a_partial_last_line_is_waited_for(tmp_path: Path) -> None:
    writer = ClaudeCodeWriter(5)
    live = tmp_path / "live.jsonl"
    first, second = writer.turn(), writer.turn()
    live.write_text("".join(first) + second[0][:30])
    source = transcript_source(live, tmp_path)
    data = source.load("live")
    count = len(data.history)
    data = consume(source, data)
    assert len(data.history) == count  # half a record: nothing yet
    with open(live, "a") as out:
        out.write(second[0][30:])
    data = consume(source, data)
    assert len(data.history) == count + 1 and data.history.messages[-1].opens_turn


def test_discovery_lists_recent_transcripts_and_says_where_it_looked(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-me-proj"
    project.mkdir(parents=True)
    for name in ("a", "b", "agent-sub"):
        (project / f"{name}.jsonl").write_text("".join(ClaudeCodeWriter().turn()))
    found = discover_transcripts(tmp_path, limit=5)
    assert sorted(p.name for p in found) == ["a.jsonl", "b.jsonl"]  # sub-agent logs left out
    assert len(discover_transcripts(tmp_path, limit=1)) == 1
    with pytest.raises(FileNotFoundError, match="missing does not exist"):
        discover_transcripts(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no Claude Code or Codex transcripts .* under "):
        discover_transcripts(tmp_path / "empty")
    source = TranscriptSource.for_path(tmp_path, scratch=tmp_path / "s")
    rows = source.sessions()
    assert [r.read for r in rows] == [False, False]
    source.load(rows[0].session_id)
    assert source.sessions()[0].read
    assert source.sessions()[0].title.startswith("proj · ")


def test_a_long_first_read_reports_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metis_compaction_tui.importers import tail

    monkeypatch.setattr(tail, "_FEED_BATCH", 10)
    writer = ClaudeCodeWriter(6)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(line for _ in range(9) for line in writer.turn()))  # 45 lines
    source = transcript_source(live, tmp_path)
    reports: list[str] = []
    source.progress = reports.append
    source.load("live")
    assert reports == [f"reading live.jsonl: {p}% of 45 lines" for p in (22, 44, 66, 88, 100)]
    with open(live, "a") as out:
        out.writelines(writer.turn())
    source.poll()
    assert len(reports) == 5  # appends are quick: no progress for them


def test_what_ifs_use_the_summarizer_settings_they_are_given(tmp_path: Path) -> None:
    # `inspect` passes the workspace's summarizer.* (an unlisted model at a stated price):
    # without them, a what-if on that model is refused for want of a price.
    live = tmp_path / "live.jsonl"
    shutil.copy(CLAUDE / "preserved_segment.jsonl", live)
    model = "anthropic:llama-3.1-8b-local"
    price = StatedPrice(input_per_mtok=Decimal("0.5"), output_per_mtok=Decimal(2))
    settings = SummarizerSettings(model=model, price=price)
    config = msgspec.structs.replace(CONFIG, compaction_model=model)
    source = TranscriptSource(
        [live], scratch=tmp_path / "scratch", config=config, summarizer_settings=settings
    )
    with source.managing("live") as manager:
        assert price_origin(model, manager.summarizer_settings) == PRICE_STATED
        preview = manager.preview()
        assert preview is not None and preview.estimated_cost_usd > 0
    # The loaded session carries them too, so the panels price its savings at the stated rate.
    data = source.load("live")
    assert data.price_origin == PRICE_STATED
    assert data.summarizer == settings
    plain = transcript_source(live, tmp_path).load("live")
    assert plain.summarizer is None and plain.price_origin == price_origin(CONFIG.compaction_model)


def test_a_transcripts_title_reads_codexs_file_name_only_where_it_follows_codexs_pattern() -> None:
    codex = Path("/s/2025/05/07/rollout-2025-05-07T17-24-21-0199c0de-0000-7000-8000-000000000001")
    assert transcript_title(codex.with_suffix(".jsonl")) == "codex 05-07 17:24:21"
    # A rollout renamed by hand (or by another tool) is not cut into a garbled time.
    assert transcript_title(Path("/logs/rollout-019f-compact.jsonl")) == (
        "logs · rollout-019f-compact"
    )
    claude = Path("/p/-home-me-src-proj/7d1c0b7e-0000-4000-8000-000000000001.jsonl")
    assert transcript_title(claude) == "proj · 7d1c0b7e"
    assert transcript_title(Path("session.jsonl")) == "session"  # named bare: no empty folder
