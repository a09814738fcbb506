"""The cache file itself: creating it with private modes, deciding whether an existing file is
ours to open (never another program's database), describing what is wrong with one, and the
state both faces share (the file's identity when opened, degraded or not)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from engine.cache.rows import COLUMNS, TABLE, CacheStatus
from engine.layout import file_identity
from engine.safe_files import sqlite_files_problem


def warn(message: str, *args: object) -> None:
    """Logged to "engine.cache"; logging is imported only then (`cache list` never needs it)."""
    import logging

    logging.getLogger("engine.cache").warning(message, *args, stacklevel=2)  # the caller's line


_SIDE_FILES = ("-wal", "-shm", "-journal")


def prepare_file(path: Path) -> None:
    """Create missing folders (0o700) and a missing file (0o600), dropping stale side files."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)  # mkdir's mode is masked by the umask
    if not path.exists():
        for suffix in _SIDE_FILES:  # a -wal left from a deleted file must not replay into a new one
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
        os.chmod(path, 0o600)


def open_refusal(path: Path, exists: bool) -> str | None:
    """Why the cache file at `path` must not be opened: a link or not a regular file (one of its
    side files too, engine.safe_files), or, when it exists, another program's database."""
    return sqlite_files_problem(path) or (ownership_problem(path) if exists else None)


def ownership_problem(path: Path) -> str | None:
    """Whether an existing file may be opened as the cache, decided on a read-only connection
    before anything writes (another program's database was switched to WAL
    and given a compaction_cache table). Ours: no user_version or application_id set, and no
    table but a §5.2 compaction_cache. An empty file is a new cache."""
    try:
        if path.stat().st_size == 0:
            return None
    except OSError:
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        return describe(path, exc).removeprefix(f"compaction cache {path} ")
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        columns = tuple(r[1] for r in conn.execute(f"PRAGMA table_info({TABLE})"))
    except sqlite3.Error as exc:
        if is_transient(exc):
            return None  # busy: the open itself will wait or degrade
        return describe(path, exc).removeprefix(f"compaction cache {path} ")
    finally:
        conn.close()
    if tables == [TABLE] and columns != COLUMNS and not (version or app_id):
        return "has a compaction_cache table that is not the §5.2 schema: not touched"
    if version or app_id or set(tables) - {TABLE} or (tables and columns != COLUMNS):
        listed = ", ".join(tables[:5]) or "none"
        return (
            f"belongs to another program (user_version {version}, application_id {app_id}, "
            f"tables: {listed}): not touched"
        )
    return None


def describe(path: Path, what: str | BaseException) -> str:
    if isinstance(what, BaseException):
        reason = str(what)
        if "not a database" in reason:
            reason = "is not a SQLite database (garbage, or another kind of file)"
        elif "malformed" in reason:
            reason = "is corrupt or truncated (database disk image is malformed)"
        else:
            reason = f"cannot be used ({type(what).__name__}: {reason})"
        what = reason
    fix = "move it elsewhere" if "another program" in what else "fix or delete it"
    return f"compaction cache {path} {what}; compaction continues uncached ({fix})"


def is_transient(exc: BaseException) -> bool:
    """Another process holding the lock past busy_timeout: a miss now, not a broken file."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code in (5, 6)  # BUSY, LOCKED


class CacheFace:
    """What both faces share: the file, its identity when opened, and the degraded state."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._identity: tuple[int, int] | None = None
        self._problem: str | None = None
        self._closed = False

    @property
    def degraded(self) -> bool:
        return self._problem is not None

    @property
    def problem(self) -> str | None:
        return self._problem

    @property
    def status(self) -> CacheStatus:
        state = "closed" if self._closed else "degraded" if self._problem else "ok"
        return CacheStatus(state=state, path=str(self.path), problem=self._problem)

    def _file_changed(self) -> bool:
        # Deleted or replaced since the last open (the user fixed a broken file, or cleared the
        # cache by hand): open again. (dev, inode) only, so the other process's writes don't count.
        return file_identity(self.path) != self._identity

    def _set_problem(self, problem: str) -> None:
        warn("%s", problem)  # the path and SQLite's message only: never summary text
        self._problem = problem
