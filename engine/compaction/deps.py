"""What a SessionManager works with, apart from the session and its knobs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Protocol

from engine.cache import CompactionCache
from engine.compaction.result import Trigger as Trigger  # re-exported: its old home
from engine.events import CompactionEvent, EventBus
from engine.ids import next_monotonic_id
from engine.messages import Message
from engine.outcomes import CompactionRecord, SessionSnapshot
from engine.summarizers import Summarizer, SummarizerSettings
from engine.tokens import TokenCounter


class SessionPersistence(Protocol):
    """What the manager needs from a store (engine.store.SessionStore implements it)."""

    def append_message(self, session_id: str, message: Message, tokens: int) -> None: ...

    def commit_replacement(
        self,
        session_id: str,
        start: int,
        span_ids: Sequence[str],
        replacement: Sequence[Message],
        replacement_tokens: Sequence[int],
        record: CompactionRecord,
        spent_usd: Decimal,
        *,
        expected_revision: int | None = None,
    ) -> int:
        """Replace the span in one transaction; raise SpanChanged if it is not as summarized,
        or if the session's revision is not `expected_revision` (the one the manager planned
        on: another process compacted or undid since). Returns the session's new revision."""
        ...

    def record_event(self, session_id: str, event: CompactionEvent) -> None: ...

    def record_spend(self, session_id: str, spent_usd: Decimal) -> None: ...

    def snapshot_if_changed(self, session_id: str, revision: int) -> SessionSnapshot | None: ...


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, kw_only=True)
class ManagerDeps:
    """What a SessionManager works with, apart from the session and its knobs. Every field is
    optional: a summarizer from the model's name, a cache under `workspace/.metis/` when a
    workspace is given, no persistence (memory only), a fresh EventBus, the wall clock, ids from
    the clock and the pid (engine.ids)."""

    workspace: Path | None = None
    summarizer: Summarizer | None = None
    summarizer_settings: SummarizerSettings | None = None  # import path, endpoint, stated price
    token_counter: TokenCounter | None = None
    cache: CompactionCache | None = None
    persistence: SessionPersistence | None = None
    bus: EventBus | None = None
    clock: Callable[[], int] = now_ms
    new_id: Callable[[str], str] = next_monotonic_id
