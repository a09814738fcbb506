"""The CLI tests read a workspace where the simulated metis dev ran (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(simulated_workspace: Path) -> Path:
    return simulated_workspace
