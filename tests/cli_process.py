"""The CLI run as its own process, as a user (or metis dev) would run it from a shell."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(
    *argv: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m metis_compaction_tui.cli ARGV...` from the checkout; output captured as text."""
    command = [sys.executable, "-m", "metis_compaction_tui.cli", *argv]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
