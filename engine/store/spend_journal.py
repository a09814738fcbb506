"""Spend the store could not take yet: a paid summary finished while another
process held the write lock past the busy timeout. The cost goes to a small file beside the store,
`.metis/unrecorded-spend/<uuid>.json`, and the next write transaction of any process folds it into
`sessions.spent_usd`: billed once, never forgotten.

A file is claimed by an atomic rename before its transaction and deleted after the COMMIT, so two
writers never both fold it; a failed transaction renames it back. A process killed between COMMIT
and unlink folds it again on a later write: it errs toward over-counting spend, never under.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from decimal import Decimal
from pathlib import Path

import msgspec

from engine.row_check import BadRow, text_col, usd_col

_SUFFIX = ".json"


class SpendEntry(msgspec.Struct, frozen=True):
    session_id: str
    usd: str  # decimal text, as sessions.spent_usd


_decoder = msgspec.json.Decoder(SpendEntry)


def write_entry(folder: Path, session_id: str, usd: Decimal) -> Path:
    """One entry, whole or not at all (written aside, then renamed into place)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    name = uuid.uuid4().hex
    tmp = folder / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(msgspec.json.encode(SpendEntry(session_id, str(usd))))
        out.flush()
        os.fsync(out.fileno())
    path = folder / f"{name}{_SUFFIX}"
    os.replace(tmp, path)
    return path


def claim_into(conn: sqlite3.Connection, folder: Path) -> list[tuple[Path, Path]]:
    """Inside a write transaction: claim every entry and add it to its session's spend. Returns
    (claimed, original) pairs for `finish` / `release`. An unreadable entry is left where it is."""
    if not folder.is_dir():
        return []
    claimed: list[tuple[Path, Path]] = []
    for path in sorted(folder.glob(f"*{_SUFFIX}")):
        held = path.with_name(f"{path.name}.claimed-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(path, held)  # atomic: exactly one writer gets it
        except OSError:
            continue
        try:
            entry = _decoder.decode(held.read_bytes()[:4096])
            sid = text_col("unrecorded-spend", "session_id", path.name, entry.session_id)
            usd = usd_col("unrecorded-spend", "usd", path.name, entry.usd)
        except (OSError, msgspec.MsgspecError, BadRow):
            os.rename(held, path)
            continue
        row = conn.execute("SELECT spent_usd FROM sessions WHERE session_id = ?", (sid,)).fetchone()
        try:
            total = usd_col("sessions", "spent_usd", sid, row[0]) + usd if row else None
        except BadRow:
            total = None
        if total is None:  # no such session (yet), or a spend column to restore first
            os.rename(held, path)
            continue
        conn.execute("UPDATE sessions SET spent_usd = ? WHERE session_id = ?", (str(total), sid))
        claimed.append((held, path))
    return claimed


def finish(claimed: list[tuple[Path, Path]]) -> None:
    for held, _ in claimed:
        with contextlib.suppress(OSError):
            held.unlink()


def release(claimed: list[tuple[Path, Path]]) -> None:
    for held, path in claimed:
        with contextlib.suppress(OSError):
            os.rename(held, path)
