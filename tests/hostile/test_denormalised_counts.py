"""A wrong denormalised column (sessions.message_count, total_tokens) was
taken as it was: the next append went past a gap, every total stayed wrong. Now each write
checks it against the rows and repairs it, and `status` reports it and shows the rows' counts.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.layout import store_path
from engine.store import SessionStore
from metis_compaction_tui.cli import main
from tests.engine.store.test_store_processes import check_consistent
from tests.history_builders import assistant, user
from tests.hostile.test_read_back import SESSION, edit, grown_store


def test_a_wrong_message_count_leaves_no_gap(tmp_path: Path) -> None:
    grown_store(tmp_path).close()
    edit(store_path(tmp_path), "UPDATE sessions SET message_count = message_count + 5")
    with SessionStore.open(tmp_path) as store:
        manager = store.manager(SESSION, cache=None)
        manager.append(user("late-u", "one more question"))
        manager.append(assistant("late-a", "one more answer"))
        check_consistent(store)  # positions 0..n-1 and the counts agree with the rows
        assert store.active_messages(SESSION)[-1].message.id == "late-a"


def test_a_wrong_token_total_is_reported_then_repaired(tmp_path: Path, capsys) -> None:
    grown_store(tmp_path).close()
    with SessionStore.open(tmp_path) as store:
        real = store.session_info(SESSION).total_tokens
    edit(store_path(tmp_path), "UPDATE sessions SET total_tokens = 7")
    capsys.readouterr()
    assert main(["status", "--json", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["sessions"][0]["total_tokens"] == real
    assert "total_tokens" in captured.err
    assert main(["compact", SESSION, str(tmp_path)]) == 0
    with SessionStore.open(tmp_path) as store:
        check_consistent(store)
