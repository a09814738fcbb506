"""Session store figures (DESIGN "The session store"), each printed beside its target:

- commit -> tailer latency: a writer process appends messages at a steady pace; this process
  tails with store.tail.StoreTailer (watchfiles on .metis/, PRAGMA data_version) and notes when
  each message arrives. Both sides read CLOCK_MONOTONIC, which Linux shares across processes;
- the cost of one update (one appended message, then one tailer look) on a 100,000-message
  session against a 1,000-message one: the ratio is what says O(new rows), not O(history);
- the time to open a 100,000-message session: SessionStore.open + snapshot (what the app loads),
  and SessionStore.open + manager() (what metis dev resumes with: validation and the token ledger).

    python tests/perf/bench_store.py            # full: 600 messages tailed, 100,000-message store
    python tests/perf/bench_store.py --quick    # 150 messages, a 10,000-message store (seconds)

Stores are built in a temporary folder; the big one is filled in one transaction through the
store's own insert (engine.store.sql), since appending 100,000 messages one commit at a time
measures nothing this benchmark is about.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from _util import table

from engine import CompactionConfig, Message
from engine.store import SessionStore
from engine.store.sql import insert_message, refresh_floor
from engine.store.tail import StoreTailer
from engine.tokens import estimate_message_tokens
from metis_compaction_tui.demo.workload import scripted_session

SID = "bench"
CONFIG = CompactionConfig(compaction_model="local:extractive")
TARGETS = {"median": 0.050, "p99": 0.250, "ratio": 2.0, "snapshot": 1.0, "open": 0.3}


def messages(count: int, tag: str) -> list[Message]:
    """`count` valid messages: the §10 script's turns tiled, ids made unique. Cut at a turn end
    so every prefix the writer commits validates."""
    base = [m for turn in scripted_session(0, 60) for m in turn]
    out: list[Message] = []
    copy = 0
    while len(out) < count:
        out += [msgspec.structs.replace(m, id=f"{tag}{copy}-{m.id}") for m in base]
        copy += 1
    while out[count - 1].tool_use_ids() or out[count - 1].role.value != "assistant":
        count += 1
    return out[:count]


def build_store(workspace: Path, count: int) -> SessionStore:
    store = SessionStore.open(workspace, create=True)
    store.create_session(SID, config=CONFIG)
    batch = messages(count, "b")
    now = time.time_ns() // 1_000_000
    total = 0
    with store._write() as conn:  # one transaction: the bench measures reads, not bulk writes
        for position, message in enumerate(batch):
            tokens = estimate_message_tokens(message)
            total += tokens
            insert_message(conn, SID, position, message, tokens, None, now)
        conn.execute(
            "UPDATE sessions SET message_count = ?, total_tokens = ? WHERE session_id = ?",
            (len(batch), total, SID),
        )
        refresh_floor(conn, SID)
    return store


# -- commit -> tailer latency ----------------------------------------------------------------


def writer_role(workspace: Path, count: int, pace: float) -> None:
    """The child process: append at `pace` messages/s, printing each commit's monotonic time."""
    store = SessionStore.open(workspace)
    start = store.session_info(SID).message_count
    interval = 1 / pace
    due = time.monotonic()
    for message in messages(count, "w")[:count]:
        due += interval
        time.sleep(max(0.0, due - time.monotonic()))
        store.append_message(SID, message, estimate_message_tokens(message))
        print(json.dumps([message.id, time.monotonic_ns()]), flush=True)
    assert store.session_info(SID).message_count == start + count
    store.close()


async def tail_latency(count: int, pace: float, use_watchfiles: bool) -> list[float]:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        build_store(workspace, 10).close()
        tailer = StoreTailer(workspace, poll_interval_s=0.5, use_watchfiles=use_watchfiles)
        seen: dict[str, int] = {}

        async def follow() -> None:
            async for batch in tailer.updates():
                now = time.monotonic_ns()
                for update in batch:
                    for stored in update.new_messages:
                        seen.setdefault(stored.message.id, now)
                if len(seen) >= count:
                    return

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.3)  # the watch is up before the first commit
        writer = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--writer", str(workspace), str(count), str(pace),
            stdout=subprocess.PIPE,
        )  # fmt: skip
        out, _ = await writer.communicate()
        await asyncio.wait_for(follower, timeout=30)
        await tailer.aclose()
        assert writer.returncode == 0
        commits = dict(json.loads(line) for line in out.decode().splitlines())
        assert set(commits) == set(seen), "a message was not seen"
        return sorted((seen[key] - commits[key]) / 1e9 for key in commits)


def percentile(values: list[float], fraction: float) -> float:
    return values[min(len(values) - 1, round(fraction * (len(values) - 1)))]


# -- one update, small against large -------------------------------------------------------


