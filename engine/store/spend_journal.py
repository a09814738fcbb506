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
from engine.safe_files import FileRefused, check_within, read_regular

_SUFFIX = ".json"
ENTRY_MAX_BYTES = 4096  # an entry is a session id and an amount: ~100 bytes


class SpendEntry(msgspec.Struct, frozen=True):
    session_id: str
    usd: str  # decimal text, as sessions.spent_usd


_decoder = msgspec.json.Decoder(SpendEntry)


def write_entry(folder: Path, session_id: str, usd: Decimal) -> Path:
    """One entry, whole or not at all (written aside, then renamed into place)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    check_within(folder / "entry", folder.parent.parent)  # FileRefused: a link out of it
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
    (claimed, original) pairs for `finish` / `release`. An unreadable entry is left where it is;
    on any failure every entry claimed here is put back before the error goes on."""
    if not folder.is_dir() or _outside(folder):
        return []  # a journal folder that links out of the workspace is not ours to rename in
    claimed: list[tuple[Path, Path]] = []
    try:
        for path in sorted(folder.glob(f"*{_SUFFIX}")):
            pair = _claim_one(conn, path)
            if pair is not None:
                claimed.append(pair)
    except BaseException:
        release(claimed)
        raise
    return claimed


def _claim_one(conn: sqlite3.Connection, path: Path) -> tuple[Path, Path] | None:
    """Claim one entry and fold it in; None (the entry back in place) when it cannot be."""
    held = path.with_name(f"{path.name}.claimed-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(
            path, held
        )  # atomic: exactly one writer gets it (a link is renamed, not followed)
    except OSError:
        return None
    try:
        try:
            # engine.safe_files: a regular file only (a link, a FIFO or /dev/zero is left as
            # it is), and at most ENTRY_MAX_BYTES read.
            raw = read_regular(held, ENTRY_MAX_BYTES, what="a spend entry")
            entry = _decoder.decode(raw)
            sid = text_col("unrecorded-spend", "session_id", path.name, entry.session_id)
            usd = usd_col("unrecorded-spend", "usd", path.name, entry.usd)
        except (OSError, msgspec.MsgspecError, BadRow):
            release([(held, path)])
            return None
        row = conn.execute("SELECT spent_usd FROM sessions WHERE session_id = ?", (sid,)).fetchone()
        try:
            total = usd_col("sessions", "spent_usd", sid, row[0]) + usd if row else None
        except BadRow:
            total = None
        if total is None:  # no such session (yet), or a spend column to restore first
            release([(held, path)])
            return None
        conn.execute("UPDATE sessions SET spent_usd = ? WHERE session_id = ?", (str(total), sid))
    except BaseException:
        release([(held, path)])  # never left renamed aside
        raise
    return held, path


def _outside(folder: Path) -> bool:
    try:
        check_within(folder / "entry", folder.parent.parent)
    except FileRefused:
        return True
    return False


def finish(claimed: list[tuple[Path, Path]]) -> None:
    for held, _ in claimed:
        with contextlib.suppress(OSError):
            held.unlink()


def release(claimed: list[tuple[Path, Path]]) -> None:
    for held, path in claimed:
        with contextlib.suppress(OSError):
            os.rename(held, path)
