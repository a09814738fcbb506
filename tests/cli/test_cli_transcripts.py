"""`status`, `compact --dry-run` and `inspect` on agent transcripts: the documented JSON shape
(docs/cli-json.md), what-if knobs, and refusals that say what to do."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

import msgspec
import pytest

from engine import trust_workspace
from engine.config import CompactionConfig
from engine.layout import config_path
from metis_compaction_tui.cli import dispatch as cli
from tests.cli.test_cli import SessionFigures, Strict, run
from tests.importers.test_importers import CLAUDE, CODEX_ROLLOUT, OURS
from tests.transcript_writer import ClaudeCodeWriter


class AgentCompactionJson(Strict):
    message_index: int
    message_id: str
    trigger: str | None
    pre_tokens: int | None
    estimate_tokens: int
    post_tokens: int | None
    duration_ms: int | None


class ProjectedJson(Strict):
    before_index: int
    turn: int
    action: str
    reason: str
    pending_tokens: int
    span_start: int
    span_end: int
    span_tokens: int
    kind: Literal["summary", "mask", "truncation"]


class UsageJson(Strict):
    responses: int
    last_recorded_context_tokens: int | None
    last_estimate_tokens: int | None
    recorded_total: int
    estimate_total: int


class SkippedLineJson(Strict):
    line: int
    reason: str


class ContextReductionJson(Strict):
    message_index: int
    line_number: int
    usage_count: int
    trigger: str | None
    pre_tokens: int | None
    tokens_saved: int | None
    post_tokens: int | None


class TranscriptJson(Strict):
    path: str
    format: str
    line_count: int
    agent_compactions: list[AgentCompactionJson]
    context_reductions: list[ContextReductionJson]
    subagent: str | None
    projected_compactions: list[ProjectedJson]
    projected_count: int
    projected_span_tokens: int
    projected_reason: str | None
    recorded_usage: UsageJson
    skipped: dict[str, int]
    warnings: list[str]
    skipped_lines: list[SkippedLineJson]
    empty_reason: str | None


class TranscriptSession(SessionFigures):
    transcript: TranscriptJson


class NotReadJson(Strict):
    path: str
    problem: str


class TranscriptStatus(Strict):
    shape_version: int
    transcripts: str
    sessions: list[TranscriptSession]
    not_read: list[NotReadJson]


@pytest.fixture
def live(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    writer = ClaudeCodeWriter(11, compact_every=10)
    path.write_text("".join(line for _ in range(40) for line in writer.turn()))
    return path


def test_status_json_of_a_transcript_has_the_documented_shape(
    live: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = hashlib.sha256(live.read_bytes()).digest()
    code, out, err = run(capsys, "status", str(live), "--json", "--set", "threshold_tokens=3000")
    assert code == 0, err
    status = msgspec.json.decode(out, type=TranscriptStatus)
    (session,) = status.sessions
    assert session.threshold_tokens == 3_000 and session.model == "local:extractive"
    assert session.message_count == 161  # the last turn ends in a summary of its own
    transcript = session.transcript
    assert transcript.format == "claude-code"
    assert [c.trigger for c in transcript.agent_compactions] == ["auto"] * 4
    assert transcript.projected_compactions, "40 turns cross a 3,000-token threshold"
    assert transcript.recorded_usage.responses == 80  # two responses a turn (one split)
    assert hashlib.sha256(live.read_bytes()).digest() == before


def test_status_says_why_ours_fires_on_every_turn_once_its_summaries_pass_the_hard_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """v1 never re-compacts a summary (§3.2): under a small hard cap the stand-ins alone pass it
    and every later turn is forced. `status` says so, in --json and in its text, and counts
    every fire, not only the bounded few it lists."""
    path = tmp_path / "long.jsonl"
    writer = ClaudeCodeWriter(5)
    path.write_text("".join(line for _ in range(120) for line in writer.turn()))
    knobs = ("--set", "threshold_tokens=1500", "--set", "hard_cap_tokens=3000")
    knobs += ("--set", "max_summary_tokens=200")
    code, out, err = run(capsys, "status", str(path), "--json", *knobs)
    assert code == 0, err
    (session,) = msgspec.json.decode(out, type=TranscriptStatus).sessions
    transcript = session.transcript
    reason = transcript.projected_reason
    assert reason is not None and reason.startswith("from turn ")
    assert ") every turn is forced: the stand-in summaries alone (" in reason
    assert "are over the hard cap (3,000); v1 never re-compacts a summary (§3.2)" in reason
    assert transcript.projected_count > len(transcript.projected_compactions)
    assert {f.kind for f in transcript.projected_compactions} == {"summary"}
    last = transcript.projected_compactions[-1]
    assert last.action == "forced" and last.reason == "hard_cap_crossed"

    code, text, err = run(capsys, "status", str(path), *knobs)
    assert code == 0, err
    assert f"ours would make {transcript.projected_count:,}, the first" in text
    assert f"  ours       {reason}\n" in text

    # Ours folding its summaries (§12.4) never piles them up: no reason to give.
    code, out, err = run(
        capsys, "status", str(path), "--json", *knobs, "--set", "strategy=recompact"
    )
    assert code == 0, err
    (session,) = msgspec.json.decode(out, type=TranscriptStatus).sessions
    assert session.transcript.projected_count and session.transcript.projected_reason is None


def test_a_transcripts_what_if_knobs_come_from_the_workspace_it_runs_in(
    live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run next to metis dev, `status` (and `inspect`, `compact --dry-run`) on a transcript
    takes the knobs that workspace's .metis/config.yaml and METIS_* set, under --set."""
    workspace = tmp_path / "ws"
    config_path(workspace).parent.mkdir(parents=True)
    config_path(workspace).write_text(
        "compaction_threshold_tokens: 4000\ncompaction_hard_cap_tokens: 9000\n"
    )
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("METIS_COMPACTION_PRESERVE_RECENT_TURNS", "3")

    def status(*flags: str) -> TranscriptSession:
        code, out, err = run(capsys, "status", str(live), "--json", *flags)
        assert code == 0, err
        (session,) = msgspec.json.decode(out, type=TranscriptStatus).sessions
        return session

    session = status()
    assert (session.threshold_tokens, session.hard_cap_tokens) == (4_000, 9_000)
    assert session.preserve_recent_turns == 3
    assert session.model == "local:extractive"  # nothing named a model: the offline one
    assert status("--set", "threshold_tokens=5000").threshold_tokens == 5_000
    # The workspace's summarizer settings too: an unlisted model at the price it states.
    config_path(workspace).write_text(
        'compaction_model: "anthropic:llama-3.1-8b-local"\nsummarizer:\n  price:\n'
        "    input_per_mtok: 0.5\n    output_per_mtok: 2\n"
    )
    code, out, err = run(capsys, "compact", str(live), "--dry-run", "--json")
    assert code == 0, err
    preview = json.loads(out)
    assert preview["model"] == "anthropic:llama-3.1-8b-local"
    assert preview["price_origin"] == "price you set"
    # A summarizer named without a model serves the default model, as it does the workspace's
    # sessions: the plugin is not handed the offline model's name.
    config_path(workspace).write_text('summarizer:\n  import: "tests.plugins.acme:make"\n')
    # Untrusted, the import path is withheld (engine.workspace_trust): the offline model.
    assert status().model == "local:extractive"
    trust_workspace(workspace)
    assert status().model == CompactionConfig().compaction_model
    # A bad file is the same one-line error a workspace gets.
    config_path(workspace).write_text("compaction_threshold_tokens: lots\n")
    code, _, err = run(capsys, "status", str(live))
    assert code == 2
    assert f"{config_path(workspace)}:1: compaction_threshold_tokens: 'lots' is not a whole" in err


