"""The app's Pilot tests run over a fresh copy of the demo workspace (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(demo_workspace: Path) -> Path:
    return demo_workspace
