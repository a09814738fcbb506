"""CLI `compact` racing a writer process and a "compact now" loop in two
other real processes. Before the ValueError catch it ended in a traceback in 19 of 91 runs (a
rival compacted between the preview and the prepare). Each run must end in 0 (compacted) or 1
(nothing done, with the reason), never a traceback, and the store must stay consistent.
"""

from __future__ import annotations

import time
from pathlib import Path

from engine.manager import SessionManager
from engine.store import SessionStore
from metis_compaction_tui.cli import main
from tests.engine.store.test_store_processes import check_consistent, make_store
from tests.engine.store.test_store_processes import spawn as spawn_store_worker
from tests.hostile.conftest import spawn, trials

SESSION = "s"
RUNS = trials(12, 200)


def paced_writer(workspace: Path):  # type: ignore[no-untyped-def]
    """metis dev at a human pace (turn by turn, before_turn each time): so the compactor often
    takes every span between the CLI's preview and its prepare."""
    return spawn_store_worker("writer", workspace, SESSION, 400, 40, 3)


def test_cli_compact_racing_a_writer_and_a_compactor_never_tracebacks(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    preview = SessionManager.preview

    def slow_preview(self, instructions=None):  # type: ignore[no-untyped-def]
        # A slow machine: the rival gets time to compact between the preview and the prepare
        # (the window of the original ValueError), so the race happens in a few runs.
        try:
            return preview(self, instructions)
        finally:
            time.sleep(0.03)

    monkeypatch.setattr(SessionManager, "preview", slow_preview)
    make_store(tmp_path, turns=20).close()
    rivals = [
        paced_writer(tmp_path),
        spawn("compactor", tmp_path, SESSION, 4, tmp_path / "compacted"),
    ]
    codes: list[int] = []
    try:
        for _ in range(RUNS):
            # In this process (an uncaught exception fails the test); the rivals are real ones.
            code = main(["compact", SESSION, str(tmp_path)])
            err = capsys.readouterr().err
            assert code in (0, 1), err
            if code == 1:
                assert err.strip(), "exit 1 must say why"
            codes.append(code)
    finally:
        for proc in rivals:
            proc.kill()
            proc.communicate()
    with SessionStore.open(tmp_path) as store:
        check_consistent(store)
    # At least one run lost to a rival and said so (exit 1 with a reason): not proof of the exact
    # interleaving, which the 30 ms preview only makes likely.
    assert len(codes) == RUNS and 1 in codes
