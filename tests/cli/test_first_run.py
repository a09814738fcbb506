"""A user's first commands: what they say when there is nothing to do yet."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine.layout import store_path
from tests.cli_process import ROOT, run_cli

TWO_MESSAGES = ROOT / "tests/fixtures/transcripts/claude-code/partial_last_line.jsonl"
WHY = "no compactable span: all 2 messages are in the preserved tail"


def test_status_and_a_dry_run_give_one_reason_for_nothing_to_compact() -> None:
    status = run_cli("status", str(TWO_MESSAGES))
    dry_run = run_cli("compact", str(TWO_MESSAGES), "--dry-run")
    assert status.returncode == 0, status.stderr
    assert WHY in status.stdout
    assert dry_run.returncode == 1
    # One line for the reason; the file's unfinished last line is named on a line of its own.
    *notes, reason = dry_run.stderr.splitlines()
    assert WHY in reason and all("skipped" in note for note in notes)
    assert "tool cycle" not in dry_run.stderr + status.stdout


def test_a_long_history_without_a_boundary_names_the_tool_cycle(tmp_path: Path) -> None:
    from engine.errors import no_span_reason

    assert no_span_reason(40, 5) == (
        "no compactable span: no complete tool cycle ends before the preserved tail"
    )
    assert "compacted part (up to message 12)" in no_span_reason(15, 5, floor=12)


def test_a_demo_ended_by_sigterm_removes_its_workspace(tmp_path: Path) -> None:
    """The demo's simulator alone (--no-app), stopped the way a terminal or a supervisor does."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    command = [sys.executable, "-m", "metis_compaction_tui.cli", "demo", "--no-app", "-q"]
    proc = subprocess.Popen(
        [*command, "--seconds", "120", "--pace", "20"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("demo workspace: "), first
        workspace = Path(first.removeprefix("demo workspace: ").strip())
        deadline = time.monotonic() + 60
        while not store_path(workspace).exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert not workspace.exists()
    assert list(tmp_path.iterdir()) == []
