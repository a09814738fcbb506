"""Transcript importers: the shared real Claude Code logs, our own edge cases, and tailing."""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path

import msgspec
import pytest

from engine.messages import (
    HistoryError,
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    validate_history,
)
from metis_compaction_tui.importers import (
    AgentCompaction,
    RecordedUsage,
    TranscriptError,
    TranscriptTail,
    default_transcript_roots,
    find_transcripts,
    load_transcript,
)
from metis_compaction_tui.importers.codex import parse_arguments

SHARED = Path("/work/shared/fixtures/transcripts/claude-code")
OURS = Path(__file__).parents[1] / "fixtures" / "transcripts"
CLAUDE = OURS / "claude-code"
CODEX_ROLLOUT = next((OURS / "codex").glob("rollout-*.jsonl"))
# Every transcript fixture, ours and shared (the folder's deliberately bad files are not ones).
NOT_TRANSCRIPTS = {"unreadable.jsonl", "notes.jsonl"}
ALL_FIXTURES = [
    *sorted(SHARED.glob("*.jsonl")),
    *sorted(p for p in OURS.rglob("*.jsonl") if p.name not in NOT_TRANSCRIPTS),
]


def write_jsonl(path: Path, lines: list[str]) -> None:
    """A log of these lines, each ended as an agent ends it."""
    path.write_text("".join(line + "\n" for line in lines))


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def texts(message: Message) -> list[str]:
    return [b.text for b in message.content if isinstance(b, TextContentBlock)]


# --- the shared real transcripts ------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SHARED.glob("*.jsonl")), ids=lambda p: p.name)
def test_shared_fixture_imports_and_validates(path: Path) -> None:
    transcript = load_transcript(path)
    assert transcript.format == "claude-code"
    assert transcript.messages
    assert transcript.warnings == []
    validate_history(transcript.messages)


def test_representative_messages_unlinked_records_import_in_file_order() -> None:
    # Every record there has parentUuid null: file order is the only order there is.
    transcript = load_transcript(SHARED / "representative_messages.jsonl")
    assert transcript.session_id == "test_session"
    assert ids(transcript.messages) == [f"msg_{i:03d}" for i in range(1, 12)]
    assert transcript.skipped == {"summary": 1}
    assert transcript.line_count == 12
    tool_use = transcript.messages[3].content[0]
    assert isinstance(tool_use, ToolUseContentBlock) and tool_use.name == "Edit"
    result = transcript.messages[4].content[0]
    assert isinstance(result, ToolResultContentBlock) and result.tool_use_id == "tool_001"
    assert [u.output_tokens for u in transcript.recorded_usage] == [120, 85, 95, 35, 110]


def test_todowrite_consecutive_records_merge() -> None:
    transcript = load_transcript(SHARED / "todowrite_examples.jsonl")
    roles = [m.role for m in transcript.messages]
    assert roles == [Role.USER, Role.ASSISTANT] * 3 + [Role.USER]
    # Text and tool_use arrive as two assistant records with different message ids.
    assert [type(b) for b in transcript.messages[1].content] == [
        TextContentBlock,
        ToolUseContentBlock,
    ]
    # A tool result, then the user's next prompt: one user message, result first.
    assert texts(transcript.messages[4]) == ["Can you add a task for security review as well?"]
    assert len(transcript.recorded_usage) == 6
    assert transcript.recorded_usage[0].message_index == 1


# --- our Claude Code fixtures ---------------------------------------------------------------


def test_rewind_imports_only_the_active_branch() -> None:
    transcript = load_transcript(CLAUDE / "rewound_branch.jsonl")
    assert ids(transcript.messages) == ["u1", "a1", "u2b", "a2b"]
    assert transcript.skipped == {"summary": 1, "file-history-snapshot": 1, "inactive_branch": 2}