def test_status_text_of_a_folder_lists_every_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes((CLAUDE / "compact_boundary.jsonl").read_bytes())
    (folder / CODEX_ROLLOUT.name).write_bytes(CODEX_ROLLOUT.read_bytes())
    code, out, err = run(capsys, "status", str(folder))
    assert code == 0, err
    assert "2 transcript(s), never written" in out
    assert out.count("  trigger    ") == 2 and "agent      2 compaction(s) of its own" in out


def test_status_of_a_folder_reads_every_good_file_and_names_each_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import shutil

    folder = tmp_path / "folder"
    shutil.copytree(OURS / "folder", folder)
    code, out, err = run(capsys, "status", str(folder))
    assert code == 0  # one session was read: the bad files do not fail the folder
    assert "1 transcript(s), 2 not read, never written" in out
    assert "good-session" in out and "  messages   8 (" in out
    assert f"{folder / 'notes.jsonl'}\n  not read   line 1: not a transcript: 2 of 2 lines" in out
    assert f"{folder / 'unreadable.jsonl'}\n  not read   line 1: not a transcript: binary" in out
    assert "(0 tokens)" not in out  # no bad file passes for an empty session
    problems = err.splitlines()
    assert len(problems) == 2 and all(
        p.startswith("metis-compaction-tui: not read: ") for p in problems
    )
    code, out, err = run(capsys, "status", str(folder), "--json")
    assert code == 0
    status = msgspec.json.decode(out, type=TranscriptStatus)
    assert [s.session_id for s in status.sessions] == ["good-session"]
    assert sorted(Path(n.path).name for n in status.not_read) == ["notes.jsonl", "unreadable.jsonl"]
    assert err.count("\n") == 2
    os.mkfifo(folder / "pipe.jsonl")  # never opened for a blocking read
    code, out, err = run(capsys, "status", str(folder))
    assert code == 0 and "pipe.jsonl\n  not read   a named pipe (FIFO), not a regular file" in out
    (folder / "pipe.jsonl").unlink()
    (folder / "good-session.jsonl").unlink()  # nothing left to read: a failure, each file named
    code, out, err = run(capsys, "status", str(folder))
    assert code == 2 and out == ""
    assert err.count("\n") == 3 and "none of the 2 transcript(s) under" in err


