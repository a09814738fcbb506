"""Claude Code 2.1.2xx-3xx logs: today's record kinds, titles, parallel calls written one below
another, a preserved segment hung below its anchor, microcompaction. The fixtures are ours,
written in the shapes public logs and Claude Code's resume code show."""

from __future__ import annotations

import json
from pathlib import Path

from engine import CompactionConfig
from engine.messages import (
    Message,
    ToolResultContentBlock,
    ToolUseContentBlock,
    validate_history,
)
from metis_compaction_tui.importers import TranscriptTail, load_transcript
from metis_compaction_tui.sources.recording import read_recording
from tests.cli_process import run_cli

CLAUDE = Path(__file__).parents[1] / "fixtures" / "transcripts" / "claude-code"


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def calls(message: Message) -> list[str]:
    return [b.id for b in message.content if isinstance(b, ToolUseContentBlock)]


def results(message: Message) -> list[tuple[str, str]]:
    return [
        (b.tool_use_id, b.content) for b in message.content if isinstance(b, ToolResultContentBlock)
    ]


def test_every_current_record_kind_is_known_and_counted_quietly() -> None:
    transcript = load_transcript(CLAUDE / "current_record_kinds.jsonl")
    assert ids(transcript.messages) == ["c01", "c03", "c05", "c06", "c08", "c09"]
    for kind in (
        "permission-mode",
        "mode",
        "file-history-snapshot",
        "file-history-delta",
        "attachment",
        "system.turn_duration",
        "last-prompt",
        "bridge-session",
        "agent-setting",
        "custom-title",
        "queue-operation",
    ):
        assert transcript.skipped[kind] == 1, kind
    assert transcript.skipped["ai-title"] == 2
    # A kind we do not know, carrying no message, is counted but is not a problem.
    assert transcript.skipped["ledger-sync"] == 1
    assert transcript.skipped_lines == [] and transcript.warnings == []


def test_an_unknown_record_with_a_message_is_named(tmp_path: Path) -> None:
    """Only an unknown kind that carries a message may be conversation we did not read."""
    lines = (CLAUDE / "current_record_kinds.jsonl").read_text().splitlines()
    strange = {"type": "hologram", "uuid": "z1", "message": {"role": "user", "content": "?"}}
    log = tmp_path / "s.jsonl"
    log.write_text("\n".join([*lines, json.dumps(strange)]) + "\n")
    transcript = load_transcript(log)
    assert transcript.skipped_lines == [(len(lines) + 1, "unknown record type 'hologram'")]


def test_the_title_is_the_custom_title_then_the_ai_title(tmp_path: Path) -> None:
    source = CLAUDE / "current_record_kinds.jsonl"
    assert load_transcript(source).title == "since-flag"
    without_custom = [
        line for line in source.read_text().splitlines() if '"custom-title"' not in line
    ]
    log = tmp_path / "-home-dev-ledger" / "3b0d6c1e-5a7f-4e21-9c44-00000000c0de.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(without_custom) + "\n")
    assert load_transcript(log).title == "Ledger report flag and docs"  # the newest ai-title
    assert read_recording(log, _config()).title == "Ledger report flag and docs"
    no_titles = [line for line in without_custom if '"ai-title"' not in line]
    log.write_text("\n".join(no_titles) + "\n")
    assert load_transcript(log).title is None
    assert read_recording(log, _config()).title == "ledger · 3b0d6c1e"  # the path's, as before


