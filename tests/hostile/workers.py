"""Worker processes for the hostile suite: `python tests/hostile/workers.py ROLE WORKSPACE ...`.

Each role is a real process over the same store. A role that commits writes a side file line
*after* each commit returns, so a parent that kill -9s it knows a lower bound of what committed
(the side file may lag the store by the one commit in flight, never lead it).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.store_workers import compact_once

# Points inside a compaction's transaction (SessionStore._fault_hook), where a kill hurts most.
COMMIT_POINTS = ("archived", "shifted", "inserted", "before_commit", "committed")


def note(side: Path, line: str) -> None:
    with side.open("a") as out:
        out.write(line + "\n")


def writer(workspace: Path, session_id: str, seed: int, side: Path) -> None:
    """metis dev flat out: append every message of a scripted session, noting each commit."""
    store = SessionStore.open(workspace)
    manager = store.manager(session_id, cache=None)
    for turn in scripted_session(seed, 2_000):
        manager.sync()  # pick up the compactor's commits, as before_turn does
        for message in turn:
            manager.append(message)
            note(side, message.id)
    store.close()


async def compactor(workspace: Path, session_id: str, seed: int, side: Path) -> None:
    """The app's "compact now" in a loop; lingers at random points inside the commit."""
    chance = random.Random(seed)
    store = SessionStore.open(workspace)

    def hook(point: str) -> None:
        if chance.random() < 0.3:
            time.sleep(chance.uniform(0, 0.02))

    store._fault_hook = hook
    while True:
        result, manager = await compact_once(store, session_id)
        if result == "nothing":
            await asyncio.sleep(0.005)
        elif result == "compacted":
            note(side, str(manager.revision))


def main() -> None:
    role, workspace, *rest = sys.argv[1:]
    ws = Path(workspace)
    match role:
        case "writer":
            sid, seed, side = rest
            writer(ws, sid, int(seed), Path(side))
        case "compactor":
            sid, seed, side = rest
            asyncio.run(compactor(ws, sid, int(seed), Path(side)))
        case _:
            raise SystemExit(f"unknown role {role!r} (pid {os.getpid()})")


if __name__ == "__main__":
    main()
