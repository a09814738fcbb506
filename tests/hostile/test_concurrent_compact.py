"""Two processes press "compact now" (SessionManager.prepare, then commit, through
SessionStore.manager) on the same session at the same instant: exactly one commits, the other gets
SpanChanged, and the store holds one compaction and a valid history. Seeded sessions; the race
itself is store_workers.py's `race` role (prepare, then commit when a shared file appears).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.test_store_processes import QUIET, check_consistent
from tests.hostile.conftest import ROOT, rng, trials
from tests.processes import spawn_worker

WORKERS = ROOT / "tests" / "engine" / "store" / "store_workers.py"
SESSION = "s"
TRIALS = trials(3, 20)


def race(workspace: Path, name: str, go: Path) -> subprocess.Popen[str]:
    return spawn_worker(WORKERS, "race", workspace, SESSION, name, go)


@pytest.mark.parametrize("trial", range(TRIALS))
def test_two_compact_nows_at_once_commit_exactly_once(tmp_path: Path, trial: int) -> None:
    chance = rng(7_000 + trial)
    seed, turns = chance.randrange(1_000), chance.randrange(8, 30)
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SESSION, config=QUIET)
        manager = store.manager(SESSION, cache=None)
        for turn in scripted_session(seed, turns):
            for message in turn:
                manager.append(message)
        before = store.snapshot(SESSION)
    go = tmp_path / "go"
    racers = {name: race(tmp_path, name, go) for name in ("a", "b")}
    deadline = time.monotonic() + 60
    for name, proc in racers.items():
        while not (tmp_path / f"ready-{name}").exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.005)
    go.write_text("")  # both have prepared the same span: commit now
    results: dict[str, dict[str, object]] = {}
    for name, proc in racers.items():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results[name] = json.loads(out.splitlines()[-1])

    assert sorted(str(r["result"]) for r in results.values()) == ["compacted", "span_changed"]
    loser = next(r for r in results.values() if r["result"] == "span_changed")
    assert "changed since it was summarized" in str(loser["error"])
    with SessionStore.open(tmp_path) as store:
        after = store.snapshot(SESSION)
        assert after.revision == before.revision + 1
        assert len(store.compactions(SESSION)) == 1
        check_consistent(store)
        originals = [m.message.id for m in store.messages_after(SESSION, 0)]
    assert originals == [m.id for m in before.messages]  # nothing lost or duplicated