def test_compact_boundary_and_summary() -> None:
    transcript = load_transcript(CLAUDE / "compact_boundary.jsonl")
    validate_history(transcript.messages)
    assert transcript.agent_compactions == [
        AgentCompaction(message_index=4, trigger="auto", pre_tokens=155012, line_number=5),
        AgentCompaction(message_index=6, trigger="manual", pre_tokens=40500, line_number=9),
    ]
    # logicalParentUuid carries the chain across both boundaries: nothing before is lost.
    assert ids(transcript.messages)[:4] == ["c1", "c2", "c3", "c4"]
    summary = transcript.messages[4]
    assert summary.role is Role.USER and summary.synthetic
    assert texts(summary)[0].startswith("This session is being continued")
    assert [m.synthetic for m in transcript.messages] == [False] * 4 + [True, False, True, False]
    assert transcript.skipped == {}


def test_split_records_merge_into_one_message_each() -> None:
    transcript = load_transcript(CLAUDE / "split_tool_results.jsonl")
    assistant, results = transcript.messages[1], transcript.messages[2]
    assert assistant.tool_use_ids() == ("toolu_a", "toolu_b")
    assert texts(assistant) == ["Reading both files."]  # the thinking block is not shown
    # Results arrived b then a; they are kept in call order.
    assert results.tool_result_ids() == ("toolu_a", "toolu_b")
    assert [b.content for b in results.content] == ["print('a')", "print('b')"]  # type: ignore[union-attr]
    # One usage entry per API response, with the last (largest) output count.
    assert [(u.message_index, u.output_tokens) for u in transcript.recorded_usage] == [
        (1, 51),
        (3, 12),
    ]
    usage = transcript.recorded_usage[0]
    assert usage.context_tokens == 4 + 9000 + 300
    assert transcript.skipped == {"thinking": 1}


def test_sidechain_records_are_skipped() -> None:
    transcript = load_transcript(CLAUDE / "sidechain.jsonl")
    assert ids(transcript.messages) == ["m1", "m2", "m3", "m4"]
    assert transcript.skipped == {"sidechain": 4}
    assert "toolu_grep" not in str(transcript.messages)


def test_unknown_records_are_counted_and_the_chain_runs_through_them() -> None:
    transcript = load_transcript(CLAUDE / "unknown_record.jsonl")
    assert ids(transcript.messages) == ["k1", "k2", "k3"]
    assert transcript.skipped == {
        "queue-operation": 1,
        "progress": 1,
        "system.local_command": 1,
        "hologram-projection": 1,
    }


def test_malformed_line_is_skipped_and_named() -> None:
    transcript = load_transcript(CLAUDE / "malformed_line.jsonl")
    assert transcript.skipped_lines == [(3, "invalid JSON")]
    assert transcript.warnings[0] == "1 line skipped (line 3: invalid JSON)"
    assert transcript.skipped["invalid"] == 1
    assert transcript.messages  # the rest of the file is read


def test_interrupted_tool_use_gets_a_synthesized_result() -> None:
    transcript = load_transcript(CLAUDE / "interrupted_tool_use.jsonl")
    validate_history(transcript.messages)
    placeholder = transcript.messages[2].content[0]
    assert placeholder == ToolResultContentBlock("toolu_long", "(no result recorded)", True)
    assert texts(transcript.messages[2]) == ["[Request interrupted by user for tool use]"]
    # The call still running at the end of the log stays pending.
    assert transcript.messages[-1].tool_use_ids() == ("toolu_fast",)
    with pytest.raises(HistoryError):
        validate_history(transcript.messages, allow_pending_tool_use=False)


def test_partial_last_line_is_left_unread() -> None:
    transcript = load_transcript(CLAUDE / "partial_last_line.jsonl")
    assert ids(transcript.messages) == ["q1", "q2"]
    assert transcript.line_count == 2
    assert transcript.warnings == ["1 line skipped (line 3: unfinished last line: not read)"]
    assert transcript.skipped["incomplete"] == 1


