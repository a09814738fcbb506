"""Files in a workspace are opened as what they claim to be: a regular file, read within a bound,
never a link followed out of the workspace.

A workspace can come from anyone (a cloned repository, an unpacked archive), so any of its files
may be a symbolic link to a file of the user's, a FIFO that blocks a reader forever, a device
that never ends (/dev/zero), or a folder. The rule, in one place:

- read: opened with O_NOFOLLOW | O_NONBLOCK (a link is refused, a FIFO does not block the open),
  then fstat-checked as a regular file, and read to at most `limit` bytes; a file in the user's
  own config folder may be a link (`follow_links`), and what it leads to is checked the same way;
- within: the folder holding the file resolves inside the workspace (a `.metis` that is a link to
  somewhere else is refused);
- SQLite files (a store or cache and its -wal, -shm, -journal) are written by SQLite itself, which
  follows links: each that exists must be a regular file with one name (no symbolic or hard
  link), checked before any connection opens.

Every refusal is a `FileRefused` whose message names the file and what it is.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class FileRefused(OSError):
    """A workspace file that is not a regular file of the workspace's own; the message names it."""

    def __init__(self, path: Path | str, what: str) -> None:
        super().__init__(f"{path}: {what}")
        self.path = Path(path)
        self.what = what

    def __str__(self) -> str:
        return self.args[0]


def kind_of(mode: int) -> str:
    """What a file is, in the words a refusal uses."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_within(path: Path, workspace: Path) -> None:
    """The folder holding `path` resolves inside `workspace` (links in between included)."""
    try:
        folder = path.parent.resolve()
        root = Path(workspace).resolve()
    except (OSError, RuntimeError) as error:  # a link loop
        raise FileRefused(path, f"its folder cannot be resolved ({error})") from None
    if folder != root and root not in folder.parents:
        raise FileRefused(path, f"its folder resolves to {folder}, outside the workspace {root}")


def open_regular(path: Path, *, workspace: Path | None = None, follow_links: bool = False) -> int:
    """A read-only descriptor of `path`, a regular file (FileNotFoundError when there is none).
    The caller closes it. `follow_links`: a link is followed, for a file in the user's own
    folder (dotfile managers make links there); what it leads to must still be a regular file."""
    if workspace is not None:
        check_within(path, workspace)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and not follow_links:  # O_NOFOLLOW met a link
            raise FileRefused(
                path, "is a symbolic link; it is read only as a regular file"
            ) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            linked = " a symbolic link to" if follow_links and os.path.islink(path) else ""
            raise FileRefused(path, f"is{linked} {kind_of(mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(
    path: Path,
    limit: int,
    *,
    workspace: Path | None = None,
    what: str = "a file here",
    follow_links: bool = False,
) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them: a longer file is refused
    (FileRefused), never read whole. FileNotFoundError when there is none."""
    fd = open_regular(path, workspace=workspace, follow_links=follow_links)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise FileRefused(path, f"{size:,} bytes; {what} is at most {limit:,}: not read")
        chunks: list[bytes] = []
        got = 0
        while got <= limit:  # the size can grow under us: the bound is on what is read
            chunk = os.read(fd, min(65536, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise FileRefused(path, f"more than {limit:,} bytes; {what} is at most {limit:,}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def sqlite_files_problem(database: Path, *, workspace: Path | None = None) -> str | None:
    """Why the SQLite file `database` (or one of its side files) must not be opened, in words
    that follow its name ("is a symbolic link; ..."), or None. A missing file is fine: SQLite
    creates it, and the cache's `prepare_file` creates it with O_NOFOLLOW."""
    try:
        if workspace is not None:
            check_within(database, workspace)
        for path in (database, *(Path(f"{database}{side}") for side in SQLITE_SIDE_FILES)):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                what = "is a symbolic link; SQLite would write through it: not opened"
            elif not stat.S_ISREG(st.st_mode):
                what = f"is {kind_of(st.st_mode)}, not a regular file: not opened"
            elif st.st_nlink > 1:
                what = (
                    f"has {st.st_nlink} hard links (another name may be outside the workspace); "
                    "SQLite would write through it: not opened"
                )
            else:
                continue
            return what if path == database else f"has a side file {path.name} that {what}"
    except FileRefused as refused:
        return refused.what
    except OSError as error:
        return f"cannot be checked: {error.strerror or error}"
    return None
