"""Shared by the transcript tests and benchmarks: one config, one source, and what the app's feed
does with a poll (reload on a compaction, grow otherwise)."""

from __future__ import annotations

from pathlib import Path

from engine import CompactionConfig
from metis_compaction_tui.sources.base import SourceChange
from metis_compaction_tui.sources.session_data import SessionData
from metis_compaction_tui.sources.transcript import TranscriptSource

TRANSCRIPT_CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=2_000,
    compaction_hard_cap_tokens=6_000,
    compaction_preserve_recent_turns=3,
)


def transcript_source(
    path: Path, tmp_path: Path, config: CompactionConfig = TRANSCRIPT_CONFIG
) -> TranscriptSource:
    return TranscriptSource([path], scratch=tmp_path / "scratch", config=config)


def grow_by(data: SessionData, change: SourceChange) -> tuple[int, int]:
    """What the app's on_session_grew does with one change: (messages added, events added)."""
    return data.grow(change)


def consume(source: TranscriptSource, data: SessionData) -> SessionData:
    """What the app's feed and on_session_grew do with one poll."""
    for change in source.poll():
        if change.session_id != data.session_id:
            continue
        if change.compacted:
            data = source.load(data.session_id)
        else:
            grow_by(data, change)
    return data
