"""Real second processes for the tests, each in its own process group so that a test that fails
or times out leaves nothing behind: tests/conftest.py kills every group still alive after a test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_STARTED: list[subprocess.Popen[str]] = []


def spawn_worker(script: Path, *args: object) -> subprocess.Popen[str]:
    """`python script args...` from the repository root, stdout/stderr piped as text."""
    proc = subprocess.Popen(
        [sys.executable, str(script), *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: killing the group takes its children too
    )
    _STARTED.append(proc)
    return proc


def kill_group(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def reap_all() -> list[int]:
    """Kill what the last test left running; returns the pids that were still alive."""
    alive = [proc.pid for proc in _STARTED if proc.poll() is None]
    while _STARTED:
        kill_group(_STARTED.pop())
    return alive
