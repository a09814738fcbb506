"""The status line against what a hostile or odd machine gives it: a project folder that shadows
our packages, a saved state file written by someone else, a FIFO for a transcript, a transcript
with negative counts, a NUL byte in the model id. Real processes and files; each failed before
its fix (a review of the status line found them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metis_compaction_tui.statusline import main
from metis_compaction_tui.statusline.render import FIELD_NAMES, render_line
from metis_compaction_tui.statusline.state import load_line_state, state_key
from tests.statusline.test_statusline import (
    USAGE,
    fields,
    run,
    stdin_json,
    write,
)
from tests.transcript_writer import ClaudeCodeWriter

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts" / "claude-code"


def test_the_refresher_never_imports_from_the_agents_working_folder(
    tmp_path: Path, state_dir: Path
) -> None:
    """Claude Code runs the status line in the project's folder; a project with its own
    `engine/` package must not be imported (and run) by our detached refresher."""
    project = tmp_path / "project"
    (project / "engine").mkdir(parents=True)
    marker = tmp_path / "PWNED"
    (project / "engine" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    transcript = tmp_path / "t.jsonl"
    write(transcript, ClaudeCodeWriter(5), 4, "w")
    env = {**os.environ, "METIS_STATUSLINE_STATE_DIR": str(state_dir), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "metis_compaction_tui.cli", "statusline"],
        input=stdin_json(transcript, usage=USAGE),
        cwd=project,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    line_file = state_dir / (state_key(str(transcript)) + ".line.json")
    deadline = time.monotonic() + 30
    while not line_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the refresher is a detached process: its file is the only signal
    assert line_file.exists(), "the refresher did not run"
    assert not marker.exists()


def test_a_forged_state_file_cannot_write_escape_sequences(tmp_path: Path, state_dir: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    write(transcript, ClaudeCodeWriter(6), 3, "w")
    fields(stdin_json(transcript, usage=USAGE))  # --sync: the refresher writes a real state file
    line_file = state_dir / (state_key(str(transcript)) + ".line.json")
    saved = json.loads(line_file.read_text())
    saved["trigger"] = "\x1b]0;PWNED\x07\x1b[31mX"
    line_file.write_text(json.dumps(saved))
    assert load_line_state(str(state_dir), str(transcript)) is None  # not what we write
    out = run(stdin_json(transcript, usage=USAGE), "--no-color")
    assert "\x1b" not in out and "\x07" not in out
    # And whatever a field holds, the line itself never carries a control character.
    hostile: dict[str, object] = dict.fromkeys(FIELD_NAMES)
    hostile.update(source="claude-code", trigger="ok", our_compactions=0)
    hostile.update(note="\x1b[2J\x9b31m\u202e", compaction_usd="\x1b]52;c;aGk=\x07")
    for colour in (False, True):
        text = render_line(hostile, 200, colour)
        visible = text.replace("\x1b[0m", "").replace("\x1b[2m", "")
        for code in ("\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[90m"):
            visible = visible.replace(code, "")
        assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in visible), repr(text)
        assert "\u202e" not in text


def test_a_fifo_for_a_transcript_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "metis_compaction_tui.cli", "statusline", "--sync"],
        input=stdin_json(fifo, usage=USAGE),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=30,  # before: blocked forever opening the FIFO
    )
    assert done.returncode == 0
    assert done.stdout.decode().count("\n") == 1 and b"ctx" in done.stdout


def test_negative_counts_read_as_unknown_and_the_line_settles(tmp_path: Path) -> None:
    text = (FIXTURES / "compact_boundary.jsonl").read_text()
    assert '"preTokens"' in text
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    for record in records:
        metadata = record.get("compactMetadata")
        if isinstance(metadata, dict) and "preTokens" in metadata:
            metadata["preTokens"] = -5000
    transcript = tmp_path / "negative.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    f = fields(stdin_json(transcript, usage=USAGE))
    assert f["note"] != "status unavailable"
    assert f["last_before"] is None  # a count below zero is not a count
    assert (
        f["agent_compactions"]
        == fields(stdin_json(FIXTURES / "compact_boundary.jsonl"))["agent_compactions"]
    )


def test_a_nul_byte_in_the_model_id_still_gives_a_line(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    write(transcript, ClaudeCodeWriter(7), 3, "w")
    raw = stdin_json(transcript, usage=USAGE, model={"id": "a\u0000b", "display_name": "x"})
    out = run(raw, "--no-color")
    assert out.startswith("ctx 90k/200k") and "unavailable" not in out


@pytest.mark.parametrize("url", ["https://user:hunter2pass@gw.example/v1", "http://tok@10.0.0.1"])
def test_credentials_in_the_base_url_are_refused_without_being_echoed(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.layout import config_path
    from metis_compaction_tui.cli import main as cli

    config = config_path(tmp_path)
    config.parent.mkdir()
    config.write_text(f"summarizer:\n  base_url: {url}\n")
    assert cli(["status", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "summarizer.base_url" in err and "user name or password" in err
    assert "hunter2" not in err and "tok@" not in err


def test_main_still_answers_on_stdin_of_odd_types() -> None:
    import io

    for raw in (b'{"context_window": "x"}', b'{"transcript_path": 5}', b'{"model": []}'):
        out = io.StringIO()
        assert main([], io.BytesIO(raw), out) == 0
        assert out.getvalue().count("\n") == 1


@pytest.mark.parametrize("field", ["last_context", "error"])
def test_a_state_file_missing_a_field_is_not_ours(
    tmp_path: Path, state_dir: Path, field: str
) -> None:
    transcript = tmp_path / "t.jsonl"
    write(transcript, ClaudeCodeWriter(6), 3, "w")
    fields(stdin_json(transcript, usage=USAGE))
    line_file = state_dir / (state_key(str(transcript)) + ".line.json")
    saved = json.loads(line_file.read_text())
    del saved[field]  # an optional field: null is fine, absent is not what we write
    line_file.write_text(json.dumps(saved))
    assert load_line_state(str(state_dir), str(transcript)) is None
    assert run(stdin_json(transcript, usage=USAGE), "--no-color").startswith("ctx ")