def test_image_in_user_content_becomes_a_placeholder(tmp_path: Path) -> None:
    # rewound_branch's abandoned u2 carries an image; put it on the active branch.
    lines = (CLAUDE / "rewound_branch.jsonl").read_text().splitlines()[:4]
    path = tmp_path / "image.jsonl"
    write_jsonl(path, lines)
    transcript = load_transcript(path)
    assert texts(transcript.messages[-1]) == ["Now one about stones.", "[image]"]


def _cc_line(uuid: str, parent: str | None, kind: str, content: object, **extra: object) -> str:
    message = {"role": kind, "content": content, **extra}
    record = {"type": kind, "uuid": uuid, "parentUuid": parent, "message": message}
    return msgspec.json.encode(record).decode()


def test_odd_content_shapes_keep_the_record_and_its_objects(tmp_path: Path) -> None:
    # A content the typed decoder refuses (an object, a list holding a non-object, a number) is
    # read leniently: the record stays on the chain, and only a list's objects become blocks.
    rows = [
        _cc_line("u1", None, "user", ["loose string", 7, {"type": "text", "text": "hello"}]),
        _cc_line("a1", "u1", "assistant", {"type": "text", "text": "an object, not a list"}),
        _cc_line("u2", "a1", "user", 42),
        _cc_line("a2", "u2", "assistant", [{"type": "text", "text": 5}, {"type": 3}]),
        _cc_line("u3", "a2", "user", "last"),
    ]
    path = tmp_path / "odd.jsonl"
    write_jsonl(path, rows)
    transcript = load_transcript(path)
    assert transcript.skipped_lines == []
    assert ids(transcript.messages) == ["u1", "a2", "u3"]  # a1 and u2 carry no block
    assert texts(transcript.messages[0]) == ["hello"]
    assert texts(transcript.messages[1]) == ["[3]"]  # a block of an unknown type: named
    assert texts(transcript.messages[2]) == ["last"]
    validate_history(transcript.messages)


def test_the_session_id_is_the_first_one_written(tmp_path: Path) -> None:
    # None on the first record; the second names it; a later record (read leniently, for its
    # odd content) names another one, which does not replace it.
    rows = [
        _cc_line("u1", None, "user", "first"),
        _cc_line("a1", "u1", "assistant", "answer"),
        _cc_line("u2", "a1", "user", {"odd": "content"}),
    ]
    records = [msgspec.json.decode(row) for row in rows]
    records[1]["sessionId"] = "session-one"
    records[2]["sessionId"] = "session-two"
    path = tmp_path / "ids.jsonl"
    path.write_bytes(b"\n".join(msgspec.json.encode(r) for r in records) + b"\n")
    assert load_transcript(path).session_id == "session-one"


def test_a_bad_field_beside_the_content_still_skips_the_record(tmp_path: Path) -> None:
    rows = [
        _cc_line("u1", None, "user", "first"),
        _cc_line("a1", "u1", "assistant", {"odd": True}, id=12),  # an id must be a string
        _cc_line("u2", "u1", "user", "second"),
    ]
    path = tmp_path / "badfield.jsonl"
    write_jsonl(path, rows)
    transcript = load_transcript(path)
    assert [n for n, _ in transcript.skipped_lines] == [2]
    # The field at fault is named, not the odd content the lenient read got past.
    assert transcript.skipped_lines[0][1] == (
        "unexpected record shape (Expected `str | null`, got `int` - at `$.message.id`)"
    )


def test_a_text_reading_tool_use_is_not_a_parallel_call(tmp_path: Path) -> None:
    # Two answers under one parent, neither with an API id: siblings only when both call a tool.
    # One's text is the word tool_use (its JSON holds "tool_use", which a byte search took for a
    # call), so it is a regenerated answer, not a call.
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": "x"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    rows = [
        _cc_line("u1", None, "user", "go"),
        _cc_line("a1", "u1", "assistant", [{"type": "text", "text": "tool_use"}]),
        _cc_line("a2", "u1", "assistant", [call]),
        _cc_line("r2", "a2", "user", [result]),
    ]
    path = tmp_path / "quoted.jsonl"
    write_jsonl(path, rows)
    transcript = load_transcript(path)
    assert ids(transcript.messages) == ["u1", "a2", "r2"]
    assert transcript.skipped.get("inactive_branch") == 1


