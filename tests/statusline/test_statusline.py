"""`metis-compaction-tui statusline`: Claude Code's stdin shape (our own fixtures, written the way
its statusLine JSON looks), real transcripts written by tests/transcript_writer.py, a real store."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metis_compaction_tui import statusline
from metis_compaction_tui.statusline import MARKER_NO_INPUT, main
from metis_compaction_tui.statusline.render import short
from metis_compaction_tui.statusline.state import state_key
from tests.importers.test_importers import (
    CODEX_BEFORE_COMPACTING,
    COMPACTED,
    RECOUNT,
    write_jsonl,
)
from tests.transcript_writer import ClaudeCodeWriter

ROOT = Path(__file__).resolve().parents[2]


def stdin_json(
    transcript: Path | str | None, *, usage: dict[str, int] | None = None, **extra: object
) -> bytes:
    data: dict[str, object] = {
        "hook_event_name": "Status",
        "session_id": "7d1c0b7e-0000-4000-8000-000000000001",
        "transcript_path": None if transcript is None else str(transcript),
        "cwd": "/tmp/proj",
        "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
        "workspace": {"current_dir": "/tmp/proj", "project_dir": "/tmp/proj"},
        "version": "2.0.40",
        "cost": {"total_cost_usd": 0.42, "total_duration_ms": 60000},
        "context_window": {
            "total_input_tokens": 120000,
            "total_output_tokens": 9000,
            "context_window_size": 200000,
            "used_percentage": 45,
            "current_usage": usage,
        },
    }
    data.update(extra)
    return json.dumps(data).encode()


USAGE = {
    "input_tokens": 10,
    "output_tokens": 300,
    "cache_creation_input_tokens": 2000,
    "cache_read_input_tokens": 88000,
}


def run(raw: bytes, *args: str) -> str:
    out = io.StringIO()
    assert main(list(args), io.BytesIO(raw), out) == 0
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text[:-1]


def fields(raw: bytes, *args: str) -> dict[str, object]:
    return json.loads(run(raw, "--json", "--sync", *args))


def write(path: Path, writer: ClaudeCodeWriter, turns: int, mode: str = "a") -> None:
    with path.open(mode) as out:
        for _ in range(turns):
            out.writelines(writer.turn())


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b"", b"   \n", b"{not json", b"[1, 2]", b"\xff\xfe\x00", b"null"])
def test_garbage_or_empty_stdin_prints_a_marker(raw: bytes) -> None:
    assert run(raw) == MARKER_NO_INPUT
    assert run(raw, "--json") == MARKER_NO_INPUT


def test_missing_transcript_still_shows_the_context_and_says_so(tmp_path: Path) -> None:
    f = fields(stdin_json(tmp_path / "gone.jsonl", usage=USAGE))
    assert f["note"] == "transcript missing"
    assert f["ctx"] == 90010 and f["window"] == 200000 and f["ctx_pct"] == 45
    # Claude Code's default point on a 200k window: 200k less 20k for the summary, 13k buffer.
    assert f["auto_at"] == 167000 and f["auto_left"] == 167000 - 90010
    assert f["auto_window"] == 200000 and f["auto_from"] == "default"
    assert f["trigger"] is None
    line = run(stdin_json(tmp_path / "gone.jsonl", usage=USAGE), "--no-color")
    assert line.startswith("ctx 90k/200k 45% | auto-compact at 167k: 76k left")
    assert "transcript missing" in line


def test_fields_of_the_wrong_type_are_ignored(tmp_path: Path) -> None:
    bad = {"input_tokens": "9999", "output_tokens": -5, "cache_read_input_tokens": True}
    f = fields(stdin_json(None, usage=bad, model=["x"]))
    assert f["ctx"] == 0 and f["window"] == 200000 and f["model"] == ""
    window = {"context_window_size": "2", "current_usage": "x"}
    f = fields(stdin_json(None, context_window=window))
    # A window size that is no count is not taken: the model's name says 200k.
    assert f["ctx"] is None and (f["window"], f["window_from"]) == (200_000, "model name")
    assert f["note"] == "no transcript path"


def test_a_bad_command_line_is_refused_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--width", "x"], io.BytesIO(b""), io.StringIO()) == 2
    assert "--width" in capsys.readouterr().err


# -- figures from the transcript -------------------------------------------------------------------


def test_figures_come_from_the_engine_rule(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(3, compact_every=70), 150, "w")
    f = fields(stdin_json(log, usage=USAGE))
    assert f["agent_compactions"] == 2
    assert f["last_before"] is not None and f["last_after"] is not None
    assert f["trigger"] in ("ok", "soft", "forced")
    assert f["our_compactions"] >= 1
    assert f["cache_pct"] is not None and 0 < f["cache_pct"] <= 100  # type: ignore[operator]
    assert f["compaction_usd"] is not None  # priced at the session's model
    # Computed by engine.policy over the same messages: the whole-file projection agrees.
    from engine.policy.projection import project_compactions
    from engine.tokens import estimate_message_tokens
    from metis_compaction_tui.importers import load_transcript
    from metis_compaction_tui.importers.model import as_ordinary
    from metis_compaction_tui.statusline.refresh import CONFIG

    messages = [as_ordinary(m) for m in load_transcript(log).messages]
    fires = project_compactions(((m, estimate_message_tokens(m)) for m in messages), CONFIG)
    assert f["our_compactions"] == len(fires)


def test_appending_in_steps_gives_what_one_read_gives(tmp_path: Path, state_dir: Path) -> None:
    log = tmp_path / "s.jsonl"
    writer = ClaudeCodeWriter(5, compact_every=7)
    write(log, writer, 3, "w")
    stepped = {}
    for _ in range(12):
        stepped = fields(stdin_json(log, usage=USAGE))
        write(log, writer, 2)
        with log.open("a") as out:  # a half-written record: left for the next call
            out.write('{"parentUuid": "u00000001", "isSidechain": false, "t'[:40])
        stepped = fields(stdin_json(log, usage=USAGE))
        with log.open("rb+") as out:  # finish that line as the agent would
            out.seek(-40, os.SEEK_END)
            out.truncate()
    stepped = fields(stdin_json(log, usage=USAGE))
    os.environ["METIS_STATUSLINE_STATE_DIR"] = str(state_dir.parent / "fresh")
    whole = fields(stdin_json(log, usage=USAGE))
    assert stepped == whole
    assert whole["agent_compactions"] == 3


def test_a_call_reads_only_what_was_appended(tmp_path: Path, state_dir: Path) -> None:
    log = tmp_path / "s.jsonl"
    writer = ClaudeCodeWriter(5)
    write(log, writer, 40, "w")
    before = fields(stdin_json(log, usage=USAGE))
    # Scribble over the middle of what was read (same size, same first bytes): a reader that
    # starts over would now fail on those lines; an incremental one never looks at them again.
    data = bytearray(log.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 200] = b"#" * 200
    log.write_bytes(bytes(data))
    write(log, writer, 1)
    after = fields(stdin_json(log, usage=USAGE))
    assert after["note"] is None
    assert after["our_compactions"] >= before["our_compactions"]  # type: ignore[operator]
    os.environ["METIS_STATUSLINE_STATE_DIR"] = str(state_dir.parent / "fresh")
    assert fields(stdin_json(log, usage=USAGE)) != after  # a full read does see the damage


def test_stale_after_compact(tmp_path: Path) -> None:
    """Right after /compact Claude Code sends current_usage null (and a stale used_percentage):
    the line must not show the old percentage, and says the context is not measured yet."""
    log = tmp_path / "s.jsonl"
    writer = ClaudeCodeWriter(9, compact_every=5)
    write(log, writer, 5, "w")  # ends with the compact boundary and the summary
    raw = stdin_json(log, usage=None)
    f = fields(raw)
    assert f["ctx"] is None and f["ctx_pct"] is None and f["stale"] is True
    assert f["agent_compactions"] == 1 and f["last_before"] is not None
    line = run(raw, "--no-color")
    assert line.startswith("ctx ? (just compacted)")
    assert "45%" not in line
    write(log, writer, 1)  # the next response measures the new context
    f = fields(stdin_json(log, usage=USAGE))
    assert f["stale"] is False and f["last_after"] is not None and f["ctx"] == 90010


def test_a_codex_compaction_shows_its_size_after_from_codexs_recount(
    tmp_path: Path, state_dir: Path
) -> None:
    log = tmp_path / "rollout.jsonl"
    write_jsonl(log, [*CODEX_BEFORE_COMPACTING, COMPACTED])
    assert fields(stdin_json(log))["last_after"] is None  # not written yet
    with log.open("a") as out:
        out.write(RECOUNT + "\n")
    f = fields(stdin_json(log))
    assert (f["agent_compactions"], f["last_before"], f["last_after"]) == (1, 62_700, 3_150)


def older_stdin(transcript: Path, model_id: str = "claude-opus-4-1-20250805") -> bytes:
    """Claude Code before 2.0.65: no context_window object at all."""
    data = json.loads(stdin_json(transcript, model={"id": model_id, "display_name": "Opus 4.1"}))
    del data["context_window"]
    return json.dumps(data).encode()


def test_an_older_claude_code_gets_the_context_from_the_transcript(
    tmp_path: Path, state_dir: Path
) -> None:
    log = tmp_path / "s.jsonl"
    writer = ClaudeCodeWriter(9, compact_every=5)
    write(log, writer, 7, "w")
    usage = json.loads(log.read_text().splitlines()[-1])["message"]["usage"]
    recorded = (
        usage["input_tokens"]
        + usage["cache_read_input_tokens"]
        + usage["cache_creation_input_tokens"]
    )
    f = fields(older_stdin(log))
    assert (f["ctx"], f["ctx_from"], f["window"]) == (recorded, "transcript", 200_000)
    assert f["auto_left"] == 167_000 - recorded
    assert run(older_stdin(log), "--no-color").startswith(f"ctx {short(recorded)}/~200k ")
    assert fields(older_stdin(log, "claude-sonnet-4-5[1m]"))["window"] == 1_000_000
    # 2.0.65 sent a context_window with its size and session totals, but no current_usage.
    data = json.loads(older_stdin(log))
    data["context_window"] = {"total_input_tokens": 9, "context_window_size": 200_000}
    f = fields(json.dumps(data).encode())
    assert (f["ctx"], f["ctx_from"], f["window_from"]) == (recorded, "transcript", "claude-code")
    # Some versions report 200k for a 1M session: the model's id is believed over it.
    data["model"] = {"id": "claude-sonnet-4-5[1m]"}
    assert fields(json.dumps(data).encode())["window"] == 1_000_000
    # What Claude Code says wins where it says it.
    f = fields(stdin_json(log, usage=USAGE))
    assert (f["ctx"], f["ctx_from"], f["window"]) == (90_010, "claude-code", 200_000)
    assert f["window_from"] == "claude-code"
    # Just after a compaction the transcript has measured nothing since: not the old figure.
    write(log, writer, 3)  # turn 10 ends with the compact boundary and the summary
    f = fields(older_stdin(log))
    assert f["ctx"] is None and f["stale"] is True


def test_null_usage_at_a_sessions_start_is_not_called_a_compaction(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(9), 2, "w")
    f = fields(stdin_json(log, usage=None))
    assert f["ctx"] is None and f["stale"] is False
    assert run(stdin_json(log, usage=None), "--no-color").startswith("ctx ? (not measured yet)")


def test_truncated_file_starts_over(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(1, compact_every=3), 10, "w")
    assert fields(stdin_json(log, usage=USAGE))["agent_compactions"] == 3
    with log.open("r+b") as out:
        out.truncate(0)
    write(log, ClaudeCodeWriter(2), 2)
    f = fields(stdin_json(log, usage=USAGE))
    assert f["agent_compactions"] == 0 and f["note"] is None


def test_replaced_file_starts_over(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(1, compact_every=3), 10, "w")
    assert fields(stdin_json(log, usage=USAGE))["agent_compactions"] == 3
    other = tmp_path / "other.jsonl"
    write(other, ClaudeCodeWriter(1), 12, "w")  # same first bytes, bigger, no compaction
    os.replace(other, log)
    f = fields(stdin_json(log, usage=USAGE))
    assert f["agent_compactions"] == 0


def test_a_corrupt_state_file_is_ignored(tmp_path: Path, state_dir: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(4, compact_every=4), 9, "w")
    good = fields(stdin_json(log, usage=USAGE))
    key = state_key(str(log))
    for suffix, junk in (
        (".line.json", b'{"version": 1, "size": "x"}'),
        (".parse.msgpack", b"\x00\xff"),
    ):
        (state_dir / (key + suffix)).write_bytes(junk)
    assert fields(stdin_json(log, usage=USAGE)) == good
    (state_dir / (key + ".line.json")).write_bytes(b"\xff" * 100)
    assert fields(stdin_json(log, usage=USAGE)) == good


def test_a_file_that_is_not_a_transcript_gets_a_note(tmp_path: Path) -> None:
    log = tmp_path / "notes.jsonl"
    log.write_text('{"hello": 1}\n' * 30)
    f = fields(stdin_json(log, usage=USAGE))
    note = str(f["note"])
    assert note.startswith("not a transcript: ") and note.count("transcript") == 1, note
    assert f["ctx"] == 90010


# -- rendering -----------------------------------------------------------------------------------


def test_control_characters_are_neutralised(tmp_path: Path) -> None:
    raw = stdin_json(None, usage=USAGE, model={"display_name": "evil\x1b]0;owned\x07\u202e"})
    f = fields(raw)
    assert "\x1b" not in str(f["model"]) and "\u202e" not in str(f["model"])
    line = run(raw, "--format", "{model} {ctx}")
    assert "\x1b" not in line and "\x07" not in line
    assert line.endswith(" 90k")


def test_colour_follows_no_color_and_width(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(3, compact_every=4), 9, "w")
    raw = stdin_json(log, usage=USAGE)
    run(raw, "--sync")
    assert "\x1b[" in run(raw, "--width", "300")
    monkeypatch.setenv("NO_COLOR", "1")
    plain = run(raw, "--width", "300")
    assert "\x1b[" not in plain and "compactions 2 agent" in plain
    monkeypatch.setenv("COLUMNS", "40")
    narrow = run(raw)
    assert len(narrow) <= 40 and narrow.startswith("ctx 90k/200k 45%")


def test_template_fields(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(3, compact_every=4), 9, "w")
    raw = stdin_json(log, usage=USAGE)
    line = run(
        raw, "--sync", "--format", "{ctx_pct}% | {trigger} | {agent_compactions}/{our_compactions}"
    )
    f = fields(raw)
    assert line == f"45% | {f['trigger']} | 2/{f['our_compactions']}"


def test_template_tokens_read_as_on_the_line(tmp_path: Path) -> None:
    raw = stdin_json(tmp_path / "gone.jsonl", usage=USAGE)
    line = run(raw, "--format", "{ctx}/{window} {auto_left} left of {auto_at} ({ctx_pct}%)")
    assert line == "90k/200k 76k left of 167k (45%)"
    # the line's own words for the same figures
    assert "ctx 90k/200k 45% | auto-compact at 167k: 76k left" in run(raw, "--no-color")


@pytest.mark.parametrize("template", ["{ctx} {nope}", "{auto left}", "{}"])
def test_an_unknown_template_field_is_a_usage_error_naming_it(
    template: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    assert main(["--format", template], io.BytesIO(b"{}"), out) == 2
    assert out.getvalue() == ""
    err = capsys.readouterr().err
    name = template[template.rindex("{") : template.rindex("}") + 1]
    assert f"no field named {name}" in err
    assert "the fields are source, model, session, ctx," in err and "auto_left" in err


def test_format_takes_the_equals_form_too(tmp_path: Path) -> None:
    raw = stdin_json(tmp_path / "gone.jsonl", usage=USAGE)
    assert run(raw, "--format={ctx}") == "90k"


# -- a metis workspace ---------------------------------------------------------------------------


def test_a_metis_workspace(tmp_path: Path) -> None:
    from engine.store import SessionStore
    from metis_compaction_tui.demo.simulator import Simulator

    asyncio.run(Simulator(tmp_path, pace=0, turns=12, reruns=0, session_prefix="sl").run())
    with SessionStore.open(tmp_path) as store:
        info = store.list_sessions()[0]
        plan = store.plan(info.session_id)
        compactions = [c for c in store.compactions(info.session_id) if not c.undone]
    f = json.loads(run(b"", str(tmp_path), "--json", "--sync", "--session", info.session_id))
    assert f["source"] == "metis" and f["session"] == info.session_id
    assert f["pending"] == plan.decision.pending_history_tokens
    assert f["our_compactions"] == len(compactions) > 0
    assert f["last_after"] == compactions[-1].record.history_tokens_after
    assert f["compaction_usd"] == f"{info.spent_usd:.4f}"
    line = run(b"", str(tmp_path), "--no-color", "--width", "200", "--sync")
    assert line.startswith("history ") and "ours: " in line
    assert run(b"", str(tmp_path), "--no-color", "--width", "200") == line  # saved, current
    for flag in ("-w", "--workspace"):
        assert run(b"", flag, str(tmp_path), "--no-color", "--width", "200") == line
    assert "no such session" in run(b"", str(tmp_path), "--session", "nope")
    assert "no metis store" in run(b"", str(tmp_path / "missing"))


def test_a_workspace_line_reads_the_row_and_refreshes_the_rest_when_the_store_moved(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.layout import store_path
    from engine.store import SessionStore
    from engine.store.schema import SCHEMA_VERSION
    from engine.tokens import estimate_message_tokens
    from metis_compaction_tui.statusline import workspace as ws
    from metis_compaction_tui.statusline.workspace_refresh import compute_fields
    from tests.history_builders import SID, chat, new_store

    # the fast half's store path and schema version are the engine's
    assert ws.store_file(str(tmp_path)) == str(store_path(tmp_path.resolve()))

    assert ws.SCHEMA_VERSION == SCHEMA_VERSION
    store = new_store(tmp_path)
    first = chat(3)
    for message in first:
        store.append_message(SID, message, estimate_message_tokens(message))
    # before any refresh: the row's context and spend, a note, and a refresher to start
    spawned: list[tuple[object, ...]] = []
    monkeypatch.setattr(statusline, "start_detached", lambda *a, **k: spawned.append(a))
    f = json.loads(run(b"", str(tmp_path), "--json"))
    assert f["note"] == "reading store…" and f["pending"] is None
    assert f["ctx"] == store.session_info(SID).total_tokens
    assert len(spawned) == 1 and "workspace_refresh" in spawned[0][0][3]  # type: ignore[index]
    # the refresher's work, done here as the spawned process does it
    argv = spawned[0][0][4:]  # type: ignore[index]
    from metis_compaction_tui.statusline.workspace_refresh import main as refresher

    assert refresher(list(argv)) == 0  # type: ignore[arg-type]
    spawned.clear()
    f = json.loads(run(b"", str(tmp_path), "--json"))
    assert f == compute_fields(str(tmp_path), None) and spawned == []
    # a message appended: the saved figures with the row's fresh context, and one refresher,
    # unless the last refresh ended less than twice its run time ago
    more = chat(1, prefix="n")[0]
    store.append_message(SID, more, estimate_message_tokens(more))
    state = Path(ws.state_file(str(state_dir), ws.store_file(str(tmp_path)), None))
    saved = json.loads(state.read_text())
    state.write_text(json.dumps({**saved, "took_ms": 3_600_000}))  # a refresh of an hour
    g = json.loads(run(b"", str(tmp_path), "--json"))
    assert g["ctx"] == store.session_info(SID).total_tokens > f["ctx"]  # type: ignore[operator]
    assert g["pending"] == f["pending"] and spawned == []
    os.utime(state, (0, 0))  # ...that ended long ago
    assert json.loads(run(b"", str(tmp_path), "--json")) == g and len(spawned) == 1
    assert refresher(list(spawned[0][0][4:])) == 0  # type: ignore[index]
    assert json.loads(run(b"", str(tmp_path), "--json")) == compute_fields(str(tmp_path), None)
    store.close()
    # a corrupt or foreign state file is ignored, never shown
    state.write_text('{"version": 1, "fields": {"note": 5}}')
    assert json.loads(run(b"", str(tmp_path), "--json"))["note"] == "reading store…"
    with SessionStore.open(tmp_path) as again:
        assert again.session_info(SID).message_count == len(first) + 1


def test_a_file_that_is_no_store_or_another_version_gets_the_engines_words(tmp_path: Path) -> None:
    import sqlite3

    (tmp_path / ".metis").mkdir()
    store = tmp_path / ".metis" / "sessions.sqlite"
    store.write_bytes(b"not sqlite at all" * 100)
    note = json.loads(run(b"", str(tmp_path), "--json"))["note"]
    assert note.startswith("no metis store (") and "not" in note
    store.unlink()
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA user_version = 99")
    note = json.loads(run(b"", str(tmp_path), "--json"))["note"]
    assert "schema version 99" in note, note


# -- the command ---------------------------------------------------------------------------------


def test_the_command_imports_no_ui_and_no_engine_on_an_unchanged_transcript(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(3), 5, "w")
    raw = stdin_json(log, usage=USAGE)
    run(raw, "--sync")
    probe = (
        "import io, sys\n"
        "before = set(sys.modules)\n"
        "from metis_compaction_tui.cli import main\n"
        "from metis_compaction_tui.statusline import main as line\n"
        # with streams: run as the command, the line ends the process once it is out
        "line(['--no-color'], io.BytesIO(sys.argv[1].encode()), sys.stdout)\n"
        "names = ('textual', 'anthropic', 'argparse', 'msgspec', 'engine')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print('heavy:', heavy)\n"
        "ours = ('metis_compaction_tui', 'metis_compaction_tui.')\n"
        "print('new:', sorted(m for m in set(sys.modules) - before if not m.startswith(ours)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", probe, raw.decode()],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    line, heavy, new = done.stdout.splitlines()
    assert line.startswith("ctx 90k/200k 45%") and "ours: " in line
    assert heavy == "heavy: []"
    # Nothing of the standard library beyond what the interpreter had loaded but json's C
    # scanner: no json, re, zlib, collections.abc (each costs on every call).
    assert new == "new: ['_json']"
    command = subprocess.run(  # the command itself: exits without the teardown, line intact
        [sys.executable, "-m", "metis_compaction_tui.cli", "statusline", "--no-color"],
        input=raw,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert command.returncode == 0 and command.stdout.decode() == line + "\n"
    assert command.stderr == b""
    garbage = subprocess.run(
        [sys.executable, "-m", "metis_compaction_tui.cli", "statusline"],
        input=b"\x00garbage",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert garbage.returncode == 0 and garbage.stdout == (MARKER_NO_INPUT + "\n").encode()
    assert garbage.stderr == b""


def test_no_second_refresher_while_one_holds_the_lock(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from metis_compaction_tui.statusline import refresh_running

    log = tmp_path / "s.jsonl"
    write(log, ClaudeCodeWriter(3), 3, "w")
    fields(stdin_json(log, usage=USAGE))  # makes the state folder and the lock file
    lock = state_dir / (state_key(str(log)) + ".lock")
    assert not refresh_running(str(lock))
    with open(lock, "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert refresh_running(str(lock))
        write(log, ClaudeCodeWriter(4), 1)
        spawned: list[object] = []
        with monkeypatch.context() as patch:
            patch.setattr(statusline, "start_detached", lambda *a, **k: spawned.append(a))
            assert run(stdin_json(log, usage=USAGE), "--no-color")  # prints,
            assert spawned == []  # and spawns nothing while the lock is held
    assert not refresh_running(str(lock))
    with monkeypatch.context() as patch:  # the lock released: the grown file is read again
        patch.setattr(statusline, "start_detached", lambda *a, **k: spawned.append(a))
        assert run(stdin_json(log, usage=USAGE), "--no-color")
    assert len(spawned) == 1


def test_line_start_across_blocks(tmp_path: Path) -> None:
    from metis_compaction_tui.statusline.refresh import _line_start

    path = tmp_path / "lines.txt"
    lines = [("x" * (i % 997)).encode() + b"\n" for i in range(6000)]  # about 3 MB
    path.write_bytes(b"".join(lines))
    starts = [0]
    for raw in lines:
        starts.append(starts[-1] + len(raw))
    for first, line in ((0, 1), (0, 2), (0, 2500), (0, 6000), (1200, 1201), (1200, 5999)):
        assert _line_start(str(path), starts[first], first, line) == starts[line - 1]


@pytest.mark.parametrize("unterminated", [False, True])
def test_line_start_counted_back_from_the_end(tmp_path: Path, unterminated: bool) -> None:
    from metis_compaction_tui.statusline.refresh import _line_start_before

    path = tmp_path / "lines.txt"
    # blank lines count as lines too; about 3 MB, so the search crosses blocks
    lines = [("x" * (i % 997)).encode() + b"\n" for i in range(6000)]
    if unterminated:
        lines[-1] = lines[-1].rstrip(b"\n") or b"y"  # the last line taken without its newline
    path.write_bytes(b"".join(lines))
    starts = [0]
    for raw in lines:
        starts.append(starts[-1] + len(raw))
    end = starts[-1]
    for line in (1, 2, 997, 998, 2500, 5999, 6000):
        assert _line_start_before(str(path), end, 6000, line) == starts[line - 1], line


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_appends_cut_anywhere_give_what_one_read_gives(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """The agent's bytes arrive cut at arbitrary places (mid-record too); after every call the
    figures equal those of one read of the same bytes."""
    import random

    writer = ClaudeCodeWriter(seed, compact_every=4 + seed)
    stream = "".join(line for _ in range(30) for line in writer.turn()).encode()
    rng = random.Random(seed)
    cuts = [*sorted(rng.sample(range(1, len(stream)), 25)), len(stream)]
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"")
    done = 0
    for number, cut in enumerate(cuts):
        with log.open("ab") as out:
            out.write(stream[done:cut])
        done = cut
        stepped = fields(stdin_json(log, usage=USAGE))
        if number % 6 == 5 or cut == len(stream):
            monkeypatch.setenv("METIS_STATUSLINE_STATE_DIR", str(tmp_path / f"fresh-{number}"))
            whole = fields(stdin_json(log, usage=USAGE))
            monkeypatch.setenv("METIS_STATUSLINE_STATE_DIR", str(state_dir))
            assert stepped == whole, number
    assert stepped["agent_compactions"] == 30 // (4 + seed)


def test_a_rewind_to_before_the_seam_is_read_again(tmp_path: Path, state_dir: Path) -> None:
    """/rewind (or an edited prompt) appends a branch that starts at an old record: a read
    resumed at the seam cannot see that the chain went back, so it must start over."""
    log = tmp_path / "s.jsonl"
    writer = ClaudeCodeWriter(7)
    write(log, writer, 12, "w")
    before = fields(stdin_json(log, usage=USAGE))
    writer.parent = "u00000010"  # the branch hangs on an early record, long before the seam
    write(log, writer, 2)
    stepped = fields(stdin_json(log, usage=USAGE))
    os.environ["METIS_STATUSLINE_STATE_DIR"] = str(state_dir.parent / "fresh")
    whole = fields(stdin_json(log, usage=USAGE))
    assert stepped == whole
    assert whole["pending"] != before["pending"]
    # and an ordinary append afterwards still resumes (the branch's own parent is known now)
    os.environ["METIS_STATUSLINE_STATE_DIR"] = str(state_dir)
    write(log, writer, 1)
    stepped = fields(stdin_json(log, usage=USAGE))
    os.environ["METIS_STATUSLINE_STATE_DIR"] = str(state_dir.parent / "fresh-2")
    assert stepped == fields(stdin_json(log, usage=USAGE))


# -- statusline --settings -----------------------------------------------------------------------


def documented_input(tmp_path: Path) -> bytes:
    """Claude Code's statusLine input, every documented key (our own values)."""
    return json.dumps(
        {
            "hook_event_name": "Status",
            "session_id": "0b7e7d1c-0000-4000-8000-000000000002",
            "transcript_path": str(tmp_path / "none.jsonl"),
            "cwd": str(tmp_path),
            "model": {"id": "claude-opus-4-1", "display_name": "Opus"},
            "workspace": {"current_dir": str(tmp_path), "project_dir": str(tmp_path)},
            "version": "2.1.0",
            "output_style": {"name": "default"},
            "cost": {
                "total_cost_usd": 0.0123,
                "total_duration_ms": 45000,
                "total_api_duration_ms": 2300,
                "total_lines_added": 156,
                "total_lines_removed": 23,
            },
            "context_window": {
                "total_input_tokens": 15234,
                "total_output_tokens": 4521,
                "context_window_size": 200000,
                "used_percentage": 8,
                "remaining_percentage": 92,
                "current_usage": {
                    "input_tokens": 8500,
                    "output_tokens": 1200,
                    "cache_creation_input_tokens": 5000,
                    "cache_read_input_tokens": 2000,
                },
            },
            "exceeds_200k_tokens": False,
        }
    ).encode()


