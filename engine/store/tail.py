"""Tailing the session store: what changed since the last look, in O(new rows).

DESIGN "The session store", tailing: `watchfiles.awatch` on the `.metis/` folder (an atomic replace
ends a single-file watch) reacting to the db and its -wal, never -shm (a reader rewrites it: a
feedback loop); a file event is only a hint, confirmed by `PRAGMA data_version` on a connection
kept open; a polling timer for file systems where events do not arrive. Each look reads only rows
past the last seq / event id seen, in one short read transaction, so a reader sees each commit
whole or not at all. A locked, half-created or broken file is retried, never misread: the cursor
moves only after a whole read succeeded, and `problem` says what is wrong meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Generator
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

import msgspec

from engine.layout import file_identity, is_store_commit_file, metis_dir, store_path
from engine.store.rows import (
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    StoredEvent,
    StoredMessage,
    stored_event,
    stored_message,
)
from engine.store.schema import (
    SCHEMA_VERSION,
    StoreError,
    check_version,
    describe_sqlite_error,
)

log = logging.getLogger(__name__)

BATCH_ROWS = 5_000  # rows per look; more are read on the very next look, without waiting
RETRY_S = 0.05  # after a look that met another process's lock
WATCH_DEBOUNCE_MS = 10  # watchfiles groups events for at most this long (its default is 1.6 s)
# watchfiles looks for events every step and yields once a step brings nothing new, so an event
# is reported 1 to 2 steps after it happens (1.5 on average). The app's waiter (CommitWaiter) uses
# the short step while commits come (the notice under 10 ms; 20 ms made it ~30 ms, most of the
# app's commit-to-screen time, tests/perf/bench_app.py) and the long one once they stop (50 wake-ups
# a second instead of 200 while nothing happens: the app's idle CPU about halves).
WATCH_STEP_MS = 5
IDLE_STEP_MS = 20
BUSY_FOR_S = 2.0  # the short step for this long after a commit's event


class StoreUpdate(msgspec.Struct, frozen=True):
    session_id: str
    new_messages: list[StoredMessage]  # appended since the last update, in seq order
    compacted: bool  # revision changed (compaction or undo): re-read snapshot / compactions
    revision: int
    new_events: list[StoredEvent]
    sessions_changed: bool  # this session is new to the tailer (created, or a replaced file)


class TailCursor(msgspec.Struct, frozen=True):
    """Where a tailer stands: the last message seq and event id seen, each session's revision."""

    last_seq: int = 0
    last_event_id: int = 0
    revisions: dict[str, int] = {}


_GONE = (-1, -1)


class _NotReady(Exception):
    """The store is missing or still being created: nothing to read yet, and nothing wrong."""


def watch_filter(_change: object, path: str) -> bool:
    return is_store_commit_file(path)


