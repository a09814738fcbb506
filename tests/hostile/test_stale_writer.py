"""A long-running writer must not lose an undo made by another process.

The writer (a SessionManager that has been running, as metis dev's is) prepares a compaction; a
second, real process (`metis-compaction-tui undo`) undoes the previous compaction meanwhile; the
writer then commits. A mask compaction keeps every position, so the span's ids still match: only
the revision tells the writer it planned on a stale history. Every write now checks it (compare-
and-set in the commit's transaction): the writer re-reads instead of writing over the undo.
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from engine.outcomes import SpanChanged
from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.cli_process import run_cli
from tests.engine.store.test_store_processes import QUIET

SESSION = "s"


def _undo_in_another_process(workspace: object) -> None:
    done = run_cli("undo", SESSION, str(workspace), timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("strategy", ["mask", "summarize"])
def test_a_stale_writer_rereads_instead_of_writing_over_an_undo(tmp_path, strategy) -> None:
    config = msgspec.structs.replace(QUIET, compaction_strategy=strategy)
    turns = list(scripted_session(3, 60))
    with SessionStore.open(tmp_path, create=True) as store:
        store.create_session(SESSION, config=config)
        manager = store.manager(SESSION, cache=None)
        for turn in turns[:30]:
            for message in turn:
                manager.append(message)

        async def scenario() -> None:
            manager.commit(await manager.prepare())  # revision 1
            for turn in turns[30:]:
                for message in turn:
                    manager.append(message)
            prepared = await manager.prepare()  # planned on revision 1
            _undo_in_another_process(tmp_path)  # revision 2, in another process
            with pytest.raises(SpanChanged):
                manager.commit(prepared)

        asyncio.run(scenario())
        stored = store.snapshot(SESSION)
        # The undo stands, and the writer has re-read it: its history is the store's.
        assert stored.revision == 2
        assert len(store.compactions(SESSION)) == 1
        assert manager.revision == stored.revision
        assert [m.id for m in manager.messages] == [m.id for m in stored.messages]
        # Re-planned on the fresh history, the next compaction commits on top of the undo.
        asyncio.run(_commit_again(manager))
        assert store.snapshot(SESSION).revision == 3
        assert [m.id for m in manager.messages] == [m.id for m in store.snapshot(SESSION).messages]


async def _commit_again(manager) -> None:
    manager.commit(await manager.prepare())
