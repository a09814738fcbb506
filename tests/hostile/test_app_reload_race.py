"""A writer appends while the app reloads after a compaction (found by the 10-minute load run:
the app's screen stopped 4 turns short of the store, for good).

The app re-reads a compacted session with `StoreSource.load`, and drops every polled message
with seq <= the `last_seq` that load returned as already seen. It read the snapshot, then the
whole message log (whose last seq it kept) in separate read transactions, so a message appended
between the two was in neither the snapshot nor any later update. Here the write lands right
after the app's feed thread reads the active history, from the writer's own connection, so the
outcome does not depend on timing; it must reach the screen by the next poll.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine import SessionSnapshot
from engine.store import SessionStore
from engine.store import sql as store_sql
from tests.app.app_helpers import SIZE, loaded, make_app, wait_until
from tests.hostile.load import CONFIG, SESSION, turn


async def test_a_message_appended_while_the_app_reloads_a_compaction_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SESSION, config=CONFIG)
        manager = store.manager(SESSION, cache=None)
        for number in range(20):
            for message in turn(number):
                manager.append(message)

    real_snapshot = store_sql.read_snapshot
    armed, written = threading.Event(), threading.Event()

    def snapshot_then_a_write(*args: Any, **kwargs: Any) -> SessionSnapshot:
        snapshot = real_snapshot(*args, **kwargs)
        if armed.is_set() and threading.current_thread() is not threading.main_thread():
            armed.clear()  # once, in the app's feed thread, right after its snapshot read
            with SessionStore.open(tmp_path) as writer:
                writing = writer.manager(SESSION, cache=None)
                for message in turn(20):
                    writing.append(message)
            written.set()
        return snapshot

    monkeypatch.setattr(store_sql, "read_snapshot", snapshot_then_a_write)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot, app)
        assert app.data is not None and app.data.message_count == 80
        with SessionStore.open(tmp_path) as store:
            manager = store.manager(SESSION, cache=None)
            armed.set()  # the app's reload after this compaction meets the write
            manager.commit(await manager.prepare())
        await wait_until(pilot, written.is_set, what="the write during the reload")
        with SessionStore.open(tmp_path) as store:
            expected = store.session_info(SESSION).message_count
        deadline = time.monotonic() + 3.0  # the app polls every 0.05 s here
        while time.monotonic() < deadline and (
            app.data is None or app.data.revision != 1 or app.data.message_count != expected
        ):
            await pilot.pause(0.05)
        assert app.data is not None and app.data.revision == 1
        shown = app.data.history.messages
        assert (len(shown), shown[-1].id) == (expected, "a20"), (
            f"the store holds {expected} messages ending in a20; the app shows {len(shown)} "
            f"ending in {shown[-1].id} (last_seq {app.data.last_seq})"
        )
