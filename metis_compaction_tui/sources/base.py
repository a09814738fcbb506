"""The small interface the app talks to (harlequin's adapter split): where sessions come from.

`StoreSource` reads and acts on the live `<workspace>/.metis/` store; `MemorySource` holds sessions
in memory (a transcript, a test). The app never touches SQLite or the store module directly.
Every method may be called from a worker thread; implementations keep their connections
per thread. Failures the user should see come out as `SourceUnavailable(problem)`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from engine import (
    AsyncCompactionCache,
    CompactionConfig,
    Message,
    PressureZone,
    SessionManager,
    TriggerAction,
    TriggerDecision,
)
from metis_compaction_tui.sources.session_data import (
    CompactionInfo,
    SessionData,
    SourceChange,
)

# compact: compact now (and the cache's evictions); undo; tune: new knobs for a what-if.
SourceAction = Literal["compact", "undo", "tune"]
# store: metis dev's live store; memory: held here only; what_if: a copy of a transcript.
CompactionLands = Literal["store", "memory", "what_if"]
ALL_ACTIONS: frozenset[SourceAction] = frozenset({"compact", "undo", "tune"})


class SourceUnavailable(Exception):
    """The store cannot be read right now (missing, locked, corrupt). `problem` is one line."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class StoreMissing(SourceUnavailable):
    """No session store exists at `path` yet (a folder metis dev has not run in): the app says
    how to make one instead of showing figures of no session."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"no session store at {path} (is metis dev running?)")
        self.path = path


class ActionRefused(Exception):
    """An action the source declined (undo with nothing to undo, a read-only source): `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SessionRow:
    """One line of the session list: enough for live pressure without loading the history.
    What the bar draws (pending, limits, zone, action) is the trigger decision's."""

    session_id: str
    title: str
    message_count: int
    decision: TriggerDecision
    updated_at_ms: int = 0
    problem: str | None = None  # a file that cannot be read: why (it is no empty session)
    read: bool = True  # False: a transcript not read yet (its figures are not known)

    @property
    def pending_history_tokens(self) -> int:
        return self.decision.pending_history_tokens

    @property
    def threshold_tokens(self) -> int:
        return self.decision.threshold_tokens

    @property
    def hard_cap_tokens(self) -> int:
        return self.decision.hard_cap_tokens

    @property
    def action(self) -> TriggerAction:
        return self.decision.action

    @property
    def zone(self) -> PressureZone:
        return self.decision.zone


class SessionSource(Protocol):
    label: str  # shown in the title bar: a workspace path, a transcript file
    # What the app may ask of this source (anything else raises ActionRefused), and where a
    # committed compaction lives: data, worded by the screens.
    actions: frozenset[SourceAction]
    compaction_lands: CompactionLands
    progress: Callable[[str], None] | None  # the app's: one line while a long read runs

    def open(self) -> None:
        """Connect (again); raises SourceUnavailable."""

    def close(self) -> None: ...

    def sessions(self) -> list[SessionRow]: ...

    def load(self, session_id: str) -> SessionData:
        """The whole session as the dashboard shows it; O(history)."""
        ...

    def poll(self) -> list[SourceChange]:
        """What changed since the last poll (cheap when nothing did); raises SourceUnavailable."""
        ...

    def wait(self, timeout_s: float, wake: threading.Event) -> None:
        """Block until a change is likely, `wake` is set, or the timeout passes."""

    def originals(self, info: CompactionInfo) -> list[tuple[Message, int]]:
        """The archived messages a compaction replaced, in order, with their token counts."""
        ...

    def managing(self, session_id: str) -> AbstractContextManager[SessionManager]:
        """A SessionManager over the session as stored now, for compact now; use it in the
        calling thread only, inside the `with`. Raises ActionRefused on a read-only source."""
        ...

    def undo_latest(self, session_id: str) -> CompactionInfo:
        """Undo the latest compaction; raises ActionRefused(reason)."""
        ...

    def open_cache(self) -> AsyncCompactionCache | None:
        """The compaction cache behind this source, for the cache browser (None: it has none);
        the caller closes it."""
        ...

    def cache_backers(self) -> dict[str, list[tuple[str, str]]]:
        """cache_key → [(session_id, title)] of every live summary the key produced."""
        ...

    def set_config(self, session_id: str, config: CompactionConfig) -> None:
        """Re-plan a session under other knobs (a source whose actions hold "tune"; else
        ActionRefused)."""


@contextmanager
def cache_closed_after(manager: SessionManager) -> Iterator[SessionManager]:
    """A manager for one action; its cache connection closed after (each action opens its own)."""
    try:
        yield manager
    finally:
        if manager.cache is not None:
            manager.cache.close()