class StoreTailer:
    """`updates()` yields batches of StoreUpdate (one per session that changed); `read_now()` is
    one synchronous look. `start="now"` (default) reports only what changes after construction
    when the store exists then (create the tailer, then load the snapshot, and drop messages at or
    below SessionInfo.last_seq); "beginning" or a TailCursor start from there."""

    def __init__(
        self,
        workspace: Path,
        *,
        poll_interval_s: float = 0.5,
        use_watchfiles: bool = True,
        start: Literal["now", "beginning"] | TailCursor = "now",
    ) -> None:
        self.workspace = Path(workspace)
        self.path = store_path(self.workspace)
        self.poll_interval_s = poll_interval_s
        self.use_watchfiles = use_watchfiles
        self.problem: str | None = None  # what stops reading right now; None when all is well
        self.watching = asyncio.Event()  # set once the file watch is up (see _watch)
        self._cursor = start if isinstance(start, TailCursor) else TailCursor()
        # "now" means the end of the file there now; a file that replaces it is read whole.
        self._start_identity = file_identity(self.path) if start == "now" else None
        self._start_at_end = self._start_identity is not None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._data_version: int | None = None
        self._more = False  # the last look stopped at BATCH_ROWS
        self._busy = False  # the last look met a lock: look again soon
        self._closed = False
        self._stop = asyncio.Event()
        self._wake: asyncio.Event | None = None
        if self._start_at_end:
            self.read_now()  # fixes the cursor at the store's end (yields nothing)

    @property
    def cursor(self) -> TailCursor:
        return self._cursor

    # -- one look ------------------------------------------------------------------------------

    def read_now(self) -> list[StoreUpdate]:
        """One look: [] when nothing changed, the store is not there yet, or it cannot be read
        now (see `problem`; the next look retries from the same cursor)."""
        with self._lock:
            if self._closed:
                return []
            try:
                updates = self._look()
            except _NotReady:
                self.problem, self._busy = None, False
                return []
            except StoreError as error:
                if self._conn is None:  # refused on opening: garbage, foreign, newer schema
                    self._broken()
                else:  # a row that will not decode: stay on it, and look again next time
                    self._data_version = None
                self.problem, self._busy = str(error), False
                return []
            except sqlite3.Error as exc:
                self._busy = getattr(exc, "sqlite_errorcode", None) in (5, 6)  # BUSY, LOCKED
                if not self._busy:
                    self._broken()
                self.problem = describe_sqlite_error(self.path, exc)
                return []
            self.problem, self._busy = None, False
            return updates

    def _look(self) -> list[StoreUpdate]:
        conn = self._connection()
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version == self._data_version and not self._more:
            return []  # the file event (or the timer) was not a commit by anyone else
        if self._start_at_end:  # "now": the store's end, as it is at the first look
            last_seq, last_event_id, revisions = self._end_of(conn)
            self._cursor = TailCursor(last_seq, last_event_id, revisions)
            self._start_at_end, self._data_version = False, version
            return []
        cursor = self._cursor
        conn.execute("BEGIN")
        try:
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS}, session_id FROM messages WHERE seq > ? "
                "ORDER BY seq LIMIT ?",
                (cursor.last_seq, BATCH_ROWS),
            ).fetchall()
            event_rows = conn.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE event_id > ? ORDER BY event_id LIMIT ?",
                (cursor.last_event_id, BATCH_ROWS),
            ).fetchall()
            revisions = dict(conn.execute("SELECT session_id, revision FROM sessions").fetchall())
        finally:
            conn.execute("COMMIT")  # a short read: never hold back checkpoints
        messages = [(row[-1], stored_message(row[:-1])) for row in rows]
        events = [stored_event(row) for row in event_rows]
        self._more = len(rows) == BATCH_ROWS or len(event_rows) == BATCH_ROWS
        self._data_version = version
        self._cursor = TailCursor(
            last_seq=rows[-1][0] if rows else cursor.last_seq,
            last_event_id=events[-1].event_id if events else cursor.last_event_id,
            revisions=revisions,
        )
        return _group(cursor.revisions, revisions, messages, events)

    @staticmethod
    def _end_of(conn: sqlite3.Connection) -> tuple[int, int, dict[str, int]]:
        conn.execute("BEGIN")
        try:
            seq = conn.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()[0]
            event = conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchone()[0]
            revisions = dict(conn.execute("SELECT session_id, revision FROM sessions").fetchall())
        finally:
            conn.execute("COMMIT")
        return int(seq), int(event), revisions

    def _connection(self) -> sqlite3.Connection:
        identity = file_identity(self.path)
        if identity is None:
            self._disconnect()
            if self._identity is not None:
                self._identity = _GONE  # what comes back is another store, even at this inode
            raise _NotReady
        if identity != self._start_identity:
            self._start_at_end = False
        if self._identity is not None and identity != self._identity:
            # Another file (a restore, a rename, a new store): read it from the top. Replace a
            # store only with every process closed: SQLite replays a -wal left beside the name
            # into whatever file bears it (DESIGN "Known pitfalls").
            self._disconnect()
            self._cursor = TailCursor()
        if self._conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA busy_timeout = 250")  # short: the look is retried anyway
                conn.execute("PRAGMA query_only = 1")  # a tailer never writes
                if check_version(conn, self.path) < SCHEMA_VERSION:
                    raise _NotReady  # created, schema not yet committed: a half-made store
            except BaseException:
                conn.close()
                raise
            self._conn, self._identity, self._data_version = conn, identity, None
        return self._conn

    def _broken(self) -> None:
        """A file we cannot read (garbage, corrupt, a newer schema): whatever is readable there
        next may be another store (even at the same inode), so it is read from the top."""
        self._disconnect()
        self._cursor = TailCursor()
        self._start_at_end = False

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with suppress(sqlite3.Error):
                conn.close()

    # -- the live loop -------------------------------------------------------------------------

    async def updates(self) -> AsyncIterator[list[StoreUpdate]]:
        """Batches as they happen. A file event wakes the loop at once; the timer wakes it every
        poll_interval_s regardless (events do not arrive on some file systems)."""
        wake = self._wake = asyncio.Event()
        watcher: asyncio.Task[None] | None = None
        watch_failed = False
        try:
            while not self._closed:
                if watcher is not None and watcher.done():
                    watch_failed = watch_failed or watcher.exception() is not None
                    watcher = None  # the folder went away: watch again once it is back
                watchable = self.use_watchfiles and not watch_failed and watcher is None
                if watchable and (metis_dir(self.workspace)).is_dir():
                    watcher = asyncio.create_task(self._watch(wake))
                batch = await asyncio.to_thread(self.read_now)
                if batch:
                    yield batch
                if self._more and not self.problem:
                    continue
                # A lock passes in milliseconds; a broken file waits for the user (and its
                # file event, when it is fixed).
                delay = RETRY_S if self._busy else self.poll_interval_s
                with suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), delay)
                wake.clear()
        finally:
            if watcher is not None:
                watcher.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await watcher

    async def _watch(self, wake: asyncio.Event) -> None:
        from watchfiles import awatch

        # awatch sets its OS watch up before its first await: whoever waits on this event runs
        # after that point, so a commit made then is seen (tests wait on it, never sleep).
        self.watching.set()
        try:
            async for _changes in awatch(
                metis_dir(self.workspace),
                watch_filter=watch_filter,
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                stop_event=self._stop,
                recursive=False,
            ):
                wake.set()
        except (OSError, RuntimeError) as exc:
            log.warning("watching %s failed (%s); polling only", metis_dir(self.workspace), exc)
            raise

    async def aclose(self) -> None:
        self._closed = True
        self._stop.set()
        if self._wake is not None:
            self._wake.set()
        with self._lock:
            self._disconnect()


