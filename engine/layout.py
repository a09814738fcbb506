"""The workspace layout: the one module that knows where things live under `<workspace>/.metis/`,
and in the user's own config folder (their config file, their trust records).

Everything else asks here, so a file can move (or a new one join, e.g. config.yaml) in one place.
Path arithmetic, plus a file's identity (to notice a file replaced under an open connection).
"""

from __future__ import annotations

import os
from pathlib import Path

METIS_DIR = ".metis"
STORE_FILE = "sessions.sqlite"  # the live session store shared with metis dev
CACHE_FILE = "compaction-cache.sqlite"  # the §5 summary cache
CONFIG_FILE = "config.yaml"  # the workspace's settings; the user's own have the same name
APP_DIR = "metis-compaction-tui"  # the user's config folder, under $XDG_CONFIG_HOME
SIMULATOR_LOG = "simulator.log"  # the demo's simulated metis dev writes here
SPEND_JOURNAL_DIR = "unrecorded-spend"  # paid spend a locked store could not take yet
APP_ERROR_LOG = "app-errors.log"  # tracebacks of the app's unexpected errors, never the screen

# The files a writer's commit changes (watched by the tail); never -shm, which readers touch too.
STORE_COMMIT_FILES = frozenset({STORE_FILE, f"{STORE_FILE}-wal"})


def metis_dir(workspace: Path | str) -> Path:
    return Path(workspace) / METIS_DIR


def store_path(workspace: Path | str) -> Path:
    return metis_dir(workspace) / STORE_FILE


def cache_path(workspace: Path | str) -> Path:
    return metis_dir(workspace) / CACHE_FILE


def config_path(workspace: Path | str) -> Path:
    return metis_dir(workspace) / CONFIG_FILE


def user_config_dir() -> Path:
    """$XDG_CONFIG_HOME/metis-compaction-tui (an absolute one), else ~/.config/... (XDG Base
    Directory spec). Read from the process's environment: it is the user's, never a setting."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / APP_DIR


def user_config_path() -> Path:
    """The user's own settings: the workspace file's schema, below it in precedence."""
    return user_config_dir() / CONFIG_FILE


def spend_journal_dir(workspace: Path | str) -> Path:
    return metis_dir(workspace) / SPEND_JOURNAL_DIR


def simulator_log_path(workspace: Path | str) -> Path:
    return metis_dir(workspace) / SIMULATOR_LOG


def app_error_log_path(workspace: Path | str) -> Path:
    return metis_dir(workspace) / APP_ERROR_LOG


def is_workspace(path: Path | str) -> bool:
    """A folder that already holds a `.metis/` (a store, a cache, or a config)."""
    return metis_dir(path).exists()


def file_identity(path: Path | str) -> tuple[int, int] | None:
    """(device, inode), or None when the file is missing: a replaced file has a new identity."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def is_store_commit_file(path: Path | str) -> bool:
    """Whether a changed file's name is one a store commit writes (the tail's watch filter)."""
    return Path(path).name in STORE_COMMIT_FILES
