"""The load script's --quick smoke (20 s at 200 msg/s, a compaction every 5 s, the real app
tailing in tmux): every message written is seen once by the tailer process and is in the store
once, active or archived; the app ran to the end, its RSS was sampled, and its screen caught up
with the store (message count, revision, compactions, the last message's row)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT

pytestmark = pytest.mark.slow  # minutes of real processes; not in the fast subset

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
    out = done.stdout
    report, _ = json.JSONDecoder().raw_decode(out, out.index("{", out.index("report: ")))
    assert report["written"] == report["tailer_seen"] == report["store_originals_unique"]
    assert report["written"] == report["store_active_originals"] + report["store_archived"]
    assert report["tailer_duplicates"] == 0 and report["compactions"] > 0
    assert report["store_revision"] == report["compactions"]
    assert "every message accounted for" in out

    app = report["app"]
    assert app["running_to_the_end"], out
    rss = app["rss_kb"]
    assert rss["samples"] >= 10 and 10_000 < rss["last"][1] < 1_000_000, rss
    if shutil.which("tmux"):
        assert app["screen"]["checked"] and app["screen"]["caught_up"], out
        assert app["screen"]["missing"] == []
        assert f"{report['store_active_messages']:,} msgs · rev {report['compactions']}" in out
        assert "app kept up:" in out
    else:
        assert "app screen not checked" in out
