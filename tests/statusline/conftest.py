"""The status line's tests: each gets its own state folder and Claude Code settings folder (never
the user's), no NO_COLOR and none of Claude Code's auto-compact variables. A test ends once the
detached refreshers it started have: one still writing its state folder after the run's temporary
folder is removed would make it again (os.makedirs), left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REFRESHER_WAIT_S = 15


def refreshers_of(directory: Path) -> list[int]:
    """The live processes given `directory` as an argument: the refreshers writing to it."""
    mark = str(directory).encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue  # gone meanwhile
            if mark in argv:
                found.append(int(entry))
    return found


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "state"
    monkeypatch.setenv("METIS_STATUSLINE_STATE_DIR", str(directory))
    monkeypatch.delenv("NO_COLOR", raising=False)
    # Claude Code's own settings and variables move the auto-compact point: never the user's.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    for name in ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    yield directory
    deadline = time.monotonic() + REFRESHER_WAIT_S
    while refreshers_of(directory) and time.monotonic() < deadline:
        time.sleep(0.02)
