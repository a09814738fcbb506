"""kill -9 of the writer and of a compacting process at seeded random instants.

Each trial: a writer (metis dev, flat out) and a compactor ("compact now" in a loop, lingering at
random points inside its commit) share a fresh store; after a seeded random delay the victim (the
writer, the compactor or both) is killed with SIGKILL, then the other too. The store must open,
pass `PRAGMA integrity_check`, validate every session, and hold exactly the messages the writer
committed: none lost, none duplicated, in order.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from engine import CompactionConfig
from engine.layout import store_path
from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.test_store_processes import check_consistent
from tests.hostile.conftest import rng, spawn, trials

SESSION = "s"
SEED = 6_0001
TRIALS = trials(8, 60)
# High thresholds: the writer never compacts by itself; every compaction is the compactor's.
QUIET = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=10_000_000,
    compaction_hard_cap_tokens=20_000_000,
    compaction_preserve_recent_turns=2,
)


def lines_of(path: Path) -> list[str]:
    if not path.exists():
        return []
    text = path.read_text()
    # The last line may be half-written when the kill landed mid-write: only whole lines count.
    whole = text.split("\n")[:-1]
    return [line for line in whole if line]


def wait_lines(path: Path, count: int, procs: list[subprocess.Popen[str]]) -> None:
    deadline = time.monotonic() + 60
    while len(lines_of(path)) < count:
        for proc in procs:
            assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"{path.name} never reached {count} lines"
        time.sleep(0.005)


def kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_9_leaves_a_valid_store_with_every_committed_message_once(
    tmp_path: Path, trial: int
) -> None:
    chance = rng(SEED + trial)
    seed = chance.randrange(1_000)
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SESSION, config=QUIET)
    wrote, compacted = tmp_path / "written", tmp_path / "compacted"
    writer = spawn("writer", tmp_path, SESSION, seed, wrote)
    compactor = spawn("compactor", tmp_path, SESSION, seed, compacted)
    victim = chance.choice(("writer", "compactor", "both"))
    wait_lines(wrote, chance.randrange(20, 120), [writer, compactor])
    wait_lines(compacted, 1, [writer, compactor])  # both are at work: compactions are committing
    time.sleep(chance.uniform(0.0, 0.4))
    first, second = (compactor, writer) if victim == "compactor" else (writer, compactor)
    kill(first)
    if victim != "both":
        time.sleep(chance.uniform(0.0, 0.1))  # the survivor runs on a moment, then dies too
    kill(second)

    integrity = sqlite3.connect(store_path(tmp_path))
    assert integrity.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    integrity.close()
    with SessionStore.open(tmp_path) as store:  # opens: WAL recovery is SQLite's
        check_consistent(store)  # positions, counters, archives, validate_history per session
        stored = [m.message.id for m in store.messages_after(SESSION, 0, limit=1_000_000)]
        committed_revisions = [int(r) for r in lines_of(compacted)]
        revision = store.session_info(SESSION).revision
        compactions = [c for c in store.compactions(SESSION) if not c.undone]

    reported = lines_of(wrote)
    expected = [m.id for turn in scripted_session(seed, 2_000) for m in turn]
    assert len(set(stored)) == len(stored), "a message is stored twice"
    assert stored == expected[: len(stored)], "stored messages are not the writer's, in order"
    # Everything the writer saw committed is there; at most the one commit in flight is extra.
    assert stored[: len(reported)] == reported
    assert len(stored) - len(reported) in (0, 1)
    # Every compaction the compactor saw commit is there; at most one more committed unseen.
    assert revision - (committed_revisions[-1] if committed_revisions else 0) in (0, 1)
    assert len(compactions) == revision
