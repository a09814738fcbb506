"""The status line's tests: each gets its own state folder and Claude Code settings folder (never
the user's), no NO_COLOR and none of Claude Code's auto-compact variables."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "state"
    monkeypatch.setenv("METIS_STATUSLINE_STATE_DIR", str(directory))
    monkeypatch.delenv("NO_COLOR", raising=False)
    # Claude Code's own settings and variables move the auto-compact point: never the user's.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    for name in ("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    return directory