def test_the_agents_own_compaction_has_its_trigger_tokens_and_duration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = CLAUDE / "preserved_segment.jsonl"
    code, out, err = run(capsys, "status", str(path), "--json")
    assert code == 0, err
    (session,) = msgspec.json.decode(out, type=TranscriptStatus).sessions
    (agent,) = session.transcript.agent_compactions
    assert (agent.trigger, agent.pre_tokens, agent.post_tokens, agent.duration_ms) == (
        "auto",
        167_000,
        21_000,
        38_500,
    )
    code, out, err = run(capsys, "status", str(path))
    assert (
        "  agent      1 compaction(s) of its own (auto at 2: 167,000 → 21,000 tokens, 38.5 s)"
        in out
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("agent-a7f3.jsonl", "subagent log: 4 sidechain records, no main conversation"),
        ("summary_only.jsonl", "summary-only file: 3 summary records, no conversation"),
    ],
)
def test_an_empty_result_says_why(name: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "status", str(CLAUDE / name))
    assert code == 0, err
    assert "  messages   0 (0 tokens)" in out and f"  warnings   {why}\n" in out
    code, out, err = run(capsys, "status", str(CLAUDE / name), "--json")
    (session,) = msgspec.json.decode(out, type=TranscriptStatus).sessions
    assert session.transcript.empty_reason == why and session.transcript.warnings == [why]