class CommitWaiter:
    """The synchronous twin of the tailer's wake-up, for a caller that polls from its own thread:
    `wait` returns on a commit's file event (the same `watch_filter`), on `wake`, or after the
    timeout. Only a hint: the reader confirms with PRAGMA data_version (StoreTailer.read_now).
    It says why it returned: "changed", "timeout", "woken", or "switched" (the step changed, see
    IDLE_STEP_MS: the caller reads once more, since a commit made before the new watch began
    would give it no event)."""

    def __init__(self, workspace: Path) -> None:
        self.folder = metis_dir(workspace)
        self._watch: Generator[set[Any], None, None] | None = None
        self._step_ms = 0
        self._event_at = float("-inf")  # monotonic time of the last commit's event

    @property
    def busy(self) -> bool:
        return time.monotonic() - self._event_at < BUSY_FOR_S

    def wait(self, timeout_s: float, wake: threading.Event) -> str:
        try:
            import watchfiles
        except ImportError:  # pragma: no cover - a dependency, but keep polling if absent
            wake.wait(timeout_s)
            return "timeout"
        step = WATCH_STEP_MS if self.busy else IDLE_STEP_MS
        switched = self._watch is not None and step != self._step_ms
        if switched:
            self.reset()
        if self._watch is None:
            try:
                self._watch = watchfiles.watch(
                    self.folder,
                    watch_filter=watch_filter,
                    stop_event=wake,
                    yield_on_timeout=True,
                    rust_timeout=max(50, int(timeout_s * 1000)),
                    debounce=WATCH_DEBOUNCE_MS,
                    step=step,
                )
                self._step_ms = step
            except (OSError, RuntimeError):
                self._watch = None
                wake.wait(timeout_s)
                return "timeout"
            if switched:
                return "switched"
        try:
            changes = next(self._watch)
        except (StopIteration, OSError, RuntimeError):
            self._watch = None  # woken, or the folder went away: start again next time
            if not wake.is_set():
                wake.wait(timeout_s)
            return "woken" if wake.is_set() else "timeout"
        if changes:
            self._event_at = time.monotonic()
            return "changed"
        return "timeout"

    def reset(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()  # ends the generator's watch (its OS watch) now, not at collection


def _group(
    before: dict[str, int],
    after: dict[str, int],
    messages: list[tuple[str, StoredMessage]],
    events: list[StoredEvent],
) -> list[StoreUpdate]:
    """One StoreUpdate per session with something new. Summaries and fillers a compaction
    inserted are not "new messages": `compacted` tells the reader to re-read instead."""
    new_messages: dict[str, list[StoredMessage]] = {}
    for session_id, message in messages:
        if message.introduced_by is None:
            new_messages.setdefault(session_id, []).append(message)
    new_events: dict[str, list[StoredEvent]] = {}
    for event in events:
        new_events.setdefault(event.session_id, []).append(event)
    updates = []
    for session_id in sorted(set(after) | set(new_messages) | set(new_events)):
        revision = after.get(session_id, before.get(session_id, 0))
        created = session_id in after and session_id not in before
        compacted = revision != before.get(session_id, 0)
        update = StoreUpdate(
            session_id=session_id,
            new_messages=new_messages.get(session_id, []),
            compacted=compacted,
            revision=revision,
            new_events=new_events.get(session_id, []),
            sessions_changed=created,
        )
        if update.new_messages or update.new_events or compacted or created:
            updates.append(update)
    return updates
