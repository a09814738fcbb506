"""The live session store: `<workspace>/.metis/sessions.sqlite`, shared by metis dev and the app.

DESIGN "The session store": a compaction commits in one `BEGIN IMMEDIATE` transaction that first
checks the span is still exactly what was summarized; later messages are never touched or lost;
the originals are archived, not deleted; a reader in another process sees each commit whole or
not at all (WAL); a process killed at any instant leaves a store that opens and validates.
`SessionStore` implements `engine.manager.SessionPersistence`; docs/store-api.md is the contract,
docs/store-schema.md the tables.
"""

from __future__ import annotations

import sqlite3
import time
from _thread import RLock  # threading.RLock's own type, without importing threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config import CompactionConfig
from engine.errors import StoreLocked
from engine.events import CompactionEvent, encode_event, event_type
from engine.history import History
from engine.layout import METIS_DIR, cache_path, spend_journal_dir, store_path
from engine.messages import HistoryError, Message
from engine.outcomes import CompactionRecord, SessionSnapshot, TurnPlan
from engine.policy.plan import plan_turn
from engine.policy.strategies import reads_tool_output
from engine.store import sql as store_sql
from engine.store.rows import (
    COMPACTION_COLUMNS,
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    SessionInfo,
    SessionView,
    StoredCompaction,
    StoredEvent,
    StoredMessage,
    UndoRefused,
    UnknownSession,
    WriteLog,
    encode_config,
    session_info,
    stored_compaction,
    stored_event,
    stored_message,
)
from engine.store.schema import (
    SCHEMA_VERSION,
    StoreError,
    connect,
    describe_sqlite_error,
)

if TYPE_CHECKING:
    from engine.summarizers import Summarizer

__all__ = [
    "SCHEMA_VERSION",
    "PlanHistories",
    "SessionInfo",
    "SessionStore",
    "SessionView",
    "StoreError",
    "StoredCompaction",
    "StoredEvent",
    "StoredMessage",
    "UndoRefused",
    "UnknownSession",
    "WriteLog",
    "store_path",
]

_MANAGER_PASSTHROUGH = ("bus", "token_counter", "clock", "cache", "summarizer_settings")
_NO_END = 2**62


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _compactions(conn: sqlite3.Connection, session_id: str) -> list[StoredCompaction]:
    rows = conn.execute(
        f"SELECT {COMPACTION_COLUMNS} FROM compactions WHERE session_id = ? ORDER BY compaction_id",
        (session_id,),
    ).fetchall()
    return [stored_compaction(row) for row in rows]


