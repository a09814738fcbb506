"""Agent transcripts (Claude Code, Codex) as app sessions: the recording (sources/recording.py),
live, plus what-ifs.

Each transcript is tailed (`TranscriptTail`, O(new bytes) a poll) and mirrored into a
`MemorySource` session, so the dashboard, compact now, undo and the cache browser work on it as on
a metis store. The transcript file is only ever read: what-if compactions change the in-memory
session and write summaries to the scratch workspace's cache, nowhere else. New knobs rebuild the
session from the recording under them, which drops the what-if compactions made before.

The agent's own summaries come in as ordinary messages. Kept synthetic, each would be our
compaction floor (§3.2) and hide everything before it from the what-if; `AgentView` marks them
instead, beside where our engine would have compacted (engine.policy.projection).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from pathlib import Path

from engine import (
    AsyncCompactionCache,
    CompactionConfig,
    Message,
    SessionManager,
    Summarizer,
    SummarizerSettings,
    decide_trigger,
)
from metis_compaction_tui.defaults import DEFAULT_LIMIT
from metis_compaction_tui.importers import TranscriptError, probe_head
from metis_compaction_tui.sources.base import (
    ALL_ACTIONS,
    CompactionLands,
    SessionRow,
    SourceChange,
    SourceUnavailable,
)
from metis_compaction_tui.sources.memory import MemorySource
from metis_compaction_tui.sources.recording import (
    Recording,
    discover_transcripts,
    modified_time,
    session_title,
)
from metis_compaction_tui.sources.session_data import CompactionInfo, SessionData


class TranscriptSource:
    """A SessionSource over transcript files; what-ifs go to `scratch` (a workspace folder)."""

    actions = ALL_ACTIONS  # compact now and undo act on the in-memory copy, never the file
    compaction_lands: CompactionLands = "what_if"
    progress: Callable[[str], None] | None = None  # set by the app

    def __init__(
        self,
        paths: Sequence[Path],
        *,
        scratch: Path,
        config: CompactionConfig | None = None,
        label: str | None = None,
        summarizer: Callable[[], Summarizer] | None = None,
        clock: Callable[[], int] | None = None,
        summarizer_settings: SummarizerSettings | None = None,
    ) -> None:
        if not paths:
            raise ValueError("no transcripts to inspect")
        self.config = config or CompactionConfig(compaction_model="local:extractive")
        self.label = label or (str(paths[0]) if len(paths) == 1 else f"{len(paths)} transcripts")
        self.scratch = scratch
        self.memory = MemorySource(
            self.label,
            workspace=scratch,
            summarizer=summarizer,
            clock=clock,
            summarizer_settings=summarizer_settings,
        )
        self.lock = threading.RLock()
        self.recordings: dict[str, Recording] = {}
        for path in paths:
            session_id = path.stem
            while session_id in self.recordings:
                session_id += "+"
            self.recordings[session_id] = Recording(path, session_id, self.config)

    @classmethod
    def for_path(
        cls, path: Path | None, *, scratch: Path, limit: int = DEFAULT_LIMIT, **kwargs: object
    ) -> TranscriptSource:
        """A file, a folder of transcripts, or (None) the agents' default log folders."""
        paths = discover_transcripts(path, limit)
        label = str(path) if path is not None else "Claude Code and Codex logs"
        return cls(paths, scratch=scratch, label=label, **kwargs)  # type: ignore[arg-type]

    # -- reading -------------------------------------------------------------------------------

    def _read(self, recording: Recording, *, first: bool = False) -> SourceChange | None:
        """Poll one transcript into its session; None when nothing changed."""
        report = self.progress if first else None
        name = recording.path.name

        def lines_read(done: int, total: int) -> None:
            if report is not None:
                report(f"reading {name}: {done * 100 // total}% of {total:,} lines")

        if recording.read and not recording.path.exists():
            # Gone (deleted, moved): a problem until it is back, not a session emptied.
            recording.problem = "the file is gone (deleted or moved)"
            raise SourceUnavailable(f"{recording.path}: {recording.problem}")
        try:
            update = recording.tail.poll(progress=lines_read if report else None)
            recording.tail.refuse_undecided()  # never an empty session for a file of junk
        except TranscriptError as error:
            recording.problem = error.detail
            raise SourceUnavailable(error.located()) from None
        except OSError as error:
            recording.problem = str(error.strerror or error)
            raise SourceUnavailable(f"{recording.path}: {recording.problem}") from None
        recording.problem = None
        recording.title = session_title(recording.path, recording.tail)
        lines_moved = update.line_count != recording.line_count
        recording.line_count = update.line_count
        lines_moved = recording.refresh_notes() or lines_moved
        if not update.changed and not first:
            # Skipped records (snapshots, progress) move only the line count.
            return (
                SourceChange(recording.session_id, agent=recording.view()) if lines_moved else None
            )
        session_id = recording.session_id
        rebuild = first or update.reset
        dropped = recording.apply(update.reset, update.rewrite_from, update.messages)
        if update.reset:
            recording.compactions = list(update.agent_compactions)
            recording.take_usage(0, update.recorded_usage)
        else:
            recording.take_compactions(update.compactions_from, update.agent_compactions)
            recording.take_usage(update.usage_from, update.recorded_usage)
        start = len(recording.messages) - len(update.messages)
        new = list(zip(recording.messages[start:], recording.tokens[start:], strict=True))
        if not rebuild and dropped:
            rebuild = not self.memory.rewrite_tail(session_id, dropped, new)
        elif not rebuild:
            self.memory.extend(session_id, new)
        if rebuild:
            self._rebuild(recording)  # the reload (load) delivers every event again
        recording.read = True
        recording.refresh_notes()  # the session may have gone from empty to not
        view = recording.view()
        sent = min(recording.events_sent, update.compactions_from)  # the changed ones again
        events = [] if rebuild else recording.agent_events(sent)
        recording.events_sent = len(view.compactions)
        return SourceChange(session_id, new_events=events, agent=view)

    def _rebuild(self, recording: Recording) -> None:
        """The session from the recording alone: what-ifs dropped, a reload for the app."""
        memory = self.memory
        memory.remove_session(recording.session_id)
        memory.add_session(
            recording.session_id,
            recording.messages,
            title=recording.title,
            config=recording.config,
        )
        memory.reload(recording.session_id)

    def _ensure_read(self, session_id: str) -> Recording:
        recording = self.recordings[session_id]
        if not recording.read:
            self._read(recording, first=True)
        return recording

    # -- SessionSource -------------------------------------------------------------------------

    def open(self) -> None:
        return None

    def close(self) -> None:
        return None

    def sessions(self) -> list[SessionRow]:
        with self.lock:
            rows = {row.session_id: row for row in self.memory.sessions()}
            listed = []
            for session_id, recording in self.recordings.items():
                if not recording.read and not recording.probed:
                    recording.probed = True  # 64 KiB once: a bad file is named before picked
                    recording.problem = probe_head(recording.path)
                row = rows.get(session_id)
                # Not read yet (read when picked), or unreadable: then never an empty session
                # but what is wrong with it.
                if row is None or recording.problem is not None:
                    row = SessionRow(
                        session_id,
                        recording.title,
                        0,
                        decide_trigger(0, recording.config, Decimal(0)),
                        int(modified_time(recording.path) * 1000),
                        problem=recording.problem,
                        read=False,
                    )
                listed.append(row)
            return listed

    def load(self, session_id: str) -> SessionData:
        with self.lock:
            recording = self._ensure_read(session_id)
            data = self.memory.load(session_id)
            # What is queued for this session is in `data` already: no second reload for it.
            self.memory.loaded(session_id)
            recording.refresh_notes()
            data.agent = recording.view()
            data.events = recording.agent_events() + data.events
            recording.events_sent = len(data.agent.compactions)
            data.source_label = str(recording.path)
            return data

    def poll(self) -> list[SourceChange]:
        with self.lock:
            agent_changes = []
            for recording in self.recordings.values():
                if not recording.read:
                    continue
                had_problem = recording.problem is not None
                try:
                    change = self._read(recording)
                except SourceUnavailable:
                    if len(self.recordings) == 1:
                        raise  # the one file the app shows: a banner names the problem
                    # One bad file in a folder does not stop the others: its row says why.
                    if not had_problem:
                        agent_changes.append(
                            SourceChange(recording.session_id, sessions_changed=True)
                        )
                    continue
                if had_problem:
                    agent_changes.append(SourceChange(recording.session_id, sessions_changed=True))
                if change is not None:
                    agent_changes.append(change)
            changes = self.memory.poll()
            # The agent's facts ride on the session's last change, or on one of their own.
            latest = {c.session_id: c for c in agent_changes if c.agent is not None}
            changes += [c for c in agent_changes if c.agent is None]
            for change in reversed(changes):
                if change.session_id in latest and change.agent is None:
                    own = latest.pop(change.session_id)
                    change.agent = own.agent
                    change.new_events = own.new_events + change.new_events
            return changes + list(latest.values())

    def wait(self, timeout_s: float, wake: threading.Event) -> None:
        wake.wait(timeout_s)

    def originals(self, info: CompactionInfo) -> list[tuple[Message, int]]:
        return self.memory.originals(info)

    def managing(self, session_id: str) -> AbstractContextManager[SessionManager]:
        with self.lock:
            self._ensure_read(session_id)
        return self.memory.managing(session_id)

    def undo_latest(self, session_id: str) -> CompactionInfo:
        return self.memory.undo_latest(session_id)

    def open_cache(self) -> AsyncCompactionCache | None:
        return self.memory.open_cache()

    def cache_backers(self) -> dict[str, list[tuple[str, str]]]:
        return self.memory.cache_backers()

    def set_config(self, session_id: str, config: CompactionConfig) -> None:
        with self.lock:
            recording = self._ensure_read(session_id)
            recording.reproject(config)
            self._rebuild(recording)


def scratch_dir() -> Path:
    """Where what-ifs keep their cache between runs (XDG cache home)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "metis-compaction-tui" / "inspect"
