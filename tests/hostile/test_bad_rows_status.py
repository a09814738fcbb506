"""One bad row never makes the whole store unreadable: `status` (the real CLI, its own process)
on a store where one session records a spend of $5,000,000,000 and another a message body that
does not decode shows every other session, and names each bad row (table, id, what is wrong) on
stderr and in --json `bad_rows`. The bad session itself is refused by `compact`, in one line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from engine import CompactionConfig
from engine.layout import store_path
from engine.store import SessionStore
from metis_compaction_tui.demo.workload import scripted_session
from tests.cli_process import run_cli

GOOD = ("alpha", "omega")


def store_with_bad_rows(path: Path) -> Path:
    with SessionStore.open(path, create=True) as store:
        for sid in ("alpha", "spender", "garbled", "omega"):
            store.create_session(sid, config=CompactionConfig(compaction_model="local:extractive"))
            manager = store.manager(sid, cache=None)
            for turn in scripted_session(7, 3):
                for message in turn:
                    manager.append(message)
    conn = sqlite3.connect(store_path(path))
    with conn:
        conn.execute("UPDATE sessions SET spent_usd = '5000000000' WHERE session_id = 'spender'")
        conn.execute(
            "UPDATE messages SET body = X'c1c1c1' WHERE seq = "
            "(SELECT min(seq) FROM messages WHERE session_id = 'garbled')"
        )
    conn.close()
    return path


def test_status_shows_the_other_sessions_and_names_each_bad_row(tmp_path: Path) -> None:
    ws = store_with_bad_rows(tmp_path)
    done = run_cli("status", str(ws))
    assert done.returncode == 0, done.stderr
    shown = [line.split()[0] for line in done.stdout.splitlines() if line and line[0].isalpha()]
    assert [s for s in shown if s in (*GOOD, "spender", "garbled")] == list(GOOD)
    warnings = done.stderr.strip().splitlines()
    assert len(warnings) == 2, warnings
    [spend] = [w for w in warnings if "spender" in w]
    assert "sessions.spent_usd" in spend and "5000000000" in spend
    [garbled] = [w for w in warnings if "garbled" in w]
    assert "message seq" in garbled and "undecodable body" in garbled

    as_json = run_cli("status", str(ws), "--json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert [s["session_id"] for s in data["sessions"]] == list(GOOD)
    assert len(data["bad_rows"]) == 2
    assert any("spender" in row and "spent_usd" in row for row in data["bad_rows"])


def test_compact_on_the_bad_session_is_one_line_and_on_a_good_one_works(tmp_path: Path) -> None:
    ws = store_with_bad_rows(tmp_path)
    refused = run_cli("compact", "spender", "-w", str(ws))
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert "sessions.spent_usd of row 'spender'" in line
    preview = run_cli("compact", "alpha", "-w", str(ws), "--dry-run")
    assert preview.returncode in (0, 1), preview.stderr  # 1: nothing to compact yet
    assert "Traceback" not in preview.stderr