# --- Codex ----------------------------------------------------------------------------------


def test_codex_rollout_with_every_item_type() -> None:
    transcript = load_transcript(CODEX_ROLLOUT)
    messages = transcript.messages
    validate_history(messages)
    assert transcript.format == "codex"
    assert transcript.session_id == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert texts(messages[0]) == ["List the files, then add a README.", "[image]"]
    ls, bad = messages[1].content
    assert ls == ToolUseContentBlock(
        "call_ls", "shell", {"command": ["ls", "-a"], "workdir": "/tmp/proj"}
    )
    assert bad == ToolUseContentBlock("call_bad", "shell", {"raw": "{not json"})
    assert messages[2].tool_result_ids() == ("call_ls", "call_bad")
    patch = messages[3].content[0]
    assert isinstance(patch, ToolUseContentBlock) and patch.name == "apply_patch"
    assert str(patch.input["input"]).startswith("*** Begin Patch")
    assert messages[5].content[0] == ToolUseContentBlock(
        "call_cat",
        "local_shell",
        {"type": "exec", "command": ["cat", "README.md"], "timeout_ms": 10000},
    )
    assert messages[6].content[0] == ToolResultContentBlock(
        "call_cat", "cat: permission denied", True
    )
    assert transcript.agent_compactions == [
        AgentCompaction(message_index=8, trigger=None, pre_tokens=5420, line_number=26)
    ]
    assert messages[8].synthetic and texts(messages[8])[0].startswith("Summary:")
    # The interrupted pytest call is answered by a placeholder.
    assert messages[10].content[0] == ToolResultContentBlock(
        "call_pytest", "(no result recorded)", True
    )
    assert "gAAAAABo" not in str(messages)  # encrypted reasoning never surfaces
    assert transcript.skipped == {
        "message.developer": 1,
        "message.user_context": 3,
        "turn_context": 2,
        "event_msg.user_message": 1,
        "reasoning": 1,
        "event_msg.agent_reasoning": 1,
        "web_search_call": 1,
        "event_msg.agent_message": 1,
        "event_msg.turn_aborted": 1,
        "ghost_snapshot": 1,
    }
    # input_tokens minus cached; the repeated token_count event is recorded once.
    usage = [
        (u.message_index, u.input_tokens, u.cache_read_tokens) for u in transcript.recorded_usage
    ]
    assert usage == [(1, 904, 4096), (3, 200, 5000), (7, 200, 5200), (11, 900, 0)]
    assert transcript.line_count == 36


def codex_line(kind: str, payload: dict[str, object]) -> str:
    return msgspec.json.encode(
        {"timestamp": "2026-02-01T09:00:00.000Z", "type": kind, "payload": payload}
    ).decode()


def codex_usage(total: int, last_input: int, last_output: int, last_total: int) -> str:
    """A token_count event: the session's running total, and the latest response's usage
    (input and output both 0 is Codex's own count of its history, `last_total`)."""
    last = {
        "input_tokens": last_input,
        "cached_input_tokens": 0,
        "output_tokens": last_output,
        "reasoning_output_tokens": 0,
        "total_tokens": last_total,
    }
    info = {
        "total_token_usage": {"input_tokens": total, "output_tokens": 0, "total_tokens": total},
        "last_token_usage": last,
        "model_context_window": 258400,
    }
    return codex_line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})


def codex_message(role: str, text: str) -> str:
    kind = "input_text" if role == "user" else "output_text"
    content = [{"type": kind, "text": text}]
    return codex_line("response_item", {"type": "message", "role": role, "content": content})


CODEX_BEFORE_COMPACTING = [
    codex_line("session_meta", {"id": "0199c0de-0000-7000-8000-000000000001"}),
    codex_message("user", "Port the parser"),
    codex_message("assistant", "Ported it."),
    codex_usage(61_000, 61_000, 400, 61_400),  # the turn
    codex_usage(122_000, 61_800, 900, 62_700),  # the summary request
]
COMPACTED = codex_line("compacted", {"message": "Summary: the parser was ported."})
RECOUNT = codex_usage(122_000, 0, 0, 3_150)  # the history after: totals unchanged


