"""Sessions held in memory: imported transcripts, and tests that need no store file.

`MemoryPersistence` is a SessionPersistence that keeps what a store would keep (the ordered log,
archived originals, records, events, spend) in lists, so "compact now" and undo work the same
way against it as against the SQLite store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

from engine import (
    AsyncCompactionCache,
    CompactionConfig,
    CompactionEvent,
    CompactionRecord,
    History,
    ManagerDeps,
    Message,
    SessionManager,
    SessionSnapshot,
    SpanChanged,
    Summarizer,
    SummarizerSettings,
    UndoRefused,
    cache_backers,
    cache_path,
    check_span_unchanged,
    event_type,
    latest_in_effect,
    plan_turn,
    price_origin,
    undo_compaction,
)
from metis_compaction_tui.sources.base import (
    ALL_ACTIONS,
    ActionRefused,
    CompactionLands,
    SessionRow,
    SourceChange,
    cache_closed_after,
)
from metis_compaction_tui.sources.session_data import (
    CompactionInfo,
    EventRow,
    SessionData,
    build_timeline,
    message_log,
)


class _Session:
    def __init__(self, session_id: str, title: str, config: CompactionConfig) -> None:
        self.session_id = session_id
        self.title = title
        self.config = config
        self.history = History()
        self.log: list[tuple[int, Message, int]] = []  # every message ever written, seq order
        self.compactions: list[tuple[CompactionInfo, list[tuple[Message, int]]]] = []
        self.events: list[EventRow] = []
        self.spent_usd = Decimal(0)
        self.revision = 0


class MemoryPersistence:
    """A SessionPersistence (engine.manager) over plain lists; one lock for every thread."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.sessions: dict[str, _Session] = {}
        self.seq = 0
        self.event_id = 0
        self.compaction_id = 0
        self.changes: list[SourceChange] = []
        self.clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000  # events' times

    def _change(self, session_id: str) -> SourceChange:
        if not self.changes or self.changes[-1].session_id != session_id:
            self.changes.append(SourceChange(session_id))
        return self.changes[-1]

    def rewrite_tail(
        self, session_id: str, drop: Sequence[str], messages: Sequence[tuple[Message, int]]
    ) -> bool:
        """Replace the session's last messages, whose ids are `drop`, by `messages` (a recording
        whose newest message grew). False, and nothing changed, when the session no longer ends
        with them."""
        with self.lock:
            session = self.sessions[session_id]
            history, count = session.history, len(drop)
            old = history.messages[len(history) - count :] if count else []
            if [m.id for m in old] != list(drop):
                return False
            start = len(history) - count
            history.replace(start, len(history), [], [])
            del session.log[len(session.log) - count :]
            change = SourceChange(session_id, rewrite_from=start)
            self.changes.append(change)  # its own change: earlier appends apply first
            for message, tokens in messages:
                self.seq += 1
                history.append(message, tokens)
                session.log.append((self.seq, message, tokens))
                change.new_messages.append((self.seq, message, tokens))
            return True

    def append_message(self, session_id: str, message: Message, tokens: int) -> None:
        with self.lock:
            session = self.sessions[session_id]
            self.seq += 1
            session.history.append(message, tokens)
            session.log.append((self.seq, message, tokens))
            self._change(session_id).new_messages.append((self.seq, message, tokens))

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
        with self.lock:
            session = self.sessions[session_id]
            if expected_revision is not None and session.revision != expected_revision:
                raise SpanChanged(f"revision {session.revision}, not {expected_revision}")
            end = start + len(span_ids)
            current = [m.id for m in session.history.messages[start:end]]
            check_span_unchanged(current, start, span_ids)
            archived = list(
                zip(
                    session.history.messages[start:end],
                    session.history.tokens[start:end],
                    strict=True,
                )
            )
            session.history.replace(start, end, replacement, replacement_tokens)
            for message, tokens in zip(replacement, replacement_tokens, strict=True):
                self.seq += 1
                session.log.append((self.seq, message, tokens))
            self.compaction_id += 1
            info = CompactionInfo(self.compaction_id, record, False, record.created_at_ms)
            session.compactions.append((info, archived))
            session.spent_usd = spent_usd
            session.revision += 1
            self._change(session_id).compacted = True
            return session.revision

    def record_event(self, session_id: str, event: CompactionEvent) -> None:
        with self.lock:
            self.event_id += 1
            # When the what-if emitted it, as the store stamps a row it writes.
            row = EventRow(self.event_id, event_type(event), event, self.clock())
            self.sessions[session_id].events.append(row)
            self._change(session_id).new_events.append(row)

    def record_spend(self, session_id: str, spent_usd: Decimal) -> None:
        with self.lock:
            self.sessions[session_id].spent_usd = spent_usd

    def snapshot_if_changed(self, session_id: str, revision: int) -> SessionSnapshot | None:
        with self.lock:
            session = self.sessions[session_id]
            if session.revision == revision:
                return None
            return SessionSnapshot(
                session_id,
                list(session.history.messages),
                list(session.history.tokens),
                session.history.stable_prefix_end,
                session.spent_usd,
                session.revision,
            )


