"""Our projected fires over a long recording are a bounded summary: the first, the most recent
few, their count and their span tokens, never the whole list (a 100 MB log fires some 25,000
times, and `status --json` printed 7.3 MB of them)."""

from __future__ import annotations

import json
from pathlib import Path

from engine import CompactionConfig
from engine.policy.projection import project_compactions
from engine.tokens import estimate_message_tokens
from metis_compaction_tui.sources.recording import PROJECTED_SHOWN, read_recording
from tests.cli_process import run_cli
from tests.transcript_writer import ClaudeCodeWriter

CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=1_500,
    compaction_hard_cap_tokens=3_000,
)


def test_many_fires_are_summarised_not_listed(tmp_path: Path) -> None:
    log = tmp_path / "long.jsonl"
    writer = ClaudeCodeWriter(4)
    with log.open("w") as out:
        for _ in range(150):
            out.writelines(writer.turn())
    recording = read_recording(log, CONFIG)
    every = project_compactions(
        ((m, estimate_message_tokens(m)) for m in recording.messages), CONFIG
    )
    assert len(every) > PROJECTED_SHOWN + 1  # enough to be cut
    view = recording.view()
    assert view.projected == (every[0], *every[-PROJECTED_SHOWN:])
    assert view.projected_count == len(every)
    assert view.projected_span_tokens == sum(f.span_tokens for f in every)
    assert recording.view().projected is view.projected  # not copied again when nothing moved


def test_status_json_carries_the_summary(tmp_path: Path) -> None:
    log = tmp_path / "long.jsonl"
    writer = ClaudeCodeWriter(4)
    with log.open("w") as out:
        for _ in range(150):
            out.writelines(writer.turn())
    recording = read_recording(log, CONFIG)
    done = run_cli(
        "status",
        str(log),
        "--json",
        "--set",
        "compaction_threshold_tokens=1500",
        "--set",
        "compaction_hard_cap_tokens=3000",
    )
    assert done.returncode == 0, done.stderr
    transcript = json.loads(done.stdout)["sessions"][0]["transcript"]
    assert len(transcript["projected_compactions"]) == PROJECTED_SHOWN + 1
    assert transcript["projected_count"] == recording.view().projected_count
    assert transcript["projected_count"] > PROJECTED_SHOWN + 1