@pytest.mark.parametrize("recount_first", [False, True], ids=["after", "before"])
def test_codex_compaction_takes_the_recount_codex_writes_beside_it(
    tmp_path: Path, recount_first: bool
) -> None:
    # Codex counts the history it rebuilt and writes that count just after the compacted
    # record (just before it, in older versions); the session totals do not move, so a
    # dedupe on totals alone lost it and the compaction showed "?" for its size after.
    lines = [RECOUNT, COMPACTED] if recount_first else [COMPACTED, RECOUNT]
    path = tmp_path / "rollout.jsonl"
    write_jsonl(path, [*CODEX_BEFORE_COMPACTING, *lines])
    transcript = load_transcript(path)
    [compaction] = transcript.agent_compactions
    assert (compaction.pre_tokens, compaction.post_tokens) == (62_700, 3_150)
    # The count is no model response: no usage recorded for it.
    assert [u.context_tokens for u in transcript.recorded_usage] == [61_000, 61_800]


def test_codex_recount_after_a_response_is_not_a_compactions_size(tmp_path: Path) -> None:
    # A rewind also recounts; one that follows a later response says nothing of the compaction.
    path = tmp_path / "rollout.jsonl"
    later = [codex_message("assistant", "Next."), codex_usage(130_000, 3_300, 10, 3_310)]
    write_jsonl(path, [*CODEX_BEFORE_COMPACTING, COMPACTED, *later, RECOUNT])
    [compaction] = load_transcript(path).agent_compactions
    assert compaction.post_tokens is None


def test_codex_recount_is_taken_by_one_compaction_only(tmp_path: Path) -> None:
    # Two compactions in a row, each recounted after it: the first recount is not the second
    # compaction's size, and the second's own recount (the same figures again) is not a repeat.
    path = tmp_path / "rollout.jsonl"
    second = codex_usage(122_000, 0, 0, 2_000)
    lines = [*CODEX_BEFORE_COMPACTING, COMPACTED, RECOUNT, COMPACTED, second, COMPACTED, second]
    write_jsonl(path, lines)
    compactions = load_transcript(path).agent_compactions
    assert [c.post_tokens for c in compactions] == [3_150, 2_000, 2_000]


def test_codex_rewind_recount_gives_way_to_the_compactions_own(tmp_path: Path) -> None:
    # A rewind's recount just before a compaction is taken for want of better, and the
    # compaction's own recount written after it replaces it.
    path = tmp_path / "rollout.jsonl"
    rewind = codex_usage(122_000, 0, 0, 50_000)
    lines = [*CODEX_BEFORE_COMPACTING, rewind, COMPACTED, RECOUNT]
    write_jsonl(path, lines)
    [compaction] = load_transcript(path).agent_compactions
    assert compaction.post_tokens == 3_150