def update_cost(count: int, repeats: int) -> tuple[float, float]:
    """Median seconds of (append one message) and of (one tailer look that finds it)."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        build_store(workspace, count).close()
        writer = SessionStore.open(workspace)
        tailer = StoreTailer(workspace)
        extra = messages(repeats * 2 + 2, "u")
        appends: list[float] = []
        looks: list[float] = []
        for message in extra[: repeats * 2]:
            started = time.perf_counter()
            writer.append_message(SID, message, 1)
            appended = time.perf_counter()
            updates = tailer.read_now()
            looked = time.perf_counter()
            assert [m.message.id for u in updates for m in u.new_messages] == [message.id]
            appends.append(appended - started)
            looks.append(looked - appended)
        writer.close()
        return statistics.median(appends), statistics.median(looks)


# -- open ------------------------------------------------------------------------------------


def open_times(count: int, repeats: int) -> tuple[float, float, float]:
    """Best of `repeats` for each step. Each starts on a heap holding nothing of the last one, as
    a process resuming the session does: a 100,000-message snapshot left alive would be walked by
    the cyclic GC's full passes that the next step's allocations set off."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        build_store(workspace, count).close()
        snapshots, managers, verifies = [], [], []
        for _ in range(repeats):
            gc.collect()
            started = time.perf_counter()
            with SessionStore.open(workspace) as store:
                snapshot = store.snapshot(SID)
            snapshots.append(time.perf_counter() - started)
            assert len(snapshot.messages) >= count
            del snapshot
            gc.collect()
            started = time.perf_counter()
            store = SessionStore.open(workspace)
            manager = store.manager(SID, cache=None)
            managers.append(time.perf_counter() - started)
            assert len(manager.messages) >= count
            store.close()  # the manager reads its bodies through the open store
            del manager, store
            gc.collect()
            # what CLI compact and undo pay before they write
            started = time.perf_counter()
            with SessionStore.open(workspace) as store:
                store.verify(SID)
            verifies.append(time.perf_counter() - started)
        return min(snapshots), min(managers), min(verifies)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(value: float, target: float) -> str:
    return "yes" if value < target else "NO"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter timings")
    parser.add_argument(
        "--writer", nargs=3, metavar=("WORKSPACE", "COUNT", "PACE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.writer:
        writer_role(Path(args.writer[0]), int(args.writer[1]), float(args.writer[2]))
        return 0
    quick = args.quick
    tailed, pace = (150, 300.0) if quick else (600, 200.0)
    small, large = (1_000, 10_000) if quick else (1_000, 100_000)
    repeats = 50 if quick else 200

    latencies = asyncio.run(tail_latency(tailed, pace, use_watchfiles=True))
    median, p99 = statistics.median(latencies), percentile(latencies, 0.99)
    small_append, small_look = update_cost(small, repeats)
    large_append, large_look = update_cost(large, repeats)
    ratio = large_look / small_look
    open_snapshot, open_manager, open_verify = open_times(large, 2 if quick else 3)

    print("## Session store: live tailing, update cost, open time\n")
    print(
        f"{'--quick' if quick else 'full'} run on {platform.python_implementation()} "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}, {platform.system()}. "
        f"Latency: {tailed} messages written by another process at {pace:g}/s, tailed with "
        "watchfiles + PRAGMA data_version. Update cost: median of "
        f"{repeats * 2} (append one message, one tailer look).\n"
    )
    rows = [
        ["commit -> tailer sees it, median", ms(median), "< 50 ms", verdict(median, 0.050)],
        ["commit -> tailer sees it, p99", ms(p99), "< 250 ms", verdict(p99, 0.250)],
        [f"one tailer look, {small:,} messages", ms(small_look), "", ""],
        [f"one tailer look, {large:,} messages", ms(large_look), "", ""],
        [f"update cost ratio {large:,} / {small:,}", f"{ratio:.2f}", "< 2", verdict(ratio, 2)],
        [
            f"append one message, {large:,} vs {small:,}",
            f"{ms(large_append)} vs {ms(small_append)}",
            "",
            "",
        ],
        [
            f"open + snapshot, {large:,} messages",
            ms(open_snapshot),
            f"< {TARGETS['snapshot']:g} s",
            verdict(open_snapshot, TARGETS["snapshot"]),
        ],
        [
            f"open + manager(), {large:,} messages",
            ms(open_manager),
            f"< {TARGETS['open']:g} s",
            verdict(open_manager, TARGETS["open"]),
        ],
        [
            f"open + verify (before CLI compact/undo), {large:,} messages",
            f"{ms(open_verify)} ({open_verify / open_snapshot:.1f}x open + snapshot)",
            "",
            "",
        ],
    ]
    print(table(["measure", "measured", "target", "met"], rows))
    if quick:
        print("\n(--quick: the 100,000-message figures need a full run.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
