"""The store under real second processes (store_workers.py): tailing a live writer,
compacting under it, kill -9 inside a compaction's transaction, and racing compactions."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from engine import CompactionConfig, validate_history
from engine.layout import store_path
from engine.store import SessionStore
from engine.store.tail import StoreTailer
from metis_compaction_tui.demo.workload import scripted_session
from tests.cli_process import run_cli
from tests.processes import spawn_worker

WORKERS = Path(__file__).with_name("store_workers.py")
ROOT = Path(__file__).resolve().parents[3]
SESSION = "s"
# High knobs: the writer never compacts by itself, so every compaction seen is the other process's.
QUIET = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=10_000_000,
    compaction_hard_cap_tokens=20_000_000,
    compaction_preserve_recent_turns=4,
)


def spawn(*args: object) -> subprocess.Popen[str]:
    return spawn_worker(WORKERS, *args)


def lines(proc: subprocess.Popen[str], timeout: float = 60) -> list[dict[str, object]]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


def wait_for(path: Path, proc: subprocess.Popen[str], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"no {path.name} from the worker"
        time.sleep(0.01)


def make_store(tmp_path: Path, turns: int = 0, config: CompactionConfig = QUIET) -> SessionStore:
    store = SessionStore.open(tmp_path, create=True)
    store.create_session(SESSION, config=config)
    if turns:
        manager = store.manager(SESSION, cache=None)
        for turn in scripted_session(9, turns):
            for message in turn:
                manager.append(message)
    return store


def check_consistent(store: SessionStore) -> None:
    """What any committed state satisfies: positions 0..n-1, the counters agree with the rows,
    every compaction in effect has its originals archived, the history validates."""
    for info in store.list_sessions():
        active = store.active_messages(info.session_id)
        assert [m.position for m in active] == list(range(len(active)))
        assert info.message_count == len(active)
        assert info.total_tokens == sum(m.tokens for m in active)
        validate_history([m.message for m in active])
        for stored in store.compactions(info.session_id):
            archived = store.archived_messages(stored.compaction_id)
            expected = 0 if stored.undone else stored.record.span_message_count
            assert len(archived) == expected


def all_message_ids(store: SessionStore) -> list[str]:
    rows = store.messages_after(SESSION, 0)
    return [m.message.id for m in rows]


# -- tailing a live writer ----------------------------------------------------------------------


async def test_a_tailer_sees_every_message_of_a_writer_process_once_in_order(
    tmp_path: Path,
) -> None:
    make_store(tmp_path).close()
    tailer = StoreTailer(tmp_path, poll_interval_s=0.2)
    writer = spawn("writer", tmp_path, SESSION, 12, 400, 1)
    expected = [m.id for turn in scripted_session(1, 12) for m in turn]
    seen: list[str] = []
    seqs: list[int] = []

    async def follow() -> None:
        async for batch in tailer.updates():
            for update in batch:
                seen.extend(m.message.id for m in update.new_messages)
                seqs.extend(m.seq for m in update.new_messages)
            if len(seen) >= len(expected):
                return

    await asyncio.wait_for(follow(), timeout=60)
    await tailer.aclose()
    lines(writer)
    assert seen == expected
    assert seqs == sorted(set(seqs))


# -- compacting under a writer ------------------------------------------------------------------


async def test_compacting_while_a_writer_appends_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path, turns=8)
    start = tmp_path / "start"
    writer = spawn("writer", tmp_path, SESSION, 24, 300, 2, 3)  # its last report at revision 3
    compactor = spawn("compactor", tmp_path, SESSION, 3, start)
    start.write_text("")
    compactor_out = lines(compactor)
    writer_out = lines(writer)
    assert sum("compacted" in line for line in compactor_out) == 3

    # Nothing lost or duplicated: every message written is stored exactly once.
    written = [m.id for turn in scripted_session(9, 8) for m in turn]
    written += [str(line["appended"]) for line in writer_out if "appended" in line]
    stored = all_message_ids(store)
    assert sorted(stored) == sorted(written) and len(set(stored)) == len(stored)
    check_consistent(store)

    # The writer's next turn picked the other process's compaction up (manager.sync).
    synced = [line for line in writer_out if "synced" in line]
    assert synced, "the writer never saw the compaction"
    done = writer_out[-1]
    snapshot = store.snapshot(SESSION)
    assert done["ids"] == [m.id for m in snapshot.messages]
    assert done["revision"] == snapshot.revision == 3


async def test_two_processes_racing_to_compact_one_span_commit_once(tmp_path: Path) -> None:
    store = make_store(tmp_path, turns=8)
    before = store.snapshot(SESSION)
    go = tmp_path / "go"
    racers = [spawn("race", tmp_path, SESSION, name, go) for name in ("a", "b")]
    for name, proc in zip("ab", racers, strict=True):
        wait_for(tmp_path / f"ready-{name}", proc)
    go.write_text("")
    results = sorted(str(lines(proc)[-1]["result"]) for proc in racers)
    assert results == ["compacted", "span_changed"]
    after = store.snapshot(SESSION)
    assert after.revision == before.revision + 1
    assert len(store.compactions(SESSION)) == 1
    check_consistent(store)


# -- kill -9 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("point", "committed"),
    [
        ("archived", False),
        ("shifted", False),
        ("inserted", False),
        ("before_commit", False),
        ("committed", True),
    ],
)
def test_kill_9_inside_a_compaction_leaves_the_state_before_or_after(
    tmp_path: Path, point: str, committed: bool
) -> None:
    store = make_store(tmp_path, turns=8)
    before = store.snapshot(SESSION)
    store.close()
    marker = tmp_path / "at-point"
    proc = spawn("pause", tmp_path, SESSION, point, marker)
    wait_for(marker, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    reopened = SessionStore.open(tmp_path)  # opens: WAL recovery is SQLite's
    check_consistent(reopened)
    after = reopened.snapshot(SESSION)
    if committed:
        assert after.revision == before.revision + 1
        assert len(after.messages) < len(before.messages)
    else:
        assert after == before
        assert reopened.compactions(SESSION) == []
    reopened.close()


def test_kill_9_at_random_instants_of_append_compact_undo_churn(tmp_path: Path) -> None:
    make_store(tmp_path).close()
    compactions = 0
    for number, delay in enumerate((0.3, 0.5, 0.8)):
        proc = spawn("churn", tmp_path, f"churn-{number}")
        assert proc.stdout is not None
        while "compacted" not in proc.stdout.readline():  # running, and compacting
            assert proc.poll() is None, proc.communicate()[1]
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with SessionStore.open(tmp_path) as store:
            check_consistent(store)
            compactions += len(store.compactions(f"churn-{number}"))
        integrity = sqlite3.connect(store.path)
        assert integrity.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        integrity.close()
    assert compactions >= 3


# -- another process's undo, and a newer schema -------------------------------------------------


async def test_an_undo_in_another_process_is_picked_up_by_the_next_turn(tmp_path: Path) -> None:
    store = make_store(tmp_path, turns=8)
    manager = store.manager(SESSION, cache=None)
    manager.commit(await manager.prepare())
    compacted_ids = [m.id for m in manager.messages]
    undo = run_cli("undo", SESSION, "-w", str(tmp_path))
    assert undo.returncode == 0, undo.stderr
    assert manager.sync()
    assert [m.id for m in manager.messages] != compacted_ids
    assert [m.id for m in manager.messages] == [
        m.id for turn in scripted_session(9, 8) for m in turn
    ]
    refused = run_cli("undo", SESSION, "-w", str(tmp_path))
    assert refused.returncode == 1
    assert "no compaction to undo" in refused.stderr


def test_another_process_refuses_a_newer_schema_and_leaves_the_file_alone(tmp_path: Path) -> None:
    make_store(tmp_path, turns=2).close()
    path = store_path(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    before = path.read_bytes()
    done = run_cli("status", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "is schema version 7; this metis-compaction-tui knows up to 2: upgrade it" in done.stderr
    assert path.read_bytes() == before