def test_tail_sends_a_compaction_again_when_its_size_after_arrives(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    write_jsonl(path, [*CODEX_BEFORE_COMPACTING, COMPACTED])
    tail = TranscriptTail(path)
    messages: list[Message] = []
    usage: list[RecordedUsage] = []
    compactions: list[AgentCompaction] = []
    tail.poll().apply(messages, usage, compactions)
    assert [c.post_tokens for c in compactions] == [None]
    with open(path, "a") as writer:
        writer.write(RECOUNT + "\n")
    update = tail.poll()
    assert update.changed and not update.reset and update.compactions_from == 0
    update.apply(messages, usage, compactions)
    assert [(c.pre_tokens, c.post_tokens) for c in compactions] == [(62_700, 3_150)]
    assert not tail.poll().changed  # sent once


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("[1, 2]") == {"raw": "[1, 2]"}
    assert parse_arguments("{broken") == {"raw": "{broken"}


# --- detection and discovery ----------------------------------------------------------------


def test_format_is_detected_from_content_not_name(tmp_path: Path) -> None:
    shutil.copy(CODEX_ROLLOUT, tmp_path / "session.jsonl")
    shutil.copy(SHARED / "session_b.jsonl", tmp_path / "rollout-odd.jsonl")
    assert load_transcript(tmp_path / "session.jsonl").format == "codex"
    assert load_transcript(tmp_path / "rollout-odd.jsonl").format == "claude-code"


def test_unrecognised_format_and_empty_file(tmp_path: Path) -> None:
    (tmp_path / "other.jsonl").write_text('{"kind": "x"}\n')
    with pytest.raises(TranscriptError, match=r"other\.jsonl:1: not a transcript: 1 of 1 line "):
        load_transcript(tmp_path / "other.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"kind": "x"}\n{"type": "us\n')
    with pytest.raises(TranscriptError, match=r"broken\.jsonl:1: not a transcript: 1 of 2 "):
        load_transcript(tmp_path / "broken.jsonl")
    (tmp_path / "binary.jsonl").write_bytes(b"\x00\x01PK\x03\n\xff\xfe\n")
    with pytest.raises(TranscriptError, match=r"binary data \(NUL bytes\), not lines of JSON"):
        load_transcript(tmp_path / "binary.jsonl")
    (tmp_path / "text.jsonl").write_bytes(b"just\nsome text\n")
    with pytest.raises(TranscriptError, match=r"none of its 2 lines is JSON"):
        load_transcript(tmp_path / "text.jsonl")
    # No newline at all: refused, not read as an empty transcript (and not waited on by a tail).
    for name, data, what in [
        ("zeros.jsonl", b"\0" * 100, "binary data (NUL bytes)"),
        ("words.jsonl", b"no newline here", "15 bytes without a newline, not JSON"),
    ]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(TranscriptError, match=re.escape(f"{name}:1: not a transcript: {what}")):
            load_transcript(tmp_path / name)
        tail = TranscriptTail(tmp_path / name)
        tail.poll()  # a tail waits for lines; it is told to refuse what will never be one
        with pytest.raises(TranscriptError, match=re.escape(what)):
            tail.refuse_undecided()
    # A record cut before its end and nothing else: waited for by a tail, refused by a load.
    (tmp_path / "cut.jsonl").write_bytes(b'{"type": "user", "uuid": "u1", "mess')
    cut = TranscriptTail(tmp_path / "cut.jsonl")
    assert not cut.poll().changed
    cut.refuse_undecided()  # it may still be finished
    with pytest.raises(TranscriptError, match=r"cut\.jsonl:1: not a transcript: 36 bytes without"):
        load_transcript(tmp_path / "cut.jsonl")
    os.mkfifo(tmp_path / "pipe.jsonl")  # must not block waiting for a writer
    with pytest.raises(TranscriptError, match=r"pipe\.jsonl: a named pipe \(FIFO\), not a reg"):
        load_transcript(tmp_path / "pipe.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    empty = load_transcript(tmp_path / "empty.jsonl")
    assert (empty.messages, empty.format, empty.session_id) == ([], "claude-code", "empty")
    with pytest.raises(FileNotFoundError):
        load_transcript(tmp_path / "missing.jsonl")


def test_find_transcripts_newest_first(tmp_path: Path) -> None:
    for offset, name in enumerate(["a/old.jsonl", "b/c/new.jsonl", "a/mid.jsonl"]):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        os.utime(path, (1_000_000 + offset * 10, 1_000_000 + [0, 20, 10][offset] * 10))
    (tmp_path / "a" / "agent-1234.jsonl").write_text("")
    (tmp_path / "a" / "notes.txt").write_text("")
    assert [p.name for p in find_transcripts(tmp_path)] == ["new.jsonl", "mid.jsonl", "old.jsonl"]
    assert find_transcripts(tmp_path / "missing") == []


def test_default_roots(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    home = Path.home()
    assert default_transcript_roots() == [
        home / ".claude/projects",
        home / ".codex/sessions",
        home / ".codex/archived_sessions",
    ]
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    assert default_transcript_roots()[1:] == [tmp_path / "sessions", tmp_path / "archived_sessions"]


# --- tailing --------------------------------------------------------------------------------


def test_tail_yields_each_new_message_once(tmp_path: Path) -> None:
    source = (CLAUDE / "interrupted_tool_use.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"")
    tail = TranscriptTail(path)
    assert not tail.poll().changed
    seen: list[str] = []
    with open(path, "ab", buffering=0) as writer:  # a second writer, as the agent would be
        for index, line in enumerate(source):
            if index == 3:
                writer.write(line[:40])  # half a record: nothing to see yet
                update = tail.poll()
                assert not update.changed and update.line_count == 3
                writer.write(line[40:])
            else:
                writer.write(line)
            update = tail.poll()
            assert not update.reset
            seen.extend(ids(update.messages))
            assert len(update.messages) == 1
    assert seen == ["i1", "i2", "i3", "i4", "i5", "i6"]
    assert not tail.poll().changed
    expected = load_transcript(CLAUDE / "interrupted_tool_use.jsonl")
    assert tail.transcript() == msgspec.structs.replace(expected, path=str(path))


def _replay(path: Path, chunks: list[bytes]) -> tuple[TranscriptTail, list[Message]]:
    """Write `chunks` one per poll, applying the updates as a consumer would."""
    path.write_bytes(b"")
    tail = TranscriptTail(path)
    messages: list[Message] = []
    usage: list[RecordedUsage] = []
    compactions: list[AgentCompaction] = []
    with open(path, "ab", buffering=0) as writer:
        for chunk in chunks:
            writer.write(chunk)
            update = tail.poll()
            assert update.reset or update.rewrite_from >= len(messages) - 1  # newest only
            update.apply(messages, usage, compactions)
    assert (usage, compactions) == (
        tail.transcript().recorded_usage,
        tail.transcript().agent_compactions,
    )
    return tail, messages


def _chunkings(data: bytes, seed: str) -> dict[str, list[bytes]]:
    """Ways an agent's writes can reach a poll: line by line, and in random cuts (mid-line
    included) of a few sizes."""
    chunkings = {"lines": data.splitlines(keepends=True)}
    for biggest in (7, 60, 400):
        rng = random.Random(f"{seed}:{biggest}")
        chunks, position = [], 0
        while position < len(data):
            size = rng.randint(1, biggest)
            chunks.append(data[position : position + size])
            position += size
        chunkings[f"random<={biggest}"] = chunks
    return chunkings


@pytest.mark.parametrize("source", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tail_in_chunks_matches_a_full_load(source: Path, tmp_path: Path) -> None:
    """Incremental tailing ends exactly where a fresh full load of the same bytes does, but for
    an unfinished last line: a live tail waits for the rest, only a final read counts it."""
    expected = load_transcript(source)
    expected.skipped.pop("incomplete", None)
    unfinished = "unfinished last line: not read"
    expected.skipped_lines = [(n, r) for n, r in expected.skipped_lines if r != unfinished]
    for name, chunks in _chunkings(source.read_bytes(), source.name).items():
        tail, messages = _replay(tmp_path / f"{name}-{source.name}", chunks)
        assert messages == expected.messages, name
        got = tail.transcript()
        assert (
            got.agent_compactions,
            got.recorded_usage,
            got.skipped,
            got.line_count,
            got.skipped_lines,
            got.empty_reason,
        ) == (
            expected.agent_compactions,
            expected.recorded_usage,
            expected.skipped,
            expected.line_count,
            expected.skipped_lines,
            expected.empty_reason,
        ), name


def test_tail_rewrites_only_the_newest_message_when_a_merge_changes_it(tmp_path: Path) -> None:
    lines = (CLAUDE / "split_tool_results.jsonl").read_bytes().splitlines(keepends=True)
    tail, before = _replay(tmp_path / "split.jsonl", [b"".join(lines[:3])])
    assert ids(before) == ["s1", "s3"] and not before[1].tool_use_ids()
    with open(tmp_path / "split.jsonl", "ab") as writer:
        writer.write(lines[3])  # a tool_use for the assistant message already delivered
    update = tail.poll()
    assert not update.reset and update.rewrite_from == 1
    assert ids(update.messages) == ["s3"]
    assert update.messages[0].tool_use_ids() == ("toolu_a",)


def test_tail_resets_on_rewind(tmp_path: Path) -> None:
    lines = (CLAUDE / "rewound_branch.jsonl").read_bytes().splitlines(keepends=True)
    tail, messages = _replay(tmp_path / "rewind.jsonl", lines[:6])
    assert ids(messages) == ["u1", "a1", "u2", "a2"]
    with open(tmp_path / "rewind.jsonl", "ab") as writer:
        writer.write(lines[6])
    update = tail.poll()
    assert update.reset and ids(update.messages) == ["u1", "a1", "u2b"]


def test_tail_resets_when_the_file_is_truncated_or_replaced(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    shutil.copy(SHARED / "session_b.jsonl", path)
    tail = TranscriptTail(path)
    assert len(tail.poll().messages) == 3
    lines = (SHARED / "session_b.jsonl").read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0])  # truncated in place
    update = tail.poll()
    assert update.reset and len(update.messages) == 1
    replacement = tmp_path / "new.jsonl"
    shutil.copy(SHARED / "representative_messages.jsonl", replacement)
    os.replace(replacement, path)  # replaced by another file, bigger than before
    update = tail.poll()
    assert update.reset and len(update.messages) == 11
    path.unlink()
    update = tail.poll()
    assert update.reset and update.messages == []


def test_tail_reads_past_a_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    shutil.copy(CLAUDE / "malformed_line.jsonl", path)
    tail = TranscriptTail(path)
    assert tail.poll().messages
    assert tail.transcript().skipped_lines == [(3, "invalid JSON")]
    assert not tail.poll().changed  # reported once, not re-read


def test_tail_waits_for_a_file_that_does_not_exist_yet(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    tail = TranscriptTail(path)
    assert not tail.poll().changed and tail.format is None
    shutil.copy(CODEX_ROLLOUT, path)
    assert tail.poll().messages and tail.format == "codex"


def test_tail_takes_a_complete_unterminated_line_and_its_late_newline(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    shutil.copy(SHARED / "session_b.jsonl", path)  # ends without a newline
    tail = TranscriptTail(path)
    update = tail.poll()
    assert len(update.messages) == 3 and update.line_count == 3
    extra = (SHARED / "representative_messages.jsonl").read_bytes().splitlines()[1]
    with open(path, "ab") as writer:
        writer.write(b"\n")
    assert not tail.poll().changed
    with open(path, "ab") as writer:
        writer.write(extra + b"\n")
    update = tail.poll()
    assert ids(update.messages) == ["msg_002"] and update.line_count == 4


def test_boundary_without_summary_yet(tmp_path: Path) -> None:
    lines = (CLAUDE / "compact_boundary.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join(lines[:5]))
    transcript = load_transcript(path)
    # The chain ends at the last user/assistant record, so a lone boundary is not on it yet.
    assert (transcript.agent_compactions, transcript.warnings) == ([], [])
    path.write_bytes(b"".join(lines[:6]))
    assert load_transcript(path).agent_compactions[0].message_index == 4


def test_orphan_tool_result_is_kept_as_text(tmp_path: Path) -> None:
    # A resumed log can open with the result of a call made in the previous file.
    lines = (CLAUDE / "split_tool_results.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"".join(lines[6:]))
    transcript = load_transcript(path)
    validate_history(transcript.messages)
    assert texts(transcript.messages[0]) == ["[tool result toolu_a]\nprint('a')"]
    assert transcript.warnings == ["tool_result 'toolu_a' answers no tool_use; kept as text"]
