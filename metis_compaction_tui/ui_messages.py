"""Messages the feed thread posts to the app (toolong's split: the thread reads, the UI draws).

Floods merge: a newer session list or problem replaces an older one still queued (`can_replace`),
so a writer appending 200 messages a second never builds a backlog of redraws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from metis_compaction_tui.sources.base import SessionRow
from metis_compaction_tui.sources.session_data import SessionData, SourceChange


@dataclass
class SessionsListed(Message):
    rows: Sequence[SessionRow]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SessionsListed)


@dataclass
class SessionLoaded(Message):
    """The whole session (first load, another session picked, or rewritten by a compaction)."""

    data: SessionData


@dataclass
class SessionGrew(Message):
    """Messages and events appended to the loaded session since the last poll: the source's
    change as it polled it (SessionData.grow applies it)."""

    change: SourceChange


@dataclass
class SourceProblem(Message):
    problem: str
    missing_store: Path | None = None  # no store exists there yet (a folder metis dev never ran in)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SourceProblem)


@dataclass
class SourceProgress(Message):
    """A long read is under way (a big transcript): one line for the status bar."""

    text: str

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SourceProgress)


@dataclass
class SourceRecovered(Message):
    pass
