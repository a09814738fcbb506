"""WAL: over a long run the store's WAL never shrank (293 MB to 532 MB).
Now it is checkpointed and truncated after each compaction and undo and on close (when no
reader is in the way), and cut back to journal_size_limit each time it restarts. Here: a session
written with large tool outputs and compacted again and again, while a reader connection in
another thread polls with short reads (as the app does); the WAL's size after each compaction
is sampled. Sizes in bytes, not time."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from engine.layout import store_path
from engine.store import SessionStore
from tests.engine.store.test_store_processes import QUIET
from tests.history_builders import tool_session

SESSION = "s"
ROUNDS = 12


def test_the_wal_stays_bounded_over_a_long_run(tmp_path: Path) -> None:
    wal = Path(f"{store_path(tmp_path)}-wal")
    written = 0
    sizes: list[int] = []
    stop = threading.Event()
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SESSION, config=QUIET)
        manager = store.manager(SESSION, cache=None)

        def poll() -> None:
            with SessionStore.open(tmp_path) as reader:
                while not stop.is_set():
                    reader.session_info(SESSION)  # a short read transaction, as the app's
                    stop.wait(0.002)

        reader = threading.Thread(target=poll)
        reader.start()
        try:
            for round_ in range(ROUNDS):
                for message in tool_session(20, size=12_000, prefix=f"r{round_}-"):
                    manager.append(message)
                    written += 12_000
                asyncio.run(_compact(manager))
                sizes.append(wal.stat().st_size if wal.exists() else 0)
        finally:
            stop.set()
            reader.join()
    print("wal sizes after each compaction:", sizes, "bytes written:", written)
    assert written > 5_000_000
    # Truncated after (nearly) every compaction: a reader may be in the way now and then.
    assert max(sizes) < 9 * 1024 * 1024, sizes
    assert sorted(sizes)[len(sizes) // 2] < 1024 * 1024, sizes
    assert not wal.exists() or wal.stat().st_size == 0  # and on close


async def _compact(manager) -> None:  # type: ignore[no-untyped-def]
    manager.commit(await manager.prepare())
