"""One agent transcript (Claude Code, Codex) read: its messages, the agent's own compactions and
usage, and our engine's projection over it (engine.policy.projection).

What `status FILE` reads, without the app's machinery: the live source with its what-ifs
(SessionManager, the cache, asyncio) is sources/transcript.py.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Sequence
from pathlib import Path

from engine import (
    CompactionConfig,
    Message,
    ProjectedCompaction,
    Projection,
    estimate_message_tokens,
)
from metis_compaction_tui.defaults import DEFAULT_LIMIT
from metis_compaction_tui.importers import (
    AgentCompaction,
    RecordedUsage,
    TranscriptTail,
    default_transcript_roots,
    find_transcripts,
)
from metis_compaction_tui.importers.model import as_ordinary
from metis_compaction_tui.safe_text import neutralise
from metis_compaction_tui.sources.session_data import (
    AGENT_COMPACTION,
    AgentCompactionView,
    AgentView,
    EventRow,
)

PROJECTED_SHOWN = 20  # fires of ours an AgentView holds: the first and this many most recent

# Codex names a rollout for when it began: rollout-2025-05-07T17-24-21-<uuid>.
_ROLLOUT_NAME = re.compile(r"rollout-\d{4}-(\d\d-\d\d)T(\d\d)-(\d\d)-(\d\d)-")


def session_title(path: Path, tail: TranscriptTail) -> str:
    """The session's own name where its log gives one, else one made from its path; a Codex
    sub-agent's rollout says so, so it is told from the session that spawned it."""
    own = tail.title
    title = one_line_title(own) if own else transcript_title(path)
    if tail.subagent:
        title += f" · sub-agent {one_line_title(tail.subagent)}"
    if "archived_sessions" in path.parts[:-1]:
        title += " · archived"  # Codex moved it out of sessions/
    return title


