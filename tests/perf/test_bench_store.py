"""tests/perf/bench_store.py --quick runs and prints every figure beside its target, so the script
cannot rot. Its numbers are measurements, not asserted (no wall-clock asserts in tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # minutes of real processes; not in the fast subset

ROOT = Path(__file__).resolve().parents[2]


def test_bench_store_quick_prints_every_figure_and_target() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "perf" / "bench_store.py"), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for row, target in (
        ("commit -> tailer sees it, median", "< 50 ms"),
        ("commit -> tailer sees it, p99", "< 250 ms"),
        ("update cost ratio", "< 2"),
        ("open + snapshot", "< 1 s"),
        ("open + manager()", "< 0.3 s"),
    ):
        line = next((x for x in done.stdout.splitlines() if row in x), None)
        assert line is not None, f"no {row!r} row"
        assert target in line
