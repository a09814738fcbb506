"""A light read (TranscriptTail(light=True), what the status line reads) keeps no message text
and gives what a full read gives: the same messages by id, role, synthetic flag and tool ids,
the same usage, compactions and skipped counts, and token estimates equal to the engine's
estimate of the fully read messages. Read at once, and line by line as an agent writes it
(rewinds, relinked segments and parallel calls rebuild or extend the history as they arrive)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import CompactionConfig
from engine.messages import Message, TextContentBlock, ToolResultContentBlock, ToolUseContentBlock
from engine.tokens import estimate_message_tokens
from metis_compaction_tui.cli.transcripts import transcript_status
from metis_compaction_tui.importers import (
    AgentCompaction,
    RecordedUsage,
    TranscriptError,
    TranscriptTail,
    load_transcript,
)
from metis_compaction_tui.importers.model import NO_RESULT
from metis_compaction_tui.sources.recording import read_recording
from tests.transcript_writer import ClaudeCodeWriter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude-code"
# Every Claude Code fixture with a conversation (the others import no messages at all).
READABLE = sorted(p for p in FIXTURES.glob("*.jsonl") if load_transcript(p).messages)


def shape(message: Message) -> tuple[object, ...]:
    return (
        message.id,
        message.role,
        message.synthetic,
        message.tool_use_ids(),
        message.tool_result_ids(),
    )


def holds_no_text(message: Message) -> bool:
    """Shell blocks only: no text, no tool input, no tool output. (What the importer writes
    itself stays: a result answering no call is kept as text naming its call, and a call with
    no result recorded gets a placeholder saying so.)"""
    for block in message.content:
        if isinstance(block, TextContentBlock):
            if block.text and not block.text.startswith("[tool result "):
                return False
        elif isinstance(block, ToolUseContentBlock):
            if block.input or block.name:
                return False
        elif isinstance(block, ToolResultContentBlock) and block.content not in ("", NO_RESULT):
            return False
    return True


def test_the_fixtures_are_many() -> None:
    assert len(READABLE) >= 12  # the parametrisation below would pass on an empty folder


@pytest.mark.parametrize("path", READABLE, ids=lambda p: p.name)
def test_a_light_read_gives_what_a_full_read_gives_without_the_text(path: Path) -> None:
    full = TranscriptTail(path)
    whole = full.poll(final=True)
    light = TranscriptTail(path, light=True)
    read = light.poll(final=True)
    assert whole.tokens is None
    assert [shape(m) for m in read.messages] == [shape(m) for m in whole.messages]
    assert read.tokens == [estimate_message_tokens(m) for m in whole.messages]
    assert all(holds_no_text(m) for m in read.messages)
    assert any(m.text().strip() for m in whole.messages)  # so the line above could fail
    assert read.recorded_usage == whole.recorded_usage
    assert read.agent_compactions == whole.agent_compactions
    light_transcript, full_transcript = light.transcript(), full.transcript()
    assert light_transcript.skipped == full_transcript.skipped
    assert light_transcript.context_reductions == full_transcript.context_reductions
    assert light_transcript.warnings == full_transcript.warnings


@pytest.mark.parametrize("path", READABLE, ids=lambda p: p.name)
def test_a_light_tail_fed_line_by_line_ends_where_a_full_read_does(
    path: Path, tmp_path: Path
) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    log = tmp_path / path.name
    log.write_bytes(b"")
    tail = TranscriptTail(log, light=True)
    messages: list[Message] = []
    tokens: list[int] = []
    usage: list[RecordedUsage] = []
    compactions: list[AgentCompaction] = []
    for line in lines:
        with log.open("ab") as out:
            out.write(line)
        update = tail.poll()
        if update.reset:
            tokens.clear()
        update.apply(messages, usage, compactions)
        if update.tokens is not None:  # none before the format is known
            del tokens[update.rewrite_from :]
            tokens.extend(update.tokens)
        assert len(tokens) == len(messages)
    whole = load_transcript(path)
    assert [shape(m) for m in messages] == [shape(m) for m in whole.messages]
    assert tokens == [estimate_message_tokens(m) for m in whole.messages]
    assert usage == whole.recorded_usage
    assert compactions == whole.agent_compactions


def test_a_long_light_read_matches_the_full_estimates(tmp_path: Path) -> None:
    """Hundreds of turns with the agent's own compactions, read in small chunks."""
    log = tmp_path / "long.jsonl"
    writer = ClaudeCodeWriter(5, compact_every=7)
    with log.open("w") as out:
        for _ in range(300):
            out.writelines(writer.turn())
    whole = load_transcript(log)
    read = TranscriptTail(log, light=True).poll(final=True)
    assert read.tokens == [estimate_message_tokens(m) for m in whole.messages]
    assert len(read.messages) == len(whole.messages) > 1000
    assert read.agent_compactions == whole.agent_compactions


ALL = sorted((FIXTURES.parent).rglob("*.jsonl"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_status_from_a_light_read_is_status_from_a_full_read(path: Path) -> None:
    """`status --json` reads without message text under a strategy that plans without tool
    output: every figure it prints is the one a full read gives."""
    config = CompactionConfig(compaction_model="local:extractive")
    try:
        full = transcript_status(read_recording(path, config))
    except TranscriptError:
        return  # not a transcript: refused the same way whatever the read (tested elsewhere)
    light = transcript_status(read_recording(path, config, light=True))
    assert light == full


def test_a_tail_read_once_refuses_to_read_on(tmp_path: Path) -> None:
    """A tail read once (the refresher's) lets go of each record's content as it goes into the
    history: its one poll gives a full read's figures, and a poll that finds more raises rather
    than build a history it no longer holds the records for."""
    log = tmp_path / "once.jsonl"
    writer = ClaudeCodeWriter(9, compact_every=4)
    with log.open("w") as out:
        for _ in range(12):
            out.writelines(writer.turn())
    tail = TranscriptTail(log, light=True, once=True)
    read = tail.poll()
    whole = load_transcript(log)
    assert read.tokens == [estimate_message_tokens(m) for m in whole.messages]
    assert read.recorded_usage == whole.recorded_usage
    assert not tail.poll().changed  # nothing new: nothing to build
    with log.open("a") as out:
        out.writelines(writer.turn())
    with pytest.raises(RuntimeError, match="read once"):
        tail.poll()
