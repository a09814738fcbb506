"""The CLI's typed catch: BadRow, NothingToCompact and StoreError raised anywhere under
a command end in one clear line (table/column/row and what to do) and the code the README's
table gives, never a traceback. Raised from the store's first read, as a hostile row would."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import NothingToCompact
from engine.row_check import BadRow
from engine.store import SessionStore, StoreError
from metis_compaction_tui.cli import main
from tests.hostile.test_read_back import SESSION, grown_store

ERRORS = {
    "bad_row": (BadRow("sessions", "revision", "s", "text '3rd', not an integer"), 2,
                "sessions.revision of row 's'"),
    "nothing": (NothingToCompact("no complete tool cycle"), 1, "nothing to compact"),
    "store": (StoreError("x.sqlite is locked by another process: try again"), 2, "locked"),
}  # fmt: skip


@pytest.mark.parametrize("kind", ERRORS)
@pytest.mark.parametrize("command", ["status", "compact", "undo"])
def test_typed_errors_are_one_line_and_the_right_code(
    tmp_path: Path, capsys, monkeypatch, kind: str, command: str
) -> None:
    grown_store(tmp_path).close()
    error, code, text = ERRORS[kind]

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(SessionStore, "session_info", fail)
    monkeypatch.setattr(SessionStore, "list_sessions", fail)
    monkeypatch.setattr(SessionStore, "readable_sessions", fail)  # status's first read
    argv = [command, str(tmp_path)] if command == "status" else [command, SESSION, str(tmp_path)]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