def test_a_title_with_control_characters_is_shown_on_one_line(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    lines = (CLAUDE / "current_record_kinds.jsonl").read_text().splitlines()
    hostile = {"type": "custom-title", "customTitle": "a\x1b[31mred\nline", "sessionId": "x"}
    log.write_text("\n".join([*lines, json.dumps(hostile)]) + "\n")
    title = read_recording(log, _config()).title
    assert "\x1b" not in title and "\n" not in title and "red" in title


def test_parallel_calls_written_one_below_another_are_stitched_with_their_results() -> None:
    """The second call is a child of the first; each result hangs below its own call and the
    chain goes on from the first's: nothing is an inactive branch."""
    transcript = load_transcript(CLAUDE / "parallel_calls_chained.jsonl")
    validate_history(transcript.messages)
    messages = transcript.messages
    assert [m.role.value for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert calls(messages[1]) == ["toolu_pa", "toolu_pb"]
    assert results(messages[2]) == [
        ("toolu_pa", "12 passed"),
        ("toolu_pb", "All checks passed!"),
    ]
    assert "inactive_branch" not in transcript.skipped


def test_parallel_results_written_beside_each_other_are_stitched(tmp_path: Path) -> None:
    """The second call's result written beside the first's (both below the first call)."""
    lines = [json.loads(line) for line in (CLAUDE / "parallel_calls_chained.jsonl").open()]
    for record in lines:
        if record["uuid"] == "p06":
            record["parentUuid"] = "p03"
    log = tmp_path / "beside.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    transcript = load_transcript(log)
    validate_history(transcript.messages)
    assert calls(transcript.messages[1]) == ["toolu_pa", "toolu_pb"]
    assert [tool for tool, _ in results(transcript.messages[2])] == ["toolu_pa", "toolu_pb"]
    assert "inactive_branch" not in transcript.skipped


def test_parallel_calls_tailed_line_by_line_end_as_a_full_read(tmp_path: Path) -> None:
    source = (CLAUDE / "parallel_calls_chained.jsonl").read_bytes().splitlines(keepends=True)
    log = tmp_path / "tailed.jsonl"
    log.write_bytes(b"")
    tail = TranscriptTail(log)
    with log.open("ab") as out:
        for line in source:
            out.write(line)
            out.flush()
            tail.poll()
    assert tail.transcript().messages == load_transcript(log).messages


def test_a_preserved_segment_hangs_below_its_anchor() -> None:
    """Kept messages (head k03 .. tail k06, written before the boundary) hang below the summary
    (the anchor k08); k09, written below the anchor, goes on after the tail."""
    transcript = load_transcript(CLAUDE / "preserved_segment_anchor.jsonl")
    validate_history(transcript.messages)
    assert ids(transcript.messages) == ["k01", "k02", "k08", "k04", "k05", "k06", "k09", "k10"]
    assert "inactive_branch" not in transcript.skipped
    (compaction,) = transcript.agent_compactions
    assert compaction.message_index == 2  # the summary, with the kept prompt k03 after it
    assert transcript.messages[2].metadata.synthetic
    # The kept assistants' usage is from before compacting: not counted again after it.
    assert [u.context_tokens for u in transcript.recorded_usage] == [90_104, 31_104]


def test_a_microcompaction_is_a_context_reduction(tmp_path: Path) -> None:
    source = CLAUDE / "microcompact.jsonl"
    transcript = load_transcript(source)
    (reduction,) = transcript.context_reductions
    assert (reduction.pre_tokens, reduction.tokens_saved, reduction.post_tokens) == (
        60_104,
        45_000,
        15_104,
    )
    assert reduction.usage_count == 2 and reduction.line_number == 5
    done = run_cli("status", str(source), "--json")
    assert done.returncode == 0, done.stderr
    (session,) = json.loads(done.stdout)["sessions"]
    usage = session["transcript"]["recorded_usage"]
    assert usage["last_recorded_context_tokens"] == 15_104  # not the 60,104 before it
    assert session["transcript"]["context_reductions"][0]["post_tokens"] == 15_104
    # A response after it measures the context again.
    response = {
        "parentUuid": "m06",
        "isSidechain": False,
        "type": "assistant",
        "uuid": "m07",
        "message": {
            "id": "msg_m3",
            "role": "assistant",
            "content": [{"type": "text", "text": "The billing service."}],
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 16_000},
        },
    }
    log = tmp_path / "after.jsonl"
    log.write_text(source.read_text() + json.dumps(response) + "\n")
    assert read_recording(log, _config()).view().last_recorded_tokens == 16_005


def _config() -> CompactionConfig:
    return CompactionConfig()
