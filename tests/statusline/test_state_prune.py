"""The state folder is tidied: the files of transcripts not refreshed for a month go, once a day
at most, never those of a transcript a refresher is reading, never files we did not write."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from metis_compaction_tui.statusline.refresh import refresh
from metis_compaction_tui.statusline.state import (
    PRUNE_AFTER_S,
    PRUNE_EVERY_S,
    prune_states,
    state_key,
)
from tests.transcript_writer import ClaudeCodeWriter


def make_state(directory: Path, key: str, age_s: float, now: float) -> list[Path]:
    files = [directory / (key + s) for s in (".line.json", ".parse.msgpack", ".lock")]
    for f in files:
        f.write_bytes(b"{}")
        os.utime(f, (now - age_s, now - age_s))
    return files


def test_old_states_go_and_fresh_ones_stay(tmp_path: Path) -> None:
    now = time.time()
    old = make_state(tmp_path, "a" * 32, PRUNE_AFTER_S + 60, now)
    earlier_version = make_state(tmp_path, "b" * 16, PRUNE_AFTER_S + 60, now)
    fresh = make_state(tmp_path, "c" * 32, 3600, now)
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not ours")
    os.utime(foreign, (now - 2 * PRUNE_AFTER_S, now - 2 * PRUNE_AFTER_S))
    assert prune_states(str(tmp_path), now) == 2
    assert not any(f.exists() for f in old + earlier_version)
    assert all(f.exists() for f in fresh) and foreign.exists()


def test_once_a_day_at_most(tmp_path: Path) -> None:
    now = time.time()
    assert prune_states(str(tmp_path), now) == 0  # looks, and marks the day
    old = make_state(tmp_path, "d" * 32, PRUNE_AFTER_S + 60, now)
    assert prune_states(str(tmp_path), now + 60) == 0  # the same day: not looked at again
    assert all(f.exists() for f in old)
    assert prune_states(str(tmp_path), now + PRUNE_EVERY_S + 60) == 1
    assert not any(f.exists() for f in old)


def test_a_transcript_being_read_keeps_its_files(tmp_path: Path) -> None:
    now = time.time()
    files = make_state(tmp_path, "e" * 32, PRUNE_AFTER_S + 60, now)
    with open(files[2], "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert prune_states(str(tmp_path), now) == 0
    assert all(f.exists() for f in files)


def test_the_refresher_prunes(tmp_path: Path, state_dir: Path) -> None:
    log = tmp_path / "s.jsonl"
    with log.open("w") as out:
        out.writelines(ClaudeCodeWriter(2).turns_until(5_000))
    now = time.time()
    state_dir.mkdir(parents=True)
    old = make_state(state_dir, "f" * 32, PRUNE_AFTER_S + 60, now)
    assert refresh(str(log), str(state_dir), wait=True)
    assert not any(f.exists() for f in old)
    assert (state_dir / (state_key(str(log)) + ".line.json")).exists()
