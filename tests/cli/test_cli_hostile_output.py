"""CLI side: data read back never reaches the terminal as a control sequence, a closed pipe or a
full disk is not a traceback, and exit codes say whether anything was committed (all through
the output layer, cli/output.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from engine.layout import cache_path, store_path
from metis_compaction_tui.cli import dispatch as cli

ROOT = Path(__file__).resolve().parents[2]
EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\u202e"


def _poison(workspace: Path) -> None:
    with sqlite3.connect(store_path(workspace)) as db:
        db.execute("UPDATE sessions SET title = ?", (EVIL,))
    with sqlite3.connect(cache_path(workspace)) as db:
        db.execute("UPDATE compaction_cache SET summarization_model = ?", ("m" + EVIL,))


def _cli(*argv: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "metis_compaction_tui.cli", *argv],
        stdout=stdout, stderr=subprocess.PIPE, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip


def test_status_and_cache_list_write_no_control_sequence(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _poison(workspace)
    for argv in (["status"], ["cache", "list"], ["status", "--json"], ["cache", "list", "--json"]):
        assert cli.main([*argv, str(workspace)]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, argv
        assert "\u202e" not in out, argv
        if "--json" in argv:  # the data survives exactly in JSON
            assert EVIL in out.encode().decode("unicode_escape", "ignore") or "\\u001b" in out
            msgspec.json.decode(out)


def test_closed_pipe_and_full_disk_are_quiet(workspace: Path) -> None:
    head = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    done = _cli("status", str(workspace), stdout=head.stdin)
    head.stdin.close()  # type: ignore[union-attr]
    head.wait()
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    with open("/dev/full", "w") as full:
        done = _cli("cache", "list", str(workspace), stdout=full)
    assert b"Traceback" not in done.stderr and done.returncode == 3, done.stderr


def test_a_commit_with_stdout_on_a_full_disk_exits_0_without_a_traceback(workspace: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _cli("cache", "clear", "--yes", str(workspace), stdout=full)
    assert b"Traceback" not in done.stderr
    with sqlite3.connect(cache_path(workspace)) as db:
        left = db.execute("SELECT count(*) FROM compaction_cache").fetchone()[0]
    assert left == 0 and done.returncode == 0, done.stderr  # committed: the committed code


def test_undo_exit_code_says_whether_it_committed(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = store_path(workspace)
    with sqlite3.connect(store) as db:
        sid = db.execute("SELECT session_id FROM sessions").fetchone()[0]
        db.execute("UPDATE compactions SET record = 'garbage'")
        before = db.execute("SELECT revision FROM sessions").fetchone()[0]
    code = cli.main(["undo", sid, str(workspace)])
    capsys.readouterr()
    with sqlite3.connect(store) as db:
        after = db.execute("SELECT revision FROM sessions").fetchone()[0]
    assert (code == 0) == (after != before), (code, before, after)
