"""Importers: Claude Code and Codex CLI session logs as canonical messages.

`load_transcript()` reads a whole file; `TranscriptTail` follows one that is still being written.
Message text is imported verbatim and never interpreted.
"""

from __future__ import annotations

import os
from pathlib import Path

from metis_compaction_tui.importers.model import (
    AgentCompaction,
    ContextReduction,
    ImportedTranscript,
    RecordedUsage,
    TranscriptError,
    TranscriptFormat,
    skipped_lines_summary,
)
from metis_compaction_tui.importers.tail import (
    TailUpdate,
    TranscriptTail,
    detect_format,
    probe_head,
)

__all__ = [
    "AgentCompaction",
    "ContextReduction",
    "ImportedTranscript",
    "RecordedUsage",
    "TailUpdate",
    "TranscriptError",
    "TranscriptFormat",
    "TranscriptTail",
    "default_transcript_roots",
    "detect_format",
    "find_transcripts",
    "load_transcript",
    "probe_head",
    "skipped_lines_summary",
]


def load_transcript(path: str | os.PathLike[str]) -> ImportedTranscript:
    """Import a whole transcript, detecting its format from its content.

    Raises FileNotFoundError for a missing file and TranscriptError for a file with no transcript
    record at all (NUL bytes, text without a newline, JSON of something else) or one that is not
    a regular file (a named pipe). Broken or unknown lines are skipped and reported
    (`skipped_lines`, and one sentence in `warnings`); an unfinished last line is reported in
    `warnings`.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"no transcript at {os.fspath(path)}")
    tail = TranscriptTail(path)
    tail.poll(final=True)
    tail.refuse_undecided(final=True)
    return tail.transcript()


def default_transcript_roots() -> list[Path]:
    """Where the agents keep their logs, honouring their config-directory overrides. Codex
    moves a rollout it archives from sessions/ to archived_sessions/: both are read."""
    claude = os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude"
    codex = os.environ.get("CODEX_HOME") or Path.home() / ".codex"
    return [
        Path(claude) / "projects",
        Path(codex) / "sessions",
        Path(codex) / "archived_sessions",
    ]


def find_transcripts(root: str | os.PathLike[str]) -> list[Path]:
    """Every transcript under `root`, most recently modified first.

    Claude Code's sub-agent logs (agent-*.jsonl) are left out: all their records are sidechain
    records, so they import as empty histories.
    """
    found: list[tuple[float, Path]] = []
    for path in Path(root).rglob("*.jsonl"):
        if path.name.startswith("agent-"):
            continue
        try:
            stat = path.stat()
        except OSError:
            continue  # removed while we looked
        if not path.is_dir():  # a named pipe too: listed, then refused saying what it is
            found.append((stat.st_mtime, path))
    found.sort(key=lambda item: (-item[0], str(item[1])))
    return [path for _, path in found]