def settings_then_run(argv: list[str], tmp_path: Path, path: str) -> tuple[str, str]:
    """The block `argv --settings` prints, and what its command prints, run by a shell as
    Claude Code runs it, fed the documented input."""
    env = {**os.environ, "PATH": path, "METIS_STATUSLINE_STATE_DIR": str(tmp_path / "state")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [*argv, "statusline", "--settings"], capture_output=True, env=env, check=True, cwd=tmp_path
    )
    block = json.loads(done.stdout)["statusLine"]
    assert set(block) == {"type", "command", "padding"} and block["type"] == "command"
    command = block["command"]
    line = subprocess.run(
        ["/bin/sh", "-c", command],
        input=documented_input(tmp_path),
        capture_output=True,
        env={**env, "COLUMNS": "200", "NO_COLOR": "1"},
        cwd="/",
        check=True,
        timeout=60,
    ).stdout.decode()
    return command, line


def test_settings_names_the_installed_command_by_absolute_path(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("metis-compaction-tui")
    assert script.is_file()
    command, line = settings_then_run([str(script)], tmp_path, "/usr/bin:/bin")
    assert command == f"{script} statusline"
    assert line.startswith("ctx 15k/200k 8% | auto-compact at 167k: 151k left"), line


def test_settings_quotes_a_path_with_a_space(tmp_path: Path) -> None:
    folder = tmp_path / "my tools"
    folder.mkdir()
    script = folder / "metis-compaction-tui"
    script.write_bytes(Path(sys.executable).with_name("metis-compaction-tui").read_bytes())
    script.chmod(0o755)
    command, line = settings_then_run([str(script)], tmp_path, "/usr/bin:/bin")
    assert command == f"'{script}' statusline"
    assert line.startswith("ctx 15k/200k 8%"), line


def test_settings_without_the_script_runs_this_interpreter(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "metis_compaction_tui.cli"]
    command, line = settings_then_run(argv, tmp_path, "/usr/bin:/bin")
    assert command == f"{sys.executable} -m metis_compaction_tui.cli statusline"
    assert line.startswith("ctx 15k/200k 8%"), line


def test_the_refreshers_import_no_summarizer_and_the_workspace_line_no_engine(
    tmp_path: Path,
) -> None:
    from metis_compaction_tui.demo.simulator import Simulator

    asyncio.run(Simulator(tmp_path, pace=0, turns=4, reruns=0).run())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run(b"", str(tmp_path), "--sync")  # the figures saved: the next line only reads
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from metis_compaction_tui.statusline import main\n"
        "main(sys.argv[1:], None, sys.stdout)\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in"
        " ('engine', 'msgspec', 'argparse', 'pathlib', 'typing')))\n"
        "from metis_compaction_tui.statusline import REFRESHER_PRELUDE\n"
        "exec(REFRESHER_PRELUDE)\n"  # as a spawned refresher starts
        "import metis_compaction_tui.statusline.refresh\n"
        "import metis_compaction_tui.statusline.workspace_refresh\n"
        "import json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('engine.summarizers.'))))\n"
        "print(sorted({'typing_extensions', 'inspect'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path), "--no-color"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    line, line_modules, summarizer_modules, lean = done.stdout.splitlines()
    assert line.startswith("history ") and "ours: " in line
    assert line_modules == "[]"
    # the package's protocol, price table and prompt version come with engine.config; no
    # summarizer itself (the offline one compiles 33 expressions on import)
    loaded = set(json.loads(summarizer_modules))
    assert loaded <= {
        "engine.summarizers.base",
        "engine.summarizers.pricing",
        "engine.prompt",
        "engine.summarizers.settings",
    }, loaded
    assert lean == "[]"  # msgspec without typing_extensions, which brings inspect (lean_msgspec)


def test_the_line_names_the_engines_trust_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The line stamps the trust records' folder without importing the engine; both name one."""
    from engine import config_path, record_path
    from metis_compaction_tui.statusline import workspace as ws

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert ws.trust_dir() == str(record_path(tmp_path).parent)
    assert os.path.join(str(tmp_path), *ws.CONFIG_PARTS) == str(config_path(tmp_path))
