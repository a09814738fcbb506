"""Load: a writer appending 200 messages/s for N minutes while a tailer process (StoreTailer, the
app's reader) follows and a compactor runs every 30 s. Prints every message accounted for
(written vs seen by the tailer vs active+archived in the store) and the tailer's RSS over time.

    python tests/hostile/load.py [--minutes 10] [--rate 200] [--compact-every 30]
    python tests/hostile/load.py --quick      # 20 s, a compaction every 5 s (a CI smoke)

Exit status 0 only when every message is accounted for exactly once. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import (
    CompactionConfig,
    Message,
    Role,
    SpanChanged,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.store import SessionStore
from engine.tail import StoreTailer

SESSION = "load"
CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=10**12,
    compaction_hard_cap_tokens=2 * 10**12,
    compaction_preserve_recent_turns=5,
)


def rss_kb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def turn(number: int) -> list[Message]:
    call = f"call{number}"
    return [
        Message(f"u{number}", Role.USER, (TextContentBlock(f"step {number}: go on " * 4),)),
        Message(
            f"c{number}",
            Role.ASSISTANT,
            (TextContentBlock("running"), ToolUseContentBlock(call, "bash", {"n": number})),
        ),
        Message(f"r{number}", Role.USER, (ToolResultContentBlock(call, f"output {number} " * 8),)),
        Message(f"a{number}", Role.ASSISTANT, (TextContentBlock(f"done {number}"),)),
    ]


def writer(workspace: Path, seconds: float, rate: float) -> None:
    store = SessionStore.open(workspace)
    manager = store.manager(SESSION, cache=None)
    written, number = 0, 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        manager.sync()
        for message in turn(number):
            manager.append(message)
            written += 1
            lag = start + written / rate - time.monotonic()
            if lag > 0:
                time.sleep(lag)
        number += 1
    store.close()
    print(json.dumps({"written": written}), flush=True)


async def tailer(workspace: Path, stop_file: Path) -> None:
    tail = StoreTailer(workspace, start="beginning", poll_interval_s=0.1)
    state = {"seen": 0, "last_seq": 0, "duplicates": 0}
    samples: list[tuple[float, int]] = []
    started = time.monotonic()

    async def follow() -> None:
        async for batch in tail.updates():
            for update in batch:
                for stored in update.new_messages:
                    if stored.seq <= state["last_seq"]:
                        state["duplicates"] += 1
                    state["last_seq"] = max(state["last_seq"], stored.seq)
                    state["seen"] += 1

    task = asyncio.create_task(follow())
    while True:  # sample RSS once a second until the writer is done and everything is seen
        samples.append((round(time.monotonic() - started, 1), rss_kb()))
        if stop_file.exists() and state["seen"] >= int(stop_file.read_text() or 0):
            break
        if task.done():
            task.result()
            break
        await asyncio.sleep(1.0)
    await tail.aclose()
    task.cancel()
    print(json.dumps({**state, "rss": samples}), flush=True)


async def compactor(workspace: Path, seconds: float, every: float) -> int:
    store = SessionStore.open(workspace)
    done, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        await asyncio.sleep(min(every, max(0.0, seconds - (time.monotonic() - start))))
        manager = store.manager(SESSION, cache=None)
        try:
            manager.commit(await manager.prepare())
            done += 1
        except (ValueError, SpanChanged):
            pass
    store.close()
    return done


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second")
    parser.add_argument("--compact-every", type=float, default=30.0, help="seconds")
    parser.add_argument("--quick", action="store_true", help="20 s, compacting every 5 s")
    parser.add_argument("--role", choices=["writer", "tailer"], help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stop-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    seconds = 20.0 if args.quick else args.minutes * 60
    every = 5.0 if args.quick else args.compact_every
    if args.role == "writer":
        writer(args.workspace, seconds, args.rate)
        return 0
    if args.role == "tailer":
        asyncio.run(tailer(args.workspace, args.stop_file))
        return 0

    workspace = Path(tempfile.mkdtemp(prefix="metis-load-"))
    with SessionStore.open(workspace, create=True) as store:
        store.create_session(SESSION, config=CONFIG)
    stop = workspace / "stop"
    common = ["--workspace", str(workspace), "--minutes", str(seconds / 60)]
    tail_proc = spawn("--role", "tailer", *common, "--stop-file", str(stop))
    write_proc = spawn("--role", "writer", *common, "--rate", str(args.rate))
    print(
        f"load: {args.rate:g} msg/s for {seconds:g} s, compacting every {every:g} s, in "
        f"{workspace}",
        flush=True,
    )
    compactions = asyncio.run(compactor(workspace, seconds, every))
    write_out, _ = write_proc.communicate(timeout=120)
    written = json.loads(write_out.splitlines()[-1])["written"]
    stop.write_text(str(written))
    tail_out, _ = tail_proc.communicate(timeout=300)
    tail = json.loads(tail_out.splitlines()[-1])

    with SessionStore.open(workspace) as store:
        active = [m for m in store.active_messages(SESSION) if m.introduced_by is None]
        archived = sum(
            len(store.archived_messages(c.compaction_id))
            for c in store.compactions(SESSION)
            if not c.undone
        )
        originals = store.messages_after(SESSION, 0, limit=10**9)
        ids = [m.message.id for m in originals]
    rss = [kb for _, kb in tail["rss"]]
    warm = rss[min(len(rss) - 1, max(1, len(rss) // 10)) :]  # after the first tenth
    report = {
        "written": written,
        "tailer_seen": tail["seen"],
        "tailer_duplicates": tail["duplicates"],
        "store_active_originals": len(active),
        "store_archived": archived,
        "store_originals_unique": len(set(ids)),
        "compactions": compactions,
        "tailer_rss_kb": {
            "first": rss[0],
            "after_warmup": warm[0],
            "last": rss[-1],
            "max": max(rss),
            "samples": len(rss),
        },
    }
    print(json.dumps(report, indent=2))
    ok = (
        written == tail["seen"] == len(active) + archived == len(ids) == len(set(ids))
        and tail["duplicates"] == 0
        and compactions > 0
    )
    print("every message accounted for" if ok else "MISMATCH: messages lost or duplicated")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
