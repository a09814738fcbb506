"""Current Codex rollouts: today's RolloutItem kinds, a thread rolled back, a compaction's size
after it bounded by the model's window, sub-agent rollouts, archived sessions. The fixture and
the records are ours, written in the shapes openai/codex's protocol defines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import CompactionConfig
from engine.messages import Message, TextContentBlock
from metis_compaction_tui.importers import TranscriptTail, load_transcript
from metis_compaction_tui.sources.recording import discover_transcripts, read_recording
from tests.cli_process import run_cli

CODEX = Path(__file__).parents[1] / "fixtures" / "transcripts" / "codex"
WINDOW = 258_400


def line(kind: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": "2026-07-01T08:00:00.000Z", "type": kind, "payload": payload})


def message(role: str, text: str) -> str:
    kind = "input_text" if role == "user" else "output_text"
    content = [{"type": kind, "text": text}]
    return line("response_item", {"type": "message", "role": role, "content": content})


def count(total: int, last_input: int, last_output: int, last_total: int) -> str:
    last = {
        "input_tokens": last_input,
        "cached_input_tokens": 0,
        "output_tokens": last_output,
        "total_tokens": last_total,
    }
    info = {
        "total_token_usage": {"input_tokens": total, "output_tokens": 0, "total_tokens": total},
        "last_token_usage": last,
        "model_context_window": WINDOW,
    }
    return line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})


def meta(**fields: object) -> str:
    return line("session_meta", {"id": "019f0000-0000-7000-8000-000000000001", **fields})


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines))
    return path


def all_text(messages: list[Message]) -> list[str]:
    return [b.text for m in messages for b in m.content if isinstance(b, TextContentBlock)]


def test_current_rollout_item_kinds_are_known() -> None:
    transcript = load_transcript(CODEX / "thread_rolled_back.jsonl")
    for kind in ("world_state", "inter_agent_communication", "inter_agent_communication_metadata"):
        assert transcript.skipped[kind] == 1
    assert transcript.skipped_lines == [] and transcript.warnings == []


def test_a_rollback_drops_the_last_user_turns() -> None:
    """num_turns 2 takes back 'Also rename it in the docs' and 'And bump the changelog' with
    their answers and usage; what follows goes on from the first turn."""
    transcript = load_transcript(CODEX / "thread_rolled_back.jsonl")
    texts = all_text(transcript.messages)
    assert texts == [
        "Rename Atlas.load to Atlas.open",
        "Renamed in atlas.py and its two callers.",
        "Only the code, not the docs",
        "Understood: the docs keep Atlas.load.",
    ]
    assert len(transcript.messages) == 6  # the call and its output are kept
    assert [u.context_tokens for u in transcript.recorded_usage] == [39_500, 40_300]


def test_a_rollback_tailed_resets_what_was_delivered(tmp_path: Path) -> None:
    lines = (CODEX / "thread_rolled_back.jsonl").read_text().splitlines()
    log = write(tmp_path / "rollout.jsonl", lines[:19])
    tail = TranscriptTail(log)
    tail.poll()
    assert "And bump the changelog" in all_text(tail.transcript().messages)
    write(log, lines)
    update = tail.poll()
    assert update.reset  # earlier messages were taken back, not appended to
    assert update.messages == load_transcript(log).messages


@pytest.mark.parametrize("turns", [5, 3])
def test_rolling_back_every_turn_keeps_what_came_before_the_first(
    tmp_path: Path, turns: int
) -> None:
    lines = [
        meta(),
        message("user", "one"),
        message("assistant", "1"),
        message("user", "two"),
        message("assistant", "2"),
        message("user", "three"),
        line("event_msg", {"type": "thread_rolled_back", "num_turns": turns}),
        message("user", "again"),
    ]
    transcript = load_transcript(write(tmp_path / "rollout.jsonl", lines))
    assert all_text(transcript.messages) == ["again"]


def test_a_compactions_size_after_is_never_above_the_window(tmp_path: Path) -> None:
    """A recount larger than the model's window is no size of a context: unknown, not shown."""
    lines = [
        meta(),
        message("user", "Port the parser"),
        message("assistant", "Ported."),
        count(240_000, 240_000, 400, 240_400),
        line("compacted", {"message": "Summary: the parser was ported."}),
        count(940_499, 0, 0, 940_499),  # the running total where the size should be
    ]
    log = write(tmp_path / "rollout.jsonl", lines)
    (compaction,) = load_transcript(log).agent_compactions
    assert compaction.post_tokens is None
    done = run_cli("status", str(log), "--json")
    assert done.returncode == 0, done.stderr
    (shown,) = json.loads(done.stdout)["sessions"][0]["transcript"]["agent_compactions"]
    assert shown["post_tokens"] is None
    assert "? tokens" in run_cli("status", str(log)).stdout  # said to be unknown


def test_a_recount_that_is_the_running_total_is_not_a_size(tmp_path: Path) -> None:
    lines = [
        meta(),
        message("user", "Port the parser"),
        message("assistant", "Ported."),
        count(61_000, 60_600, 400, 61_000),
        line("compacted", {"message": "Summary."}),
        count(61_000, 0, 0, 61_000),  # within the window, but the session's running total
    ]
    (compaction,) = load_transcript(write(tmp_path / "r.jsonl", lines)).agent_compactions
    assert compaction.post_tokens is None
    lines[-1] = count(61_000, 0, 0, 3_150)  # Codex's own recount of the rebuilt history
    (compaction,) = load_transcript(write(tmp_path / "r.jsonl", lines)).agent_compactions
    assert compaction.post_tokens == 3_150


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ({"subagent": "review"}, "review"),
        (
            {
                "subagent": {
                    "thread_spawn": {
                        "parent_thread_id": "019f0000-0000-7000-8000-0000000000aa",
                        "depth": 1,
                        "agent_nickname": "Ada",
                        "agent_role": "worker",
                    }
                }
            },
            "Ada",
        ),
        ({"subagent": {"other": "guardian"}}, "guardian"),
        ("cli", None),
    ],
)
def test_a_sub_agents_rollout_is_marked_and_named(
    tmp_path: Path, source: object, label: str | None
) -> None:
    folder = tmp_path / "sessions" / "2026" / "07" / "01"
    folder.mkdir(parents=True)
    log = folder / "rollout-2026-07-01T08-00-00-019f0000-0000-7000-8000-000000000001.jsonl"
    write(
        log, [meta(source=source), message("user", "Review the diff"), message("assistant", "ok")]
    )
    assert load_transcript(log).subagent == label
    title = read_recording(log, CompactionConfig()).title
    assert title.startswith("codex 07-01 08:00")
    assert title.endswith(f" · sub-agent {label}") == (label is not None)
    done = run_cli("status", str(log), "--json")
    assert json.loads(done.stdout)["sessions"][0]["transcript"]["subagent"] == label


def test_archived_rollouts_are_read_beside_current_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    name = "rollout-2026-07-0{}T08-00-00-019f0000-0000-7000-8000-00000000000{}.jsonl"
    current = tmp_path / "codex" / "sessions" / "2026" / "07" / "02" / name.format(2, 2)
    archived = tmp_path / "codex" / "archived_sessions" / name.format(1, 1)
    for log in (current, archived):
        log.parent.mkdir(parents=True)
        write(log, [meta(), message("user", "hi"), message("assistant", "hello")])
    found = discover_transcripts(None)
    assert set(found) == {current, archived}
    assert read_recording(archived, CompactionConfig()).title == "codex 07-01 08:00:00 · archived"
    assert read_recording(current, CompactionConfig()).title == "codex 07-02 08:00:00"
