"""Where the status line keeps what it learnt about a transcript between calls, and the check that
the transcript is still the file it learnt it from.

Two files per transcript, named by a hash of its path, in the user's state directory (never beside
the transcript): `<key>.line.json`, the few figures the line shows (read on every call with the
standard library), and `<key>.parse.msgpack`, where the refresher resumes parsing (read only by the
refresher, as typed msgspec structs). Both name the file they describe by path, device, inode and
its first bytes; a file truncated below what was read, or replaced, drops them.
"""

from __future__ import annotations

import os

from metis_compaction_tui.statusline.json_object import read_object

STATE_VERSION = 2  # 2: last_context
HEAD_BYTES = 64  # the fingerprint: a replaced file almost never starts with the same 64 bytes


def state_dir() -> str:
    """$METIS_STATUSLINE_STATE_DIR, else $XDG_STATE_HOME/metis-compaction-tui/statusline, else
    ~/.local/state/... (a cache: deleting it only costs one full read)."""
    explicit = os.environ.get("METIS_STATUSLINE_STATE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "metis-compaction-tui", "statusline")


def state_key(path: str) -> str:
    """A file name for `path` (the path itself is stored inside and compared, so a collision of
    this short key costs a re-read, never a wrong line)."""
    raw = os.path.abspath(path).encode("utf-8", "surrogateescape")
    # Two residues of the path's bytes read as one integer (no zlib or hashlib: each is a shared
    # library to load on every call). Stable across runs, unlike hash().
    number = int.from_bytes(raw, "little")
    return f"{number % _PRIME_61:016x}{number % _PRIME_64:016x}"


_PRIME_61 = (1 << 61) - 1
_PRIME_64 = (1 << 64) - 59


class FileIdentity:
    __slots__ = ("dev", "head", "ino", "size")

    def __init__(self, dev: int, ino: int, size: int, head: str) -> None:
        self.dev, self.ino, self.size, self.head = dev, ino, size, head


def identify(path: str) -> FileIdentity | None:
    """The transcript's identity now, or None when it cannot be read."""
    import stat as _stat

    try:
        # O_NONBLOCK: opening a FIFO with no writer (or a tty) must not hang the agent's UI;
        # only a regular file is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            return None
        head = os.read(fd, HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return FileIdentity(st.st_dev, st.st_ino, st.st_size, head.hex())


def still_same_file(saved: dict[str, object], now: FileIdentity) -> bool:
    """What `saved` describes is a prefix of the file now: same inode, not shorter, same start.
    (A file shorter than the fingerprint grows into it, so only the bytes saved are compared.)"""
    size, head = saved.get("size"), saved.get("head")
    if not isinstance(size, int) or not isinstance(head, str):
        return False
    return (
        saved.get("dev") == now.dev
        and saved.get("ino") == now.ino
        and now.size >= size
        and now.head.startswith(head)
    )


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_INT_FIELDS = (
    "dev",
    "ino",
    "size",
    "seen",
    "agent_compactions",
    "our_compactions",
    "pending",
    "threshold",
    "hard_cap",
    "cache_read",
    "cache_total",
    "messages",
)
_OPTIONAL_INT_FIELDS = ("last_before", "last_after", "soft_in", "last_context")
TRIGGERS = ("", "ok", "soft", "forced")  # what the refresher writes: anything else is not ours


def trigger_word(action: str) -> str:
    """The line's word for the engine's TriggerAction value (skip reads "ok" beside an agent)."""
    return "ok" if action == "skip" else action


_TEXT_FIELDS = ("path", "head", "format", "trigger", "explain")
_OPTIONAL_TEXT_FIELDS = ("compaction_usd", "last_trigger", "error")


def load_line_state(directory: str, path: str) -> dict[str, object] | None:
    """The saved figures for `path`, or None when absent, unreadable or not what we wrote (a
    corrupt or foreign file is ignored, and overwritten by the next refresh)."""
    data = read_object(os.path.join(directory, state_key(path) + ".line.json"))
    if data is None or data.get("version") != STATE_VERSION:
        return None
    if data.get("path") != os.path.abspath(path):
        return None
    if not all(_int(data.get(k)) for k in _INT_FIELDS):
        return None
    # We write every field (one not known as null): a file missing one is not ours.
    if not all(k in data and (data[k] is None or _int(data[k])) for k in _OPTIONAL_INT_FIELDS):
        return None
    if not all(isinstance(data.get(k), str) for k in _TEXT_FIELDS):
        return None
    if not all(
        k in data and (data[k] is None or isinstance(data[k], str)) for k in _OPTIONAL_TEXT_FIELDS
    ):
        return None
    if not isinstance(data.get("stale_usage"), bool):
        return None
    if data.get("trigger") not in TRIGGERS:
        return None
    return data


def write_atomic(target: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
    temp = f"{target}.{os.getpid()}.tmp"
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, target)


PRUNE_AFTER_S = 30 * 86400  # a transcript not refreshed for 30 days: its files go
PRUNE_EVERY_S = 86400  # the folder is looked over once a day at most
_PRUNED_MARKER = ".pruned"
# a transcript's files, and a metis workspace's (statusline.workspace)
_SUFFIXES = (".line.json", ".parse.msgpack", ".lock", ".ws.json", ".ws.json.lock")
_HEX = frozenset("0123456789abcdef")


def prune_states(directory: str, now: float | None = None) -> int:
    """Remove the state files of transcripts whose figures were last written PRUNE_AFTER_S ago
    (a state file is a cache: a transcript shown again is read once more). Run by the refresher,
    never by the line, and once a day at most (the marker's mtime): one stat otherwise. A
    transcript whose refresher holds its lock is kept. Returns how many transcripts went."""
    import fcntl
    import time

    now = time.time() if now is None else now
    marker = os.path.join(directory, _PRUNED_MARKER)
    try:
        if now - os.stat(marker).st_mtime < PRUNE_EVERY_S:
            return 0
    except FileNotFoundError:
        pass
    with open(marker, "ab"):
        pass
    os.utime(marker, (now, now))
    newest: dict[str, float] = {}
    with os.scandir(directory) as entries:
        for entry in entries:
            key, dot, rest = entry.name.partition(".")
            # Only names we write (keys of 16 hex digits were an earlier version's).
            if not dot or "." + rest not in _SUFFIXES or len(key) not in (16, 32):
                continue
            if not _HEX.issuperset(key) or not entry.is_file(follow_symlinks=False):
                continue
            mtime = entry.stat(follow_symlinks=False).st_mtime
            newest[key] = max(newest.get(key, mtime), mtime)
    removed = 0
    for key, mtime in newest.items():
        if now - mtime < PRUNE_AFTER_S:
            continue
        lock = os.path.join(directory, key + ".lock")
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            fd = -1
        try:
            if fd >= 0:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: a refresher reads it
            for suffix in _SUFFIXES:
                try:
                    os.unlink(os.path.join(directory, key + suffix))
                except FileNotFoundError:
                    pass
            removed += 1
        except OSError:
            continue
        finally:
            if fd >= 0:
                os.close(fd)
    return removed
