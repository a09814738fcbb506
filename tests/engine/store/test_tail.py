"""engine.store.tail: what it reports, that it reads only new rows, and that a locked, half-made,
broken or replaced file is retried and never misread. Real files, real watchfiles."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import engine.store.tail as tail_module
from engine import encode_message as encode
from engine.layout import cache_path, metis_dir, store_path
from engine.store.tail import (
    IDLE_STEP_MS,
    WATCH_STEP_MS,
    CommitWaiter,
    StoreTailer,
    StoreUpdate,
    TailCursor,
    watch_filter,
)
from tests.history_builders import (
    SID,
    SMALL_CONFIG,
    RecordingSummarizer,
    assistant,
    chat,
    fill,
    ids,
    new_store,
    user,
)

CONFIG = SMALL_CONFIG


def appended(updates: list[StoreUpdate]) -> list[str]:
    return [m.message.id for u in updates for m in u.new_messages]


# -- what an update says -------------------------------------------------------------------


def test_start_now_reports_only_what_comes_after(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    fill(store, chat(2))
    tailer = StoreTailer(tmp_path)
    assert tailer.read_now() == []
    fill(store, chat(2, prefix="n"))
    updates = tailer.read_now()
    assert [u.session_id for u in updates] == [SID]
    assert appended(updates) == ids(chat(2, prefix="n"))
    assert not updates[0].compacted and not updates[0].sessions_changed
    assert tailer.read_now() == []  # seen once


def test_start_beginning_reports_everything_and_a_cursor_resumes(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    fill(store, chat(3))
    first = StoreTailer(tmp_path, start="beginning")
    updates = first.read_now()
    assert appended(updates) == ids(chat(3)) and updates[0].sessions_changed
    fill(store, [user("late")])
    resumed = StoreTailer(tmp_path, start=first.cursor)
    assert appended(resumed.read_now()) == ["late"]
    assert isinstance(first.cursor, TailCursor)


async def test_a_compaction_is_flagged_and_its_summary_is_not_a_new_message(
    tmp_path: Path,
) -> None:
    store = new_store(tmp_path)
    fill(store, chat(4, size=300))
    tailer = StoreTailer(tmp_path)
    manager = store.manager(SID, summarizer=RecordingSummarizer(), cache=None)
    outcome = await manager.before_turn()
    assert outcome.status == "compacted"
    (update,) = tailer.read_now()
    assert update.compacted and update.revision == 1
    assert update.new_messages == []
    assert [e.event_type for e in update.new_events] == [
        "session.compaction_started",
        "session.compaction_completed",
    ]
    store.undo_latest_compaction(SID)
    (update,) = tailer.read_now()
    assert update.compacted and update.revision == 2 and update.new_events == []


def test_a_new_session_is_reported(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    tailer = StoreTailer(tmp_path)
    store.create_session("s2", config=CONFIG)
    (update,) = tailer.read_now()
    assert update.session_id == "s2" and update.sessions_changed
    fill(store, [user("a"), assistant("b")], "s2")
    fill(store, [user("c")], SID)
    assert {u.session_id: appended([u]) for u in tailer.read_now()} == {
        SID: ["c"],
        "s2": ["a", "b"],
    }


def test_an_update_reads_only_the_new_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_store(tmp_path)
    fill(store, chat(1_000))
    tailer = StoreTailer(tmp_path)
    decoded: list[int] = []
    real = tail_module.stored_message

    def counting(row: tuple) -> object:
        decoded.append(row[0])
        return real(row)

    monkeypatch.setattr(tail_module, "stored_message", counting)
    fill(store, [user("one more")])
    assert appended(tailer.read_now()) == ["one more"]
    assert len(decoded) == 1
    decoded.clear()
    assert tailer.read_now() == []  # data_version unchanged: no rows read at all
    assert decoded == []


def test_a_backlog_past_one_batch_is_read_in_order_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tail_module, "BATCH_ROWS", 7)
    store = new_store(tmp_path)
    tailer = StoreTailer(tmp_path)
    fill(store, chat(10))
    seen: list[str] = []
    for _ in range(5):
        seen += appended(tailer.read_now())
    assert seen == ids(chat(10))


# -- never misread -------------------------------------------------------------------------


def test_no_store_yet_then_a_half_made_one_then_a_real_one(tmp_path: Path) -> None:
    tailer = StoreTailer(tmp_path)  # nothing there: start from the beginning when it comes
    assert tailer.read_now() == [] and tailer.problem is None
    path = store_path(tmp_path)
    path.parent.mkdir()
    path.touch()  # created, schema not yet committed
    assert tailer.read_now() == [] and tailer.problem is None
    path.unlink()
    store = new_store(tmp_path)
    fill(store, [user("first")])
    updates = tailer.read_now()
    assert appended(updates) == ["first"] and updates[0].sessions_changed


def test_a_locked_store_is_retried_and_nothing_is_lost(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    tailer = StoreTailer(tmp_path)
    fill(store, [user("before the lock")])
    store.close()
    tailer._disconnect()  # exclusive locking mode needs every other connection gone
    locker = sqlite3.connect(store.path, isolation_level=None)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")  # in WAL, exclusive locking shuts every reader out
    locker.execute("UPDATE sessions SET title = 'locked'")
    assert tailer.read_now() == []
    assert tailer.problem is not None and "locked" in tailer.problem
    locker.execute("COMMIT")
    locker.close()
    assert appended(tailer.read_now()) == ["before the lock"]
    assert tailer.problem is None


def test_a_garbage_file_is_a_problem_until_a_store_replaces_it(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    path.parent.mkdir()
    path.write_bytes(b"garbage " * 512)
    tailer = StoreTailer(tmp_path)
    assert tailer.read_now() == []
    assert tailer.problem is not None and "not a SQLite database" in tailer.problem
    path.unlink()
    store = new_store(tmp_path)
    fill(store, [user("fixed")])
    assert appended(tailer.read_now()) == ["fixed"] and tailer.problem is None


def test_a_replaced_file_is_read_as_a_new_store(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    fill(store, [user("old")])
    other = tmp_path / "other"
    other.mkdir()
    replacement = new_store(other, "s9")
    fill(replacement, [user("new")], "s9")
    replacement.close()
    tailer = StoreTailer(tmp_path)
    assert tailer.read_now() == []
    store.close()
    for suffix in ("", "-wal", "-shm"):  # a restore: the old store goes
        Path(f"{store_path(tmp_path)}{suffix}").unlink(missing_ok=True)
    assert tailer.read_now() == []
    staged = metis_dir(tmp_path) / "staged.sqlite"
    shutil.copy(store_path(other), staged)
    staged.replace(store_path(tmp_path))  # and the backup is renamed in
    updates = tailer.read_now()
    assert {u.session_id for u in updates if u.sessions_changed} == {"s9"}
    assert appended(updates) == ["new"]


def test_the_watch_filter_takes_the_db_and_wal_never_shm() -> None:
    store = str(store_path("/w"))
    assert watch_filter(None, store)
    assert watch_filter(None, f"{store}-wal")
    assert not watch_filter(None, f"{store}-shm")
    assert not watch_filter(None, f"{cache_path('/w')}-wal")


# -- the live loop -------------------------------------------------------------------------


@pytest.mark.parametrize("use_watchfiles", [True, False])
async def test_updates_follow_a_writer(tmp_path: Path, use_watchfiles: bool) -> None:
    store = new_store(tmp_path)
    # With watchfiles the timer is far off, so what arrives came from a file event.
    poll = 30.0 if use_watchfiles else 0.05
    tailer = StoreTailer(tmp_path, poll_interval_s=poll, use_watchfiles=use_watchfiles)
    expected = ids(chat(20))
    seen: list[str] = []

    async def follow() -> None:
        async for batch in tailer.updates():
            seen.extend(appended(batch))
            if len(seen) >= len(expected):
                return

    follower = asyncio.create_task(follow())
    if use_watchfiles:  # the watch is up: a commit from now on raises a file event
        await asyncio.wait_for(tailer.watching.wait(), timeout=10)
    for message in chat(20):
        store.append_message(SID, message, 1)
        await asyncio.sleep(0.005)
    await asyncio.wait_for(follower, timeout=20)
    await tailer.aclose()
    assert seen == expected


async def test_aclose_ends_the_loop(tmp_path: Path) -> None:
    new_store(tmp_path)
    tailer = StoreTailer(tmp_path, poll_interval_s=30)
    batches: list[object] = []

    async def follow() -> None:
        async for batch in tailer.updates():
            batches.append(batch)

    follower = asyncio.create_task(follow())
    await asyncio.wait_for(tailer.watching.wait(), timeout=10)  # the loop is running
    await tailer.aclose()
    await asyncio.wait_for(follower, timeout=5)
    assert batches == []


def test_a_row_that_will_not_decode_is_a_problem_and_the_cursor_stays(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    tailer = StoreTailer(tmp_path)
    fill(store, [user("u0"), assistant("a1")])
    conn = sqlite3.connect(store.path)
    conn.execute("UPDATE messages SET body = x'c1' WHERE message_id = 'a1'")
    conn.commit()
    for _ in range(2):  # looked at again each time, never skipped
        assert tailer.read_now() == []
        assert tailer.problem is not None and "undecodable body" in tailer.problem
    conn.execute("UPDATE messages SET body = ? WHERE message_id = 'a1'", (encode(assistant("a1")),))
    conn.commit()
    conn.close()
    assert appended(tailer.read_now()) == ["u0", "a1"] and tailer.problem is None


# -- the app's commit waiter ----------------------------------------------------------------


def test_the_commit_waiter_uses_the_short_step_while_commits_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit's event is reported 1 to 2 steps after it: the short step while commits come,
    the long one (fewer idle wake-ups) once they stop. On a switch the waiter returns at once:
    a commit made before the new watch began would give it no event, so the caller reads once
    more."""
    store = new_store(tmp_path)
    fill(store, chat(1))
    waiter = CommitWaiter(tmp_path)
    wake = threading.Event()
    assert not waiter.busy
    assert waiter.wait(0.05, wake) == "timeout"
    assert waiter._step_ms == IDLE_STEP_MS
    writer = threading.Thread(target=lambda: (time.sleep(0.2), fill(store, chat(1, prefix="n"))))
    writer.start()
    try:
        reasons = {waiter.wait(0.05, wake) for _ in range(200) if not waiter.busy}
    finally:
        writer.join()
    assert "changed" in reasons and waiter.busy
    assert waiter.wait(30.0, wake) == "switched", "back at once, not after the 30 s timeout"
    assert waiter._step_ms == WATCH_STEP_MS
    monkeypatch.setattr(tail_module, "BUSY_FOR_S", 0.0)
    assert not waiter.busy
    assert waiter.wait(30.0, wake) == "switched"
    assert waiter._step_ms == IDLE_STEP_MS
    wake.set()
    assert waiter.wait(30.0, wake) == "woken"
    waiter.reset()
