"""The status line's tests: each gets its own state folder (never the user's) and no NO_COLOR."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "state"
    monkeypatch.setenv("METIS_STATUSLINE_STATE_DIR", str(directory))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return directory
