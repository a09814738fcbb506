"""The live workspace store (`engine.store`, docs/store-api.md) as a SessionSource.

Threads: the feed thread keeps one SessionStore and the tailer for the app's lifetime; every
other call (an originals lookup, an undo, a compact-now conversation) opens its own short-lived
SessionStore in the calling thread and closes it, so no SQLite connection crosses threads.
A store file deleted or replaced under us reads on happily from the old inode, so `poll` also
checks the file's identity and reports the change as a problem until the store is back.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import (
    CompactionConfig,
    ConfigError,
    History,
    ResolvedConfig,
    SessionManager,
    cache_path,
    config_path,
    file_identity,
    price_origin,
    record_path,
    resolve_config,
    store_path,
    user_config_path,
)
from metis_compaction_tui.sources.base import (
    ActionRefused,
    CompactionLands,
    SessionRow,
    SourceAction,
    SourceChange,
    SourceUnavailable,
    StoreMissing,
    cache_closed_after,
)
from metis_compaction_tui.sources.session_data import (
    CompactionInfo,
    EventRow,
    SessionData,
    build_timeline,
)

if TYPE_CHECKING:
    from engine import AsyncCompactionCache, CommitWaiter, PlanHistories, SessionStore


def _store_errors() -> tuple[type[BaseException], ...]:
    from engine import StoreError

    return (StoreError, sqlite3.Error, OSError)


def _stamp(path: Path, *, follow: bool = False) -> object:
    """A file's version: the config file, and the user's trust record (`trust` in another
    terminal changes what applies without changing the file). `follow`: the user's own config
    file, which may be a link to the file that changes."""
    try:
        stat = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


def event_row(stored: Any) -> EventRow:
    return EventRow(stored.event_id, stored.event_type, stored.event, stored.created_at_ms)


def compaction_info(stored: Any) -> CompactionInfo:
    return CompactionInfo(stored.compaction_id, stored.record, stored.undone, stored.created_at_ms)


class StoreSource:
    # No "tune": the knobs are metis dev's; the app shows them, metis dev sets them.
    actions: frozenset[SourceAction] = frozenset({"compact", "undo"})
    compaction_lands: CompactionLands = "store"
    progress = None  # a store opens in well under a second at 100,000 messages

    def __init__(self, workspace: Path, *, poll_interval_s: float = 0.25) -> None:
        self.workspace = Path(workspace)
        self.label = str(self.workspace)
        self.db_path = store_path(self.workspace)
        self.cache_path: Path | None = cache_path(self.workspace)
        self.poll_interval_s = poll_interval_s
        self._feed_store: SessionStore | None = None
        self._feed_identity: tuple[int, int] | None = None
        self._tailer: Any = None
        self._waiter: CommitWaiter | None = None
        self._plan_histories: PlanHistories | None = None
        self._lock = threading.Lock()
        self._settings: tuple[object, ResolvedConfig] | None = None

    # -- the workspace's settings (.metis/config.yaml, METIS_*) -------------------------------

    def _applied(self, stored: CompactionConfig) -> CompactionConfig:
        try:
            return self.settings().apply(stored)
        except ConfigError as error:
            raise SourceUnavailable(str(error)) from None

    def settings(self) -> ResolvedConfig:
        """Read again only when the file changed; a bad file is the source's problem, shown
        in the banner with its file, line and key, until it is fixed."""
        stamp = (
            _stamp(config_path(self.workspace)),
            _stamp(record_path(self.workspace)),
            _stamp(user_config_path(), follow=True),
        )
        cached = self._settings
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            resolved = resolve_config(self.workspace)
        except ConfigError as error:
            raise SourceUnavailable(str(error)) from None
        self._settings = (stamp, resolved)
        return resolved

    # -- connections -------------------------------------------------------------------------

    def _open_store(self) -> SessionStore:
        from engine import SessionStore

        try:
            return SessionStore.open(self.workspace)
        except _store_errors() as error:
            raise SourceUnavailable(str(error) or type(error).__name__) from None

    @contextmanager
    def _short_store(self) -> Iterator[SessionStore]:
        """A connection for one call in the calling thread, closed after."""
        store = self._open_store()
        try:
            yield store
        except _store_errors() as error:
            if isinstance(error, ActionRefused):
                raise
            raise SourceUnavailable(str(error) or type(error).__name__) from None
        finally:
            store.close()

    def _feed(self) -> SessionStore:
        if self._feed_store is None:
            raise SourceUnavailable(f"{self.db_path} is not open")
        return self._feed_store

    def open(self) -> None:
        from engine import PlanHistories, StoreTailer

        self.close()
        identity = file_identity(self.db_path)
        if identity is None:
            raise StoreMissing(self.db_path)
        self._feed_store = self._open_store()
        self._feed_identity = identity
        self._plan_histories = PlanHistories()  # another file: nothing kept from the last one
        try:
            self._tailer = StoreTailer(self.workspace, poll_interval_s=self.poll_interval_s)
            self._tailer.read_now()  # the cursor starts at the end: load() reads the rest
        except _store_errors() as error:
            self.close()
            raise SourceUnavailable(str(error) or type(error).__name__) from None

    def close(self) -> None:
        store, self._feed_store = self._feed_store, None
        if store is not None:
            try:
                store.close()
            except _store_errors():
                pass
        self._tailer = None
        if self._waiter is not None:
            self._waiter.reset()

    # -- reading (feed thread) -----------------------------------------------------------------

    def _guarded(self, call: Any) -> Any:
        try:
            return call()
        except SourceUnavailable:
            raise
        except _store_errors() as error:
            raise SourceUnavailable(str(error) or type(error).__name__) from None

    def sessions(self) -> list[SessionRow]:
        return self._guarded(self._sessions)

    def _sessions(self) -> list[SessionRow]:
        infos = self._feed().list_sessions()
        if self._plan_histories is not None:
            self._plan_histories.retain({info.session_id for info in infos})
        return [self._session_row(info) for info in infos]

    def _session_row(self, info: Any) -> SessionRow:
        """The engine's plan for the session (SessionStore.plan -> plan_turn): the list and the
        dashboard ask the same function, so they agree on the trigger."""
        config, count = self._applied(info.config), info.message_count
        # A session that only grew since the last listing reads just its new rows.
        plan = self._feed().plan(info.session_id, config, kept=self._plan_histories)
        return SessionRow(info.session_id, info.title, count, plan.decision, info.updated_at_ms)

    def load(self, session_id: str) -> SessionData:
        return self._guarded(lambda: self._load(session_id))

    def _load(self, session_id: str) -> SessionData:
        store = self._feed()
        view = store.view(session_id)  # one read: a message appended meanwhile comes by poll
        info, snapshot = view.info, view.snapshot
        compactions = [compaction_info(c) for c in view.compactions]
        history = History(
            snapshot.messages, stable_prefix_end=snapshot.stable_prefix_end, tokens=snapshot.tokens
        )
        settings = self.settings()
        config = self._applied(info.config)
        return SessionData(
            session_id=session_id,
            title=info.title or session_id,
            history=history,
            config=config,
            settings_rows=settings.describe(info.config),
            settings_file=str(settings.path)
            + ("" if settings.file_found else " (absent)")
            + (f" · {note}" if (note := settings.trust.note()) else ""),
            trust_note="untrusted config" if settings.trust.state == "untrusted" else "",
            price_origin=price_origin(config.compaction_model, settings.summarizer),
            summarizer=settings.summarizer.bound(config.compaction_model),
            spent_usd=snapshot.spent_usd,
            revision=snapshot.revision,
            compactions=compactions,
            events=self._all_events(store, session_id),  # the tailer dedupes by event id
            timeline=build_timeline(view.log, compactions),
            last_seq=info.last_seq,
            source_label=self.label,
        )

    @staticmethod
    def _all_events(store: SessionStore, session_id: str) -> list[EventRow]:
        rows: list[EventRow] = []
        after = 0
        while True:
            page = store.events(session_id, after_id=after, limit=1000)
            rows.extend(event_row(e) for e in page)
            if len(page) < 1000:
                return rows
            after = page[-1].event_id

    def poll(self) -> list[SourceChange]:
        if file_identity(self.db_path) != self._feed_identity:
            self.close()
            raise SourceUnavailable(f"{self.db_path} was deleted or replaced; waiting for it")
        if self._tailer is None:
            raise SourceUnavailable(f"{self.db_path} is not open")
        updates = self._guarded(self._tailer.read_now)
        if self._tailer.problem:  # the tailer retries on its own; meanwhile the user is told
            raise SourceUnavailable(self._tailer.problem)
        changes: list[SourceChange] = []
        for update in updates:
            change = SourceChange(
                update.session_id,
                [(m.seq, m.message, m.tokens) for m in update.new_messages],
                update.compacted,
                [event_row(e) for e in update.new_events],
                update.sessions_changed,
            )
            if update.new_events or update.compacted:
                change.spent_usd = self._guarded(
                    lambda sid=update.session_id: self._feed().session_info(sid).spent_usd
                )
            changes.append(change)
        return changes

    def wait(self, timeout_s: float, wake: threading.Event) -> None:
        """A commit's file event is the hint (engine.store.tail's filter); the tailer confirms
        with PRAGMA data_version. No events: the timeout is the poll."""
        if self._waiter is None:
            from engine import CommitWaiter

            self._waiter = CommitWaiter(self.workspace)
        self._waiter.wait(timeout_s, wake)

    # -- acting (any thread) -------------------------------------------------------------------

    def originals(self, info: CompactionInfo) -> list[tuple[Any, int]]:
        if info.compaction_id is None:
            return []
        with self._short_store() as store:
            return [(m.message, m.tokens) for m in store.archived_messages(info.compaction_id)]

    @contextmanager
    def managing(self, session_id: str) -> Iterator[SessionManager]:
        settings = self.settings()
        try:
            settings.require_trust("compact now")  # engine.workspace_trust: the rule is there
        except ConfigError as untrusted:
            raise ActionRefused(str(untrusted)) from None
        with self._short_store() as store:
            try:
                stored = store.session_info(session_id).config
                settings.require_stored_model(session_id, stored, "compact now")
            except ConfigError as chosen_by_the_store:
                raise ActionRefused(str(chosen_by_the_store)) from None
            # The workspace's knobs on top of the session's, and its summarizer settings (an
            # imported factory, a compatible endpoint, a stated price) for the model.
            manager = store.manager(
                session_id, summarizer_settings=settings.summarizer, **settings.overrides()
            )
            with cache_closed_after(manager):
                yield manager

    def undo_latest(self, session_id: str) -> CompactionInfo:
        from engine import UndoRefused

        with self._short_store() as store:
            try:
                return compaction_info(store.undo_latest_compaction(session_id))
            except UndoRefused as refused:
                raise ActionRefused(getattr(refused, "reason", str(refused))) from None

    def open_cache(self) -> AsyncCompactionCache | None:
        from engine import AsyncCompactionCache

        return AsyncCompactionCache(self.cache_path)

    def cache_backers(self) -> dict[str, list[tuple[str, str]]]:
        with self._short_store() as store:
            return store.cache_backers()

    def set_config(self, session_id: str, config: CompactionConfig) -> None:
        raise ActionRefused(
            "a metis store's knobs belong to metis dev; `inspect` a transcript for a what-if"
        )