class MemorySource:
    """A SessionSource over MemoryPersistence (a test's sessions, a transcript's copy)."""

    cache_path: Path | None = None
    actions = ALL_ACTIONS
    compaction_lands: CompactionLands = "memory"
    progress = None

    def __init__(
        self,
        label: str = "in memory",
        *,
        workspace: Path | None = None,
        clock: Callable[[], int] | None = None,
        summarizer: Callable[[], Summarizer] | None = None,
        summarizer_settings: SummarizerSettings | None = None,
    ) -> None:
        self.summarizer = summarizer  # a factory; None: the one the session's model names
        # How that one is reached and priced (a workspace's summarizer.*); None: the defaults.
        self.summarizer_settings = summarizer_settings
        self.label = label
        self.clock = clock  # the managers' clock (compaction records): fixed for snapshots
        self.workspace = workspace
        if workspace is not None:
            self.cache_path = cache_path(workspace)
        self.store = MemoryPersistence()
        if clock is not None:
            self.store.clock = clock

    # -- building ----------------------------------------------------------------------------

    def add_session(
        self,
        session_id: str,
        messages: Sequence[Message] = (),
        *,
        title: str = "",
        config: CompactionConfig | None = None,
        stable_prefix_end: int = 0,
    ) -> None:
        with self.store.lock:
            session = _Session(session_id, title or session_id, config or CompactionConfig())
            session.history = History(messages, stable_prefix_end=stable_prefix_end)
            for message, tokens in zip(
                session.history.messages, session.history.tokens, strict=True
            ):
                self.store.seq += 1
                session.log.append((self.store.seq, message, tokens))
            self.store.sessions[session_id] = session
            self.store.changes.append(SourceChange(session_id, sessions_changed=True))

    def remove_session(self, session_id: str) -> None:
        with self.store.lock:
            self.store.sessions.pop(session_id, None)
            self.store.changes = [c for c in self.store.changes if c.session_id != session_id]

    def append(self, session_id: str, message: Message) -> None:
        with self.store.lock:
            session = self.store.sessions[session_id]
            self.store.append_message(session_id, message, session.history.counter(message))

    def extend(self, session_id: str, messages: Sequence[tuple[Message, int]]) -> None:
        """Append messages with their token counts (a recording that grew)."""
        with self.store.lock:
            for message, tokens in messages:
                self.store.append_message(session_id, message, tokens)

    def rewrite_tail(
        self, session_id: str, drop: Sequence[str], messages: Sequence[tuple[Message, int]]
    ) -> bool:
        """MemoryPersistence.rewrite_tail: False, nothing changed, when the session no longer
        ends with `drop`."""
        return self.store.rewrite_tail(session_id, drop, messages)

    def reload(self, session_id: str) -> None:
        """Tell the app to load the session again (it was rebuilt)."""
        with self.store.lock:
            self.store.changes.append(SourceChange(session_id, compacted=True))

    def loaded(self, session_id: str) -> None:
        """The app just loaded the session: drop what is queued for it (it is in what was
        loaded), keeping only the news that the session list changed."""
        with self.store.lock:
            store = self.store
            listed = any(c.sessions_changed for c in store.changes if c.session_id == session_id)
            store.changes = [c for c in store.changes if c.session_id != session_id]
            if listed:
                store.changes.append(SourceChange(session_id, sessions_changed=True))

    # -- SessionSource -------------------------------------------------------------------------

    def open(self) -> None:
        return None

    def close(self) -> None:
        return None

    def sessions(self) -> list[SessionRow]:
        with self.store.lock:
            rows = []
            for session in self.store.sessions.values():
                plan = plan_turn(session.history, session.config, session.spent_usd)
                rows.append(
                    SessionRow(
                        session.session_id,
                        session.title,
                        len(session.history),
                        plan.decision,
                    )
                )
            return rows

    def load(self, session_id: str) -> SessionData:
        with self.store.lock:
            session = self.store.sessions[session_id]
            infos = [info for info, _ in session.compactions]
            history = History(
                list(session.history.messages),
                stable_prefix_end=session.history.stable_prefix_end,
                tokens=list(session.history.tokens),
            )
            model, settings = session.config.compaction_model, self.summarizer_settings
            return SessionData(
                session_id=session_id,
                title=session.title,
                history=history,
                config=session.config,
                spent_usd=session.spent_usd,
                revision=session.revision,
                compactions=infos,
                events=list(session.events),
                timeline=build_timeline(message_log((m, t) for _, m, t in session.log), infos),
                last_seq=session.log[-1][0] if session.log else 0,
                source_label=self.label,
                read_only=False,
                price_origin=price_origin(model, settings),
                summarizer=settings.bound(model) if settings else None,
            )

    def poll(self) -> list[SourceChange]:
        with self.store.lock:
            changes, self.store.changes = self.store.changes, []
            return changes

    def wait(self, timeout_s: float, wake: threading.Event) -> None:
        wake.wait(timeout_s)

    def originals(self, info: CompactionInfo) -> list[tuple[Message, int]]:
        with self.store.lock:
            for session in self.store.sessions.values():
                for candidate, archived in session.compactions:
                    if candidate.compaction_id == info.compaction_id:
                        return list(archived)
            return []

    @contextmanager
    def managing(self, session_id: str) -> Iterator[SessionManager]:
        with self.store.lock:
            session = self.store.sessions[session_id]
            manager = SessionManager(
                session_id=session_id,
                history=list(session.history.messages),
                stable_prefix_end=session.history.stable_prefix_end,
                config=session.config,
                deps=ManagerDeps(
                    persistence=self.store,
                    workspace=self.workspace,
                    summarizer=self.summarizer() if self.summarizer else None,
                    summarizer_settings=self.summarizer_settings,
                    **({"clock": self.clock} if self.clock else {}),
                ),
                spent_usd=session.spent_usd,
                revision=session.revision,
            )
        with cache_closed_after(manager):
            yield manager

    def undo_latest(self, session_id: str) -> CompactionInfo:
        with self.store.lock:
            session = self.store.sessions[session_id]
            try:
                index, (info, archived) = latest_in_effect(
                    [((info, archived), info.undone) for info, archived in session.compactions]
                )
                undo_compaction(session.history, info.record, archived)
            except UndoRefused as refused:
                raise ActionRefused(refused.reason) from None
            undone = CompactionInfo(info.compaction_id, info.record, True, info.created_at_ms)
            session.compactions[index] = (undone, archived)
            session.revision += 1
            self.store._change(session_id).compacted = True
            return undone

    def open_cache(self) -> AsyncCompactionCache | None:
        return AsyncCompactionCache(self.cache_path) if self.cache_path is not None else None

    def cache_backers(self) -> dict[str, list[tuple[str, str]]]:
        with self.store.lock:
            return cache_backers(
                (session.session_id, session.title, info.record.cache_key, info.undone)
                for session in self.store.sessions.values()
                for info, _ in session.compactions
            )

    def set_config(self, session_id: str, config: CompactionConfig) -> None:
        with self.store.lock:
            self.store.sessions[session_id].config = config
            self.store.changes.append(SourceChange(session_id, compacted=True))
