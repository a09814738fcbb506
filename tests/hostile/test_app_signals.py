"""SIGTERM or SIGHUP to the app left the terminal in the alternate screen
with mouse tracking on (the default action killed the process before Textual could restore it).
The app runs here under a real pty; after the signal, what it writes must leave the alternate
screen and turn mouse tracking off, and it must exit by itself."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT
from tests.hostile.test_read_back import grown_store

ENTER_ALT, LEAVE_ALT = b"\x1b[?1049h", b"\x1b[?1049l"
MOUSE_OFF = b"\x1b[?1000l"


def _read_until(fd: int, wanted: bytes, seen: bytearray, limit_s: float) -> bool:
    deadline = time.monotonic() + limit_s
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the pty
                return wanted in seen
            if not chunk:
                return wanted in seen
            seen += chunk
    return wanted in seen


@pytest.mark.parametrize(
    "sig",
    [
        pytest.param(signal.SIGTERM, id="TERM"),
        pytest.param(signal.SIGHUP, id="HUP", marks=pytest.mark.slow),  # ~7 s each: one is quick
    ],
)
def test_a_signal_to_the_app_restores_the_terminal(tmp_path: Path, sig: signal.Signals) -> None:
    grown_store(tmp_path, turns=4).close()
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 110, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "110", "LINES": "30"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "metis_compaction_tui.cli", "open", str(tmp_path)],
        cwd=ROOT, stdin=follower, stdout=follower, stderr=follower, env=env,
        start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    seen = bytearray()
    try:
        assert _read_until(leader, ENTER_ALT, seen, 60), bytes(seen[-400:])
        assert _read_until(leader, b"Sessions", seen, 60), bytes(seen[-400:])
        time.sleep(0.5)  # drawn and idle: the signal lands in the running app
        mark = len(seen)
        proc.send_signal(sig)
        _read_until(leader, LEAVE_ALT, seen, 20)
        after = bytes(seen[mark:])
        assert LEAVE_ALT in after, after[-400:]
        assert MOUSE_OFF in after, after[-400:]
        assert proc.wait(timeout=20) == 128 + sig  # its own exit path, not killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)


STUCK_EXIT = """
import asyncio, os, signal, sys
sys.path.insert(0, sys.argv[1])
from metis_compaction_tui.signals import install_exit_signals

async def main():
    asked = []
    install_exit_signals(asked.append)  # an exit that never finishes, as a stuck shutdown
    os.kill(os.getpid(), signal.SIGHUP)
    await asyncio.sleep(0.2)
    assert asked == [128 + signal.SIGHUP], asked
    print("first", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.sleep(30)

asyncio.run(main())
"""


def test_a_second_signal_ends_an_exit_that_sticks() -> None:
    """Seen in tmux: the terminal hung up, a TERM followed, and Textual's shutdown waited for
    ever on the gone terminal. A second signal while exiting ends the process by that signal."""
    done = subprocess.run(
        [sys.executable, "-c", STUCK_EXIT, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert done.stdout == "first\n", done.stderr
    assert done.returncode == -signal.SIGTERM
