"""Worker processes for tests/test_store_processes.py: `python tests/store_workers.py ROLE ...`.

Each role is a real second process over the same store file. Roles report on stdout, one JSON
object a line, flushed, so the test can follow them while they run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine import CompactionConfig, SessionManager, SpanChanged, validate_history
from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session


def say(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def wait_for(path: Path, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.005)


async def writer(
    workspace: Path, session_id: str, turns: int, pace: float, seed: int, until: int = 0
) -> None:
    """metis dev: append turn by turn; before_turn at each turn's start reports any sync. With
    `until`, it then waits (syncing, appending nothing) for the session to reach that revision,
    so its last report holds every compaction another process made while it appended: one that
    commits during its last turn is otherwise seen only at a turn it never starts."""
    store = SessionStore.open(workspace)
    manager = store.manager(session_id, cache=None)
    for number, turn in enumerate(scripted_session(seed, turns), start=1):
        manager.append(turn[0])
        say(appended=turn[0].id)
        revision = manager.revision
        outcome = await manager.before_turn(f"t{number}")
        if manager.revision != revision and outcome.status != "compacted":
            # Another process compacted: the turn's first step (sync) picked it up.
            say(synced=manager.revision, ids=[m.id for m in manager.messages])
        for message in turn[1:]:
            manager.append(message)
            say(appended=message.id)
            if pace:
                await asyncio.sleep(1 / pace)
    deadline = time.monotonic() + 30
    while manager.revision < until and time.monotonic() < deadline:
        if not manager.sync():
            await asyncio.sleep(0.01)
    say(done=True, ids=[m.id for m in manager.messages], revision=manager.revision)
    store.close()


async def compact_once(store: SessionStore, session_id: str) -> tuple[str, SessionManager]:
    """The app's "compact now" once, with a fresh manager (sync() picks up compactions, not
    another process's appends): "compacted", "nothing" (nothing to compact yet) or "lost"
    (another process committed first)."""
    manager = store.manager(session_id, cache=None)
    try:
        manager.commit(await manager.prepare())
    except ValueError:  # NothingToCompact
        return "nothing", manager
    except SpanChanged:
        return "lost", manager
    return "compacted", manager


async def compactor(workspace: Path, session_id: str, count: int, start_file: Path) -> None:
    """The app's "compact now", repeated: prepare, then commit; a lost race is retried."""
    wait_for(start_file)
    store = SessionStore.open(workspace)
    done = 0
    while done < count:
        result, manager = await compact_once(store, session_id)
        if result == "nothing":
            await asyncio.sleep(0.02)
            continue
        if result == "lost":
            say(span_changed=True)
            continue
        done += 1
        say(compacted=manager.revision)
        await asyncio.sleep(0.05)
    store.close()


async def pause_in_commit(workspace: Path, session_id: str, point: str, marker: Path) -> None:
    """Compact, and stop dead at `point` of the commit: the parent kill -9s us there."""
    store = SessionStore.open(workspace)
    manager = store.manager(session_id, cache=None)

    def hook(at: str) -> None:
        if at == point:
            marker.write_text(at)
            time.sleep(3600)

    store._fault_hook = hook
    prepared = await manager.prepare()
    manager.commit(prepared)
    say(unexpected="returned")


async def churn(workspace: Path, session_id: str) -> None:
    """In a new session: append, compact and undo as fast as possible until killed."""
    store = SessionStore.open(workspace)
    store.create_session(session_id, config=CompactionConfig(compaction_model="local:extractive"))
    manager = store.manager(session_id, cache=None)
    for number, turn in enumerate(scripted_session(5, 400), start=1):
        for message in turn:
            manager.append(message)
        if number % 3 == 0:
            try:
                manager.commit(await manager.prepare())
                say(compacted=manager.revision)
            except (ValueError, SpanChanged):
                pass
        if number % 7 == 0:
            try:
                store.undo_latest_compaction(session_id)
                manager.sync()
            except Exception:
                pass
        say(turn=number)


async def race(workspace: Path, session_id: str, name: str, go: Path) -> None:
    """Prepare the same span as a rival process, then commit as soon as `go` appears."""
    store = SessionStore.open(workspace)
    manager = store.manager(session_id, cache=None)
    prepared = await manager.prepare()
    (workspace / f"ready-{name}").write_text("")
    wait_for(go)
    try:
        manager.commit(prepared)
    except SpanChanged as error:
        validate_history(manager.messages)
        say(result="span_changed", error=str(error), revision=manager.revision)
        return
    say(result="compacted", revision=manager.revision)


def main() -> None:
    role, workspace, *rest = sys.argv[1:]
    ws = Path(workspace)
    match role:
        case "writer":
            sid, turns, pace, seed, *until = rest
            asyncio.run(writer(ws, sid, int(turns), float(pace), int(seed), *map(int, until)))
        case "compactor":
            sid, count, start = rest
            asyncio.run(compactor(ws, sid, int(count), Path(start)))
        case "pause":
            sid, point, marker = rest
            asyncio.run(pause_in_commit(ws, sid, point, Path(marker)))
        case "churn":
            asyncio.run(churn(ws, rest[0]))
        case "race":
            sid, name, go = rest
            asyncio.run(race(ws, sid, name, Path(go)))
        case _:
            raise SystemExit(f"unknown role {role!r} (pid {os.getpid()})")


if __name__ == "__main__":
    main()