def one_line_title(text: str, limit: int = 60) -> str:
    """A name from the file, on one line, its control characters made visible, and short
    enough for the session list."""
    cleaned = " ".join(neutralise(text, single_line=True).split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def transcript_title(path: Path) -> str:
    """Short enough for the session list: the project and the session's first characters, or
    when a Codex rollout began, to the second (rollouts of one minute are told apart)."""
    stem = path.stem
    if named := _ROLLOUT_NAME.match(stem):
        return f"codex {named[1]} {named[2]}:{named[3]}:{named[4]}"
    project = path.parent.name
    if project.startswith("-"):  # Claude Code's folder for /home/me/src/proj: -home-me-src-proj
        project = project.rstrip("-").rsplit("-", 1)[-1] or project
    uuid_like = len(stem) == 36 and stem.count("-") == 4
    name = stem[:8] if uuid_like else stem
    return f"{project} · {name}" if project else name  # a bare file name has no folder


class Recording:
    """One transcript: what was read of it, and our projection over it."""

    def __init__(
        self, path: Path, session_id: str, config: CompactionConfig, *, light: bool = False
    ) -> None:
        """`light`: read without message text (TranscriptTail(light=True)): figures only, for
        a command that shows no message and whose strategy plans without tool output."""
        self.path = path
        self.session_id = session_id
        self.title = transcript_title(path)
        self.config = config
        self.tail = TranscriptTail(path, light=light)
        self.read = False  # imported at least once
        self.line_count = 0
        self.problem: str | None = None  # why the file cannot be read, while it cannot
        self.notes: tuple[str, ...] = ()  # what the import skipped or could not make sense of
        self.events_sent = 0  # the agent's compactions delivered as events
        self.probed = False  # its head looked at for a file that is plainly no transcript
        self._notes_key: tuple[int, bool] | None = None
        self._restart()

    def refresh_notes(self) -> bool:
        """Re-read the import's warnings when what they depend on moved (a line skipped, the
        session going empty or not); O(1) otherwise. Returns whether they changed."""
        key = (self.tail.skipped_line_count, not self.messages)
        if key == self._notes_key:
            return False
        self._notes_key = key
        notes = tuple(self.tail.transcript().warnings[:20])  # O(messages), only on a change
        changed = notes != self.notes
        self.notes = notes
        return changed

    def _restart(self) -> None:
        self.messages: list[Message] = []
        self.tokens: list[int] = []
        self.cumulative: list[int] = [0]  # sum(tokens[:i])
        self.usage: list[RecordedUsage] = []
        self.pairs: list[tuple[int, int]] = []  # per usage: (recorded, our estimate)
        self.recorded_total = self.estimate_total = 0
        self.compactions: list[AgentCompaction] = []
        self.projection = Projection(self.config)
        self._views: list[AgentCompactionView] = []
        self._views_shown: tuple[AgentCompactionView, ...] = ()
        self._starts: list[int] = []
        self._fires_shown: tuple[ProjectedCompaction, ...] = ()
        self._fires_key: tuple[int, ProjectedCompaction | None] = (0, None)
        self._fires_summed = 0  # fires whose span tokens are in _span_total
        self._span_total = 0

    def reproject(self, config: CompactionConfig) -> None:
        self.config = config
        self.projection = Projection(config)
        self._fires_summed = self._span_total = 0
        self.projection.feed(zip(self.messages, self.tokens, strict=True))

    def apply(
        self,
        update_reset: bool,
        start: int,
        messages: Sequence[Message],
        tokens: Sequence[int] | None = None,
    ) -> list[str]:
        """Take new or rewritten messages from index `start` (with their token estimates when
        a light read made them); returns the ids it dropped."""
        if update_reset:
            self._restart()
            start = 0
        dropped = [m.id for m in self.messages[start:]]
        ours = [as_ordinary(m) for m in messages]
        if tokens is None:
            tokens = [estimate_message_tokens(m) for m in ours]
        del self.messages[start:], self.tokens[start:], self.cumulative[start + 1 :]
        self.messages += ours
        self.tokens += tokens
        for count in tokens:
            self.cumulative.append(self.cumulative[-1] + count)
        pairs = zip(ours, tokens, strict=True)  # fed as made: no list of them all
        if dropped and not self.projection.rewrite(start, pairs):
            self.reproject(self.config)
        elif not dropped:
            self.projection.feed(pairs)
        return dropped

    def take_compactions(self, start: int, compactions: Sequence[AgentCompaction]) -> None:
        """The agent's compactions from the `start`th on are new or learnt more (their size
        after); their views are made again."""
        if start < len(self._views):
            self._views_shown = ()  # the next view() holds the new views
        del self.compactions[start:], self._views[start:], self._starts[start:]
        self.compactions += compactions

    def _sync_views(self) -> None:
        """Views of the agent's compactions not made yet. A compaction's estimate counts only
        messages before its summary, which never change once it is recorded (a rewind resets)."""
        for c in self.compactions[len(self._views) :]:
            index = min(c.message_index, len(self.messages))
            previous = self._views[-1].message_index if self._views else 0
            estimate = self.cumulative[index] - self.cumulative[min(previous, index)]
            message_id = self.messages[index].id if index < len(self.messages) else ""
            self._views.append(
                AgentCompactionView(
                    c.message_index,
                    message_id,
                    c.trigger,
                    c.pre_tokens,
                    estimate,
                    c.post_tokens,
                    c.duration_ms,
                )
            )
            self._starts.append(c.message_index)

    def agent_events(self, start: int = 0) -> list[EventRow]:
        """The agent's own compactions from the `start`th on, as rows of the events timeline.
        Negative ids keep them apart from the what-if events of the scratch session."""
        self._sync_views()
        rows = []
        for position, view in enumerate(self._views[start:], start):
            index = view.message_index
            message = self.messages[index] if 0 <= index < len(self.messages) else None
            when = message.metadata.created_at_ms if message is not None else None
            rows.append(EventRow(-(position + 1), AGENT_COMPACTION, view, when or 0))
        return rows

    def context_start(self, index: int) -> int:
        """Where the agent's context began for messages[index]: its latest summary before it."""
        self._sync_views()
        position = bisect.bisect_right(self._starts, index) - 1
        return self._starts[position] if position >= 0 else 0

    def take_usage(self, start: int, usage: Sequence[RecordedUsage]) -> None:
        for recorded, estimate in self.pairs[start:]:  # running sums: a view costs O(1)
            self.recorded_total -= recorded
            self.estimate_total -= estimate
        del self.usage[start:], self.pairs[start:]
        for entry in usage:
            self.usage.append(entry)
            index = min(entry.message_index, len(self.messages))
            estimate = (
                self.cumulative[index] - self.cumulative[self.context_start(index)]
                if index >= 0
                else 0
            )
            self.pairs.append((entry.context_tokens, estimate))
            self.recorded_total += entry.context_tokens
            self.estimate_total += estimate

    def view(self, notes: tuple[str, ...] | None = None) -> AgentView:
        """O(new compactions and fires) a call: it rides on every poll's change."""
        self._sync_views()
        if len(self._views) != len(self._views_shown):
            self._views_shown = tuple(self._views)
        fires = self.projection.fires
        key = (self.projection.fire_count, fires[-1] if fires else None)
        if key != self._fires_key:  # O(PROJECTED_SHOWN) a change, never a copy of every fire
            self._fires_key = key
            recent = fires[-PROJECTED_SHOWN:]
            bounded = recent if len(fires) <= PROJECTED_SHOWN else [fires[0], *recent]
            self._fires_shown = tuple(bounded)
        if len(fires) < self._fires_summed:  # a rewrite took fires back: sum again
            self._fires_summed = self._span_total = 0
        for fire in fires[self._fires_summed :]:
            self._span_total += fire.span_tokens
        self._fires_summed = len(fires)
        last = self.pairs[-1] if self.pairs else (None, None)
        reduction = self.tail.last_reduction
        if (
            reduction is not None
            and reduction.post_tokens is not None
            and reduction.usage_count >= len(self.pairs)
        ):
            # The agent cleared old tool results after its last response: the context is what
            # it says is left, not what that response measured.
            last = (reduction.post_tokens, last[1])
        return AgentView(
            path=str(self.path),
            format=self.tail.format or "claude-code",
            line_count=self.tail.line_count,
            compactions=self._views_shown,
            projected=self._fires_shown,
            usage_count=len(self.pairs),
            last_recorded_tokens=last[0],
            last_estimate_tokens=last[1],
            recorded_total=self.recorded_total,
            estimate_total=self.estimate_total,
            notes=self.notes if notes is None else notes,
            projected_count=self.projection.fire_count,
            projected_span_tokens=self._span_total,
            projected_forced=self.projection.every_turn_forced(),  # O(1)
        )


def discover_transcripts(path: Path | None, limit: int = DEFAULT_LIMIT) -> list[Path]:
    """`path` itself if it is a file; else the `limit` most recently written transcripts under
    it, or under the agents' default log folders when it is None. Raises FileNotFoundError
    naming what was looked at."""
    if path is not None and path.is_file():
        return [path]
    if path is not None and not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path is not None and not path.is_dir():
        return [path]  # a named pipe, a device: reading it refuses it, saying what it is
    roots = [path] if path is not None else default_transcript_roots()
    found: list[Path] = []
    for root in roots:
        if root.is_dir():
            found += find_transcripts(root)
    if not found:
        looked = ", ".join(str(r) for r in roots)
        raise FileNotFoundError(f"no Claude Code or Codex transcripts (*.jsonl) under {looked}")
    found.sort(key=lambda p: -modified_time(p))
    return found[:limit]


def read_recording(path: Path, config: CompactionConfig, *, light: bool = False) -> Recording:
    """A whole transcript, read once (the CLI's status and dry run; `light` keeps no message
    text, see Recording). Broken lines are skipped and reported by the import; raises
    TranscriptError for a file with no transcript record (or not a regular file) and OSError for
    a file that cannot be read."""
    recording = Recording(path, path.stem, config, light=light)
    update = recording.tail.poll(final=True)
    recording.tail.refuse_undecided(final=True)
    recording.title = session_title(path, recording.tail)
    recording.apply(True, 0, update.messages, update.tokens)
    recording.compactions = list(update.agent_compactions)
    recording.take_usage(0, update.recorded_usage)
    recording.read = True
    return recording


def modified_time(path: Path) -> float:
    """When the file was last written; 0 for one gone since it was listed (it sorts last)."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
