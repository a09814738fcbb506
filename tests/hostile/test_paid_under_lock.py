"""The store stays write-locked (another connection holds BEGIN IMMEDIATE)
past the busy timeout while a paid compaction finishes. Before: the summary was thrown away and
its cost never recorded, so the budget undercounted and the retry paid again. Now the summary is
in the cache before the spend is written, a spend the store cannot take yet goes to a journal
beside it (.metis/unrecorded-spend/), and the next write folds it in: paid once, counted once.
"""

from __future__ import annotations

import asyncio
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from engine.layout import spend_journal_dir, store_path
from engine.store import SessionStore, StoreError
from tests.engine.store.test_store_processes import make_store
from tests.history_builders import RecordingSummarizer

SESSION = "s"
COST = Decimal("0.0123")


def _short_timeout(store: SessionStore) -> SessionStore:
    store._conn.execute("PRAGMA busy_timeout = 50")  # the lock outlives it at once
    return store


def test_a_paid_summary_survives_a_locked_store_and_is_billed_once(tmp_path: Path) -> None:
    make_store(tmp_path, turns=30).close()
    paid = RecordingSummarizer(cost=COST)
    locker = sqlite3.connect(store_path(tmp_path), isolation_level=None)
    with _short_timeout(SessionStore.open(tmp_path)) as store:
        manager = store.manager(SESSION, summarizer=paid)
        locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock throughout

        async def compact() -> None:
            manager.commit(await manager.prepare())

        with pytest.raises(StoreError, match="locked"):
            asyncio.run(compact())
        locker.execute("ROLLBACK")
        assert len(paid.requests) == 1
        assert store.session_info(SESSION).spent_usd == 0  # not written yet: the lock held

    # The retry (a new process: a fresh store and manager) hits the cache and pays nothing;
    # its commit folds the journaled spend in.
    again = RecordingSummarizer(cost=COST)
    with SessionStore.open(tmp_path) as store:
        manager = store.manager(SESSION, summarizer=again)
        outcome = asyncio.run(_commit(manager))
        assert outcome.record is not None and outcome.record.cache_hit
        assert again.requests == []
        assert store.session_info(SESSION).spent_usd == COST
    assert not list(spend_journal_dir(tmp_path).glob("*"))
    with SessionStore.open(tmp_path) as store:  # folded once, not again on the next write
        store.update_config(SESSION, store.session_info(SESSION).config)
        assert store.session_info(SESSION).spent_usd == COST


async def _commit(manager):  # type: ignore[no-untyped-def]
    return manager.commit(await manager.prepare())


FOLDER = """
import sys
from pathlib import Path
from engine.store import SessionStore
with SessionStore.open(Path(sys.argv[1])) as store:
    for _ in range(150):
        store.update_config("s", store.session_info("s").config)  # any write folds the journal
"""


def test_two_processes_fold_each_journaled_spend_exactly_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    from engine.store.spend_journal import write_entry
    from tests.hostile.conftest import ROOT

    make_store(tmp_path).close()
    folder = spend_journal_dir(tmp_path)
    procs = [
        subprocess.Popen([sys.executable, "-c", FOLDER, str(tmp_path)], cwd=ROOT,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    for _ in range(40):  # journaled while both fold
        write_entry(folder, SESSION, Decimal("0.01"))
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with SessionStore.open(tmp_path) as store:
        store.update_config(SESSION, store.session_info(SESSION).config)  # folds any left
        assert store.session_info(SESSION).spent_usd == Decimal("0.40")
    assert list(folder.iterdir()) == []