def test_compact_dry_run_on_a_transcript_previews_and_writes_nothing(
    live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    before = hashlib.sha256(live.read_bytes()).digest()
    code, out, err = run(capsys, "compact", str(live), "--dry-run", "--json")
    assert code == 0, err
    preview = msgspec.json.decode(out)
    assert preview["dry_run"] is True and preview["span"]["span_message_count"] > 0
    assert preview["model"] == "local:extractive" and preview["estimated_cost_usd"] == "0"
    assert hashlib.sha256(live.read_bytes()).digest() == before
    assert not (tmp_path / "cache").exists()  # a dry run creates no cache


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compact", "{live}"], "is a transcript, which is never written: add --dry-run"),
        (["status", "{live}", "--set", "threshold"], "--set: threshold: expected KEY=VALUE"),
        (["status", "{live}", "--set", "colour=blue"], "--set: colour: no such setting"),
        (["status", "{live}", "--set", "threshold_tokens=many"], "'many' is not a whole number"),
        (["status", "{live}", "--set", "threshold_tokens=90000"], "must be below"),
        (["inspect", "{missing}"], "does not exist"),
        # a transcript path mistyped: named as what it could have been, not only as a workspace
        (["status", "{missing}.jsonl"], "missing.jsonl does not exist (a workspace folder, or"),
        (["status", "{nul}"], "nul.jsonl, line 1: not a transcript: binary data (NUL bytes)"),
        (["status", "{garbage}"], "line 1: not a transcript: 24 bytes without a newline, not JSON"),
        (["status", "{other}"], "none a Claude Code or Codex record (keys 'name', 'deps')"),
        (["status", "{fifo}"], "fifo.jsonl: a named pipe (FIFO), not a regular file"),
        (["compact", "{fifo}", "--dry-run"], "fifo.jsonl: a named pipe (FIFO), not a regular file"),
        (["inspect", "{nul}"], "nul.jsonl: not a transcript: binary data (NUL bytes)"),
        (["inspect", "{fifo}"], "fifo.jsonl: a named pipe (FIFO), not a regular file"),
        (["inspect", "{other}"], "other.json: not a transcript: 1 of 1 line is a JSON object"),
    ],
)
def test_bad_transcript_input_is_one_line_naming_what_is_wrong(
    argv: list[str], message: str, live: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    (tmp_path / "nul.jsonl").write_bytes(b"\0" * 4096)  # preallocated, never written
    (tmp_path / "garbage.jsonl").write_bytes(b"hello garbage no newline")
    (tmp_path / "other.json").write_text('{"name": "x", "deps": [1]}\n')
    os.mkfifo(tmp_path / "fifo.jsonl")  # opening it for reading must not wait for a writer
    values = {"live": str(live), "missing": str(tmp_path / "missing")}
    values |= {n: str(tmp_path / f"{n}.jsonl") for n in ("nul", "garbage", "fifo")}
    values["other"] = str(tmp_path / "other.json")
    code, _, err = run(capsys, *(a.format(**values) for a in argv))
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_store_commands_take_set_as_a_flag_never_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a store, --set is the highest-precedence config layer for this run only."""
    from engine.store import SessionStore

    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session("s1")
    code, out, _ = run(capsys, "status", str(tmp_path), "--json", "--set", "hard_cap_tokens=90000")
    assert code == 0
    (session,) = json.loads(out)["sessions"]
    assert session["hard_cap_tokens"] == 90_000
    assert session["config"]["compaction_hard_cap_tokens"]["origin"] == "flag"
    with SessionStore.open(tmp_path, create=False) as store:
        assert store.session_info("s1").config.compaction_hard_cap_tokens == 80_000
    code, _, err = run(capsys, "status", str(tmp_path), "--set", "threshold_tokens=1x")
    assert code == 2 and "--set compaction_threshold_tokens" in err


def test_inspect_with_no_path_looks_in_the_agents_default_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    code, _, err = run(capsys, "inspect")
    assert code == 2
    assert str(tmp_path / "claude" / "projects") in err and str(tmp_path / "codex") in err
    assert "inspect" in cli.SUBCOMMANDS


def test_a_malformed_line_is_skipped_and_status_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((CLAUDE / "malformed_line.jsonl").read_bytes())
    code, out, err = run(capsys, "status", str(bad))
    assert code == 0 and err == ""
    assert "  messages   2 (" in out  # the lines after the broken one are read
    assert "  skipped    1 invalid\n  warnings   1 line skipped (line 3: invalid JSON)\n" in out
    code, out, err = run(capsys, "status", str(bad), "--json")
    assert code == 0, err
    (session,) = msgspec.json.decode(out, type=TranscriptStatus).sessions
    assert session.message_count == 2
    assert session.transcript.warnings == ["1 line skipped (line 3: invalid JSON)"]
    assert session.transcript.skipped_lines == [SkippedLineJson(3, "invalid JSON")]
    assert session.transcript.skipped == {"invalid": 1}
    assert session.transcript.empty_reason is None
