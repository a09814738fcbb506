"""The load script's --quick smoke (20 s at 200 msg/s, a compaction every 5 s): every message
written is seen once by the tailer process and is in the store once, active or archived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.hostile.conftest import ROOT

LOAD = Path(__file__).with_name("load.py")


def test_the_quick_load_run_accounts_for_every_message() -> None:
    done = subprocess.run(
        [sys.executable, str(LOAD), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout[done.stdout.index("{") : done.stdout.rindex("}") + 1])
    assert report["written"] == report["tailer_seen"] == report["store_originals_unique"]
    assert report["written"] == report["store_active_originals"] + report["store_archived"]
    assert report["tailer_duplicates"] == 0 and report["compactions"] > 0
    assert "every message accounted for" in done.stdout
