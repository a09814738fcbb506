"""The session list's refresh: StoreSource.sessions() plans every session of the
workspace through SessionStore.plan -> plan_turn. Before, each plan decoded the session's whole
active history; now the plan reads the light columns (tokens, tool_use_ids, synthetic) and only
a strategy that reads tool output (mask, hybrid) decodes bodies.

Both paths are timed in one run on the same workspace and printed with their ratio:
- "full": read_snapshot (every body decoded) + History + plan_turn, the old SessionStore.plan;
- "light": SessionStore.plan as it is now; and the whole StoreSource.sessions() refresh;
once with the scripted workload's short tool results, once with each 4,000 characters longer
(real tool output is KBs: the full path grows with the bytes, the light one does not).
The two must give the same plan for every session (checked, or the script exits 1).

    python tests/perf/bench_session_list.py            # 20 sessions x 500 messages
    python tests/perf/bench_session_list.py --quick    # 5 sessions x 200 messages
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from _util import table

from engine import CompactionConfig, History, Message, ToolResultContentBlock, plan_turn
from engine.store import SessionStore
from engine.store import sql as store_sql
from metis_compaction_tui.demo.workload import scripted_session
from metis_compaction_tui.sources.store import StoreSource

CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=10_000_000,  # nothing compacts while the workspace is built
    compaction_hard_cap_tokens=20_000_000,
)


def padded(message: Message, pad: int) -> Message:
    """Each tool result `pad` characters longer: real tool output (files, logs) is KBs."""
    if not pad:
        return message
    content = tuple(
        msgspec.structs.replace(block, content=block.content + " log line" * (pad // 9))
        if isinstance(block, ToolResultContentBlock)
        else block
        for block in message.content
    )
    return msgspec.structs.replace(message, content=content)


def session_messages(seed: int, count: int, pad: int = 0) -> list[Message]:
    out: list[Message] = []
    turns = 40
    while len(out) < count:
        out = [m for turn in scripted_session(seed, turns) for m in turn]
        turns *= 2
    while out[count - 1].tool_use_ids() or out[count - 1].role.value != "assistant":
        count += 1
    return [padded(msgspec.structs.replace(m, id=f"{seed}-{m.id}"), pad) for m in out[:count]]


def build(workspace: Path, sessions: int, per_session: int, pad: int = 0) -> None:
    with SessionStore.open(workspace, create=True) as store:
        for number in range(sessions):
            sid = f"session-{number:02d}"
            store.create_session(sid, config=CONFIG, title=sid)
            manager = store.manager(sid, cache=None)
            for message in session_messages(number, per_session, pad):
                manager.append(message)


def full_plan(store: SessionStore, session_id: str) -> object:
    """The old SessionStore.plan: every body of the active history decoded."""
    with store._read() as conn:
        info = store._session(conn, session_id)
        snap = store_sql.read_snapshot(conn, info)
    history = History(snap.messages, stable_prefix_end=snap.stable_prefix_end, tokens=snap.tokens)
    return plan_turn(history, info.config, info.spent_usd)


def best_of(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def measure(sessions: int, per_session: int, pad: int, repeat: int) -> tuple[list, list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        build(workspace, sessions, per_session, pad)
        with SessionStore.open(workspace) as store:
            ids = [info.session_id for info in store.list_sessions()]
            drift = [sid for sid in ids if full_plan(store, sid) != store.plan(sid)]
            # Interleaved, best of each: a busy machine disturbs both alike.
            full_s, light_s = float("inf"), float("inf")
            for _ in range(repeat):
                full_s = min(full_s, best_of(lambda: [full_plan(store, s) for s in ids], 1))
                light_s = min(light_s, best_of(lambda: [store.plan(s) for s in ids], 1))
        source = StoreSource(workspace)
        source.open()
        try:
            refresh_s = best_of(source.sessions, repeat)
        finally:
            source.close()
    label = f"tool results +{pad:,} chars" if pad else "the scripted workload as is"
    row = [
        label,
        f"{full_s * 1e3:.1f}",
        f"{light_s * 1e3:.1f}",
        f"{refresh_s * 1e3:.1f}",
        f"{full_s / light_s:.1f}x",
    ]
    return row, drift


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sessions, per_session, repeat = (5, 200, 3) if args.quick else (20, 500, 5)
    rows, drift = [], []
    for pad in (0, 4_000):
        row, drifted = measure(sessions, per_session, pad, repeat)
        rows.append(row)
        drift += drifted
    print(f"{sessions} sessions x {per_session} messages, best of {repeat}, ms per refresh\n")
    headers = ["bodies", "full decode (before)", "light columns (now)", "list refresh", "ratio"]
    print(table(headers, rows))
    if drift:
        print(f"\nDRIFT: the light plan differs for {drift}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