class PlanHistories:
    """The light histories SessionStore.plan reads (store_sql.read_plan_history), kept between
    calls: appends only add rows at the end, so a session at the same revision (no compaction or
    undo since) and the same stable prefix reads just the rows appended since. Not thread-safe:
    one per reading thread."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple[int, int], History]] = {}

    def read(self, conn: sqlite3.Connection, info: SessionInfo) -> History:
        # A prefix declared before its messages arrived counts only what exists (read_snapshot).
        key = (info.revision, min(info.stable_prefix_end, info.message_count))
        entry = self._kept.get(info.session_id)
        known = None
        if entry is not None and entry[0] == key and len(entry[1]) <= info.message_count:
            known = entry[1]
        history = store_sql.read_plan_history(conn, info, known)
        self._kept[info.session_id] = (key, history)
        return history

    def retain(self, session_ids: set[str]) -> None:
        """Forget the sessions no longer listed."""
        for session_id in self._kept.keys() - session_ids:
            del self._kept[session_id]


class SessionStore:
    """One connection behind an RLock: safe to share between threads (the app's workers)."""

    def __init__(self, conn: sqlite3.Connection, path: Path, workspace: Path) -> None:
        self._conn = conn
        self.path = path
        self.workspace = workspace
        self._lock = RLock()
        self._wrote = False  # whether this connection ever began a write (close checkpoints)
        self._clock: Callable[[], int] = _now_ms
        # The spend total each session's manager holds, as this store last saw it: spend is
        # written as the difference from it, so two processes charging one session add up (§4).
        self._spend_seen: dict[str, Decimal] = {}
        # Test-only: called at named points inside a compaction's transaction (kill -9 tests).
        self._fault_hook: Callable[[str], None] = lambda point: None

    @classmethod
    def open(cls, workspace: Path, *, create: bool = False) -> SessionStore:
        """create=False: a missing workspace or store is a StoreError, and nothing is written."""
        workspace = Path(workspace)
        if not workspace.is_dir():
            raise StoreError(f"workspace {workspace} does not exist or is not a folder")
        path = store_path(workspace)
        if path.parent.exists() and not path.parent.is_dir():  # a file named .metis
            raise StoreError(
                f"{path.parent} is a file, not the {METIS_DIR} folder of a workspace: move it aside"
            )
        return cls(connect(path, create=create), path, workspace)

    @property
    def cache_path(self) -> Path:
        return cache_path(self.workspace)

    def close(self) -> None:
        with self._lock:
            if self._wrote:  # a reader (status, a dry run) leaves the file to its writers
                self.checkpoint()
            self._conn.close()

    def checkpoint(self) -> bool:
        """Fold the WAL into the file and truncate it to zero bytes, unless a reader or writer is
        in the way: then it is left for the next time (busy_timeout 0, so it never stalls this
        writer). Run after each compaction and undo and on close (left alone, the WAL grows over
        a long run and never shrinks). True if truncated."""
        with self._lock:
            conn = self._conn
            try:
                waited = conn.execute("PRAGMA busy_timeout").fetchone()[0]
                conn.execute("PRAGMA busy_timeout = 0")
                try:
                    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {int(waited)}")
            except sqlite3.Error:
                return False
            return busy == 0

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------

    @contextmanager
    def _txn(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute(begin)
                try:
                    yield conn
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                message = describe_sqlite_error(self.path, exc)
                locked = isinstance(exc, sqlite3.OperationalError) and (
                    "locked" in str(exc) or "busy" in str(exc)
                )
                raise (StoreLocked if locked else StoreError)(message) from None

    @property
    def _journal(self) -> Path:
        return spend_journal_dir(self.workspace)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that first folds in spend earlier writers could not record."""
        from engine.store import spend_journal  # writers only: a reader never folds spend

        claimed: list[tuple[Path, Path]] = []
        self._wrote = True
        try:
            with self._txn("BEGIN IMMEDIATE") as conn:
                claimed = spend_journal.claim_into(conn, self._journal)
                yield conn
        except BaseException:
            spend_journal.release(claimed)
            raise
        spend_journal.finish(claimed)

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A short read transaction: one consistent view, released at once (a long one stalls
        checkpoints and the WAL grows: DESIGN "Known pitfalls")."""
        return self._txn("BEGIN")

    def _bodies(self, session_id: str, seqs: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        """Bodies a resumed manager's history reads when it first needs them (by seq: positions
        move, seqs do not), each read its own short transaction."""
        with self._read() as conn:
            return store_sql.read_bodies(conn, session_id, seqs)

    def _session(self, conn: sqlite3.Connection, session_id: str) -> SessionInfo:
        return store_sql.session_row(conn, self.path, session_id)

    # -- sessions ------------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        *,
        config: CompactionConfig = CompactionConfig(),  # noqa: B008 - frozen, so shared safely
        stable_prefix_end: int = 0,
        title: str = "",
    ) -> SessionInfo:
        now = self._clock()
        with self._write() as conn:
            exists = conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,))
            if exists.fetchone():
                raise StoreError(f"session {session_id!r} already exists in {self.path}")
            conn.execute(
                "INSERT INTO sessions (session_id, title, created_at_ms, updated_at_ms, "
                "stable_prefix_end, config) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, title, now, now, stable_prefix_end, encode_config(config)),
            )
            info = self._session(conn, session_id)
        self._spend_seen[session_id] = Decimal(0)
        return info

    def update_config(self, session_id: str, config: CompactionConfig) -> SessionInfo:
        """Save new §11 knobs for a session (what `status` and the next `manager()` use)."""
        with self._write() as conn:
            self._session(conn, session_id)
            conn.execute(
                "UPDATE sessions SET config = ?, updated_at_ms = ? WHERE session_id = ?",
                (encode_config(config), self._clock(), session_id),
            )
            return self._session(conn, session_id)

    def list_sessions(self) -> list[SessionInfo]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions s ORDER BY s.created_at_ms, s.session_id"
            ).fetchall()
        return [session_info(row) for row in rows]

    def readable_sessions(self) -> tuple[list[SessionInfo], list[str]]:
        """Every session whose row reads, and one line for each that does not (table, id and
        what is wrong): one bad row never makes the others unreadable."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions s ORDER BY s.created_at_ms, s.session_id"
            ).fetchall()
        sessions, problems = [], []
        for row in rows:
            try:
                sessions.append(session_info(row))
            except StoreError as error:
                problems.append(str(error))
        return sessions, problems

    def session_info(self, session_id: str) -> SessionInfo:
        with self._read() as conn:
            return self._session(conn, session_id)

    def snapshot(self, session_id: str) -> SessionSnapshot:
        with self._read() as conn:
            return store_sql.read_snapshot(conn, self._session(conn, session_id))

    def plan(
        self,
        session_id: str,
        config: CompactionConfig | None = None,
        *,
        kept: PlanHistories | None = None,
    ) -> TurnPlan:
        """What the trigger would do for this session now: `plan_turn` over its active history,
        the same call the manager and the dashboard make (a cheaper shortcut once drifted).
        `config`: other knobs than the stored ones (the workspace's config.yaml on top).
        `kept`: histories from earlier calls (a list refreshed every second), so a session that
        only grew reads just its new rows."""
        with self._read() as conn:
            info = self._session(conn, session_id)
            if reads_tool_output(info.config.compaction_strategy):
                snap = store_sql.read_snapshot(conn, info)
                history = History(
                    snap.messages, stable_prefix_end=snap.stable_prefix_end, tokens=snap.tokens
                )
            elif kept is None:  # no body decoded: the list plans every session on each refresh
                history = store_sql.read_plan_history(conn, info)
            else:
                history = kept.read(conn, info)
        return plan_turn(history, config or info.config, info.spent_usd)

    def view(self, session_id: str) -> SessionView:
        """Info, active history, compactions and the write log from one read transaction, so
        none of them can miss (or hold) a message the others hold (or miss): `info.last_seq` is
        the tail cursor that carries on exactly after this view."""
        with self._read() as conn:
            info = self._session(conn, session_id)
            snapshot = store_sql.read_snapshot(conn, info)
            compactions = _compactions(conn, session_id)
            log = store_sql.write_log(conn, session_id)
        return SessionView(info, snapshot, compactions, log)

    def manager(
        self, session_id: str, *, summarizer: Summarizer | None = None, **knob_overrides: Any
    ) -> Any:  # a SessionManager: the manager imports nothing of the store, nor the store of it
        """A SessionManager over the session as stored now (history, token counts, knobs, spend,
        revision), persisting here and caching in <workspace>/.metis/. Overrides are §11 knobs
        (not saved: see update_config) or `bus`, `token_counter`, `clock`, `cache`,
        `summarizer_settings` (the workspace's: engine.workspace_config)."""
        # The manager and its cache (asyncio, the cache database) are for writers: a reader such
        # as `status` or the status line does not import them.
        from engine.cache import CompactionCache
        from engine.manager import SessionManager

        passthrough = {
            k: knob_overrides.pop(k) for k in _MANAGER_PASSTHROUGH if k in knob_overrides
        }
        with self._read() as conn:
            info = self._session(conn, session_id)
            # What SessionManager's constructor checks, done on the stored columns; the bodies
            # are read and decoded as the manager reads them (a long session resumes in
            # O(columns)), so the manager reads through this store while it is open.
            snapshot = store_sql.read_stored_snapshot(conn, info, self._bodies)
            if snapshot is None:
                try:
                    snapshot = store_sql.read_snapshot(conn, info, validate=True)
                except HistoryError as error:
                    raise StoreError(f"session {session_id!r} in {self.path}: {error}") from None
        knobs = {name: getattr(info.config, name) for name in info.config.__struct_fields__}
        unknown = sorted(set(knob_overrides) - set(knobs))
        if unknown:
            raise TypeError(f"manager(): unknown knob {unknown[0]!r}")
        knobs.update(knob_overrides)
        if "cache" not in passthrough:
            passthrough["cache"] = CompactionCache(
                self.cache_path, max_rows=knobs["compaction_cache_max_rows"]
            )
        manager = SessionManager(
            session_id=session_id,
            summarizer=summarizer,
            persistence=self,
            spent_usd=snapshot.spent_usd,
            revision=snapshot.revision,
            **knobs,
            **passthrough,
        )
        manager.load_snapshot(snapshot)  # the stored counts, not re-estimated ones
        self._spend_seen[session_id] = snapshot.spent_usd
        return manager

    # -- SessionPersistence --------------------------------------------------------------------

    def append_message(self, session_id: str, message: Message, tokens: int) -> None:
        """Append at the end of the active history; it must follow the last message there."""
        with self._write() as conn:
            store_sql.append(conn, self._session(conn, session_id), message, tokens, self._clock())

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
        """Archive messages[start:start+len(span_ids)] and put `replacement` in their place, in one
        transaction; SpanChanged (nothing written) when the span is not exactly as summarized or
        the session is no longer at `expected_revision`. Returns the session's new revision."""
        if len(replacement) != len(replacement_tokens) or not replacement:
            raise ValueError("replacement needs at least one message and one count per message")
        with self._write() as conn:
            info = self._session(conn, session_id)
            store_sql.check_revision(info, expected_revision)
            revision = store_sql.replace_span(
                conn, info, start, span_ids, replacement, replacement_tokens, record,
                self._clock(), self._fault_hook,
            )  # fmt: skip
            self._write_spend(conn, info, spent_usd)
            self._fault_hook("before_commit")
        self._fault_hook("committed")
        self._spend_seen[session_id] = spent_usd
        self.checkpoint()
        return revision

    def record_event(self, session_id: str, event: CompactionEvent) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO events (session_id, event_type, body, created_at_ms) "
                "VALUES (?, ?, ?, ?)",
                (session_id, event_type(event), encode_event(event).decode(), self._clock()),
            )

    def record_spend(self, session_id: str, spent_usd: Decimal) -> None:
        """Spend is never billed and forgotten: when another process holds the write
        lock past the busy timeout, the difference goes to the journal the next write folds in."""
        try:
            with self._write() as conn:
                self._write_spend(conn, self._session(conn, session_id), spent_usd)
        except StoreLocked:
            from engine.store import spend_journal

            seen = self._spend_seen.get(session_id)
            if seen is None:
                raise  # a manager built by hand: no difference to journal
            if spent_usd != seen:
                spend_journal.write_entry(self._journal, session_id, spent_usd - seen)
        self._spend_seen[session_id] = spent_usd

    def snapshot_if_changed(self, session_id: str, revision: int) -> SessionSnapshot | None:
        """O(1) when nothing changed (it runs at the start of every turn, via manager.sync);
        a snapshot after another process's compaction, undo or spend."""
        with self._read() as conn:
            info = self._session(conn, session_id)
            seen = self._spend_seen.get(session_id)
            if info.revision == revision and (seen is None or seen == info.spent_usd):
                return None
            snapshot = store_sql.read_stored_snapshot(
                conn, info, self._bodies
            ) or store_sql.read_snapshot(conn, info)
        self._spend_seen[session_id] = snapshot.spent_usd
        return snapshot

    def _write_spend(self, conn: sqlite3.Connection, info: SessionInfo, total: Decimal) -> None:
        seen = self._spend_seen.get(info.session_id)
        # A manager built by hand (never loaded through this store): its total is taken as is.
        spent = total if seen is None else info.spent_usd + (total - seen)
        conn.execute(
            "UPDATE sessions SET spent_usd = ? WHERE session_id = ?", (str(spent), info.session_id)
        )

    # -- before a deliberate write ----------------------------------------------------------

    def verify(self, session_id: str) -> None:
        """Refuse to write to a corrupt store: the file passes
        `PRAGMA quick_check` and every row of the session (active, archived, its compactions)
        decodes. StoreError naming what is wrong; nothing is written. O(file) for the check, so
        run it before a command's write (compact, undo), not on every turn."""
        with self._read() as conn:
            problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                raise StoreError(
                    f"{self.path} fails its integrity check ({'; '.join(problems)[:200]}): "
                    "nothing written; restore the store from a backup"
                )
            info = self._session(conn, session_id)
            try:
                store_sql.read_snapshot(conn, info, validate=True)
            except HistoryError as error:
                raise StoreError(f"session {session_id!r} in {self.path}: {error}") from None
            _compactions(conn, session_id)
            # The active rows were decoded (and validated) with the snapshot: the rest only.
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND position IS NULL",
                (session_id,),
            )
            for row in rows:
                stored_message(row, session_id)

    # -- undo ----------------------------------------------------------------------------------

    def undo_latest_compaction(self, session_id: str) -> StoredCompaction:
        """Revert the latest compaction still in effect (UndoRefused(reason) when there is none)."""
        return self.undo_compaction(session_id, None)

    def undo_compaction(self, session_id: str, compaction_id: int | None) -> StoredCompaction:
        """Put a compaction's archived originals back in place of its summary, in one
        transaction. UndoRefused when a later compaction still in effect was made on top of it."""
        with self._write() as conn:
            row = store_sql.undo(
                conn, self._session(conn, session_id), compaction_id, self._clock()
            )
            # Decoded before COMMIT: a record that cannot be read back rolls the undo back,
            # never commits and then fails.
            undone = stored_compaction(row)
        self.checkpoint()
        return undone

    # -- reading for the app and the CLI (each O(rows returned)) -----------------------------

    def messages_after(
        self, session_id: str, seq: int, limit: int = 10_000, *, include_replacements: bool = False
    ) -> list[StoredMessage]:
        """Messages appended after `seq`, in seq order; with `include_replacements` also the
        summaries and fillers compactions inserted."""
        extra = "" if include_replacements else " AND introduced_by IS NULL"
        with self._read() as conn:
            self._session(conn, session_id)
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq > ?{extra} "
                "ORDER BY seq LIMIT ?",
                (session_id, seq, limit),
            ).fetchall()
        return [stored_message(row, session_id) for row in rows]

    def active_messages(
        self, session_id: str, start: int = 0, end: int | None = None
    ) -> list[StoredMessage]:
        with self._read() as conn:
            info = self._session(conn, session_id)
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND position >= ? "
                "AND position < ? ORDER BY position",
                (session_id, start, _NO_END if end is None else end),
            ).fetchall()
        messages = [stored_message(row, session_id) for row in rows]
        # A row whose position is not an integer falls outside the range query: a gap here is a
        # message missing from the history, never to be shown as if it were whole.
        stop = info.message_count if end is None else min(end, info.message_count)
        wanted = range(start, max(start, stop))
        if [m.position for m in messages] != list(wanted):
            positions = {m.position for m in messages}
            missing = next((p for p in wanted if p not in positions), None)
            raise StoreError(
                f"session {session_id!r} in {self.path}: the position column has a gap or a "
                f"bad value (position {missing} not found among {len(wanted)}): restore the store"
            )
        return messages

    def compactions(self, session_id: str) -> list[StoredCompaction]:
        with self._read() as conn:
            self._session(conn, session_id)
            return _compactions(conn, session_id)

    def cache_backers(self) -> dict[str, list[tuple[str, str]]]:
        """Cache key -> the sessions whose compactions in effect use that cache row."""
        from engine.cache import cache_backers  # the cache module is for its users only

        return cache_backers(
            (info.session_id, info.title, stored.record.cache_key, stored.undone)
            for info in self.list_sessions()
            for stored in self.compactions(info.session_id)
        )

    def archived_messages(self, compaction_id: int) -> list[StoredMessage]:
        """The originals a compaction replaced, in their order ([] once it is undone)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE compaction_id = ? "
                "ORDER BY archived_position",
                (compaction_id,),
            ).fetchall()
        return [stored_message(row) for row in rows]

    def events(
        self, session_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[StoredEvent]:
        where, params = "event_id > ?", [after_id]
        if session_id is not None:
            where, params = "session_id = ? AND event_id > ?", [session_id, after_id]
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY event_id LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [stored_event(row) for row in rows]

    def data_version(self) -> int:
        """PRAGMA data_version: changes when another connection commits (a cheap "anything?")."""
        with self._lock:
            try:
                return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise StoreError(describe_sqlite_error(self.path, exc)) from None
