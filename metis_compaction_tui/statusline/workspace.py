"""The status line for a metis workspace: one indexed read of the session's row, and the figures
the refresher (statusline.workspace_refresh: the engine's store API and trigger rule) saved.

The line runs on every agent update, so this half imports the standard library and sqlite3 only
and reads O(1) rows whatever the session's length: the session's own counters (updated_at_ms,
revision, message_count, total_tokens, spent_usd) and its newest event id. While they are what
the saved figures were computed from, the saved figures are the line. When they moved on, the
line shows the saved figures with the row's own fresh context, and a detached refresher
brings the rest up to date for the next call (`--sync` waits for it instead), as the Claude Code
half does. A refresher is started at most once per twice its own last run time, so a session of
100,000 messages that grows on every turn keeps at most a third of a core busy.
"""

from __future__ import annotations

import os

from metis_compaction_tui.statusline.json_object import read_object
from metis_compaction_tui.statusline.render import FIELD_NAMES, clean

# engine.layout.store_path, written out: importing the engine (and pathlib) costs more than the
# rest of this call. tests/statusline/test_statusline.py checks the two agree.
STORE_PARTS = (".metis", "sessions.sqlite")
CONFIG_PARTS = (".metis", "config.yaml")
WS_STATE_VERSION = 1

_PROBE = (
    "SELECT session_id, updated_at_ms, revision, message_count, total_tokens, spent_usd, "
    "(SELECT MAX(event_id) FROM events e WHERE e.session_id = s.session_id) FROM sessions s"
)
# The session the line shows by default: the most recently updated, ties to the first listed
# (SessionStore.list_sessions' order), as workspace_refresh.choose_session picks it.
_LATEST = " ORDER BY updated_at_ms DESC, created_at_ms, session_id LIMIT 1"


def store_file(workspace: str) -> str:
    return os.path.join(os.path.abspath(workspace), *STORE_PARTS)


def state_file(directory: str, store: str, session_arg: str | None) -> str:
    from metis_compaction_tui.statusline.state import state_key

    # The same key rule as a transcript's; the store path and the session asked for, together.
    return os.path.join(directory, state_key(f"{store}\0{session_arg or ''}") + ".ws.json")


# The schema this reads (engine.store.schema.SCHEMA_VERSION; the test checks they agree). A store
# of another version, or a file that is not one, is left to the engine, which says what to do.
SCHEMA_VERSION = 2
UNREADABLE = "unreadable"


def probe(store: str, session_arg: str | None) -> list[object] | str | None:
    """The chosen session's counters (a list, JSON-comparable), None when there is no such
    session, a note when there is no store, or UNREADABLE (the engine is to say why)."""
    try:
        # The C module the sqlite3 package wraps: the package also imports datetime, for
        # converters this read never uses (a tenth of the line's own time).
        import _sqlite3 as sqlite3
    except ImportError:  # another interpreter
        import sqlite3  # type: ignore[no-redef]

    if not os.path.isfile(store):
        return f"no metis store ({clean(store, 60)} does not exist)"
    try:
        # mode=rw: never creates a file that went away meanwhile; a reader takes no write lock.
        conn = sqlite3.connect(f"file:{_uri_path(store)}?mode=rw", uri=True, timeout=1.0)
    except sqlite3.Error:
        return UNREADABLE
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return UNREADABLE
        if session_arg is None:
            row = conn.execute(_PROBE + _LATEST).fetchone()
        else:
            row = conn.execute(_PROBE + " WHERE session_id = ?", (session_arg,)).fetchone()
    except sqlite3.Error:
        return UNREADABLE
    finally:
        conn.close()
    if row is None:
        return None
    # The workspace file and the user's trust records: trusting or editing the config moves the
    # key, so the saved "untrusted config" note is read again (engine.workspace_trust).
    workspace = os.path.dirname(os.path.dirname(store))
    return [*row, _stamp(os.path.join(workspace, *CONFIG_PARTS)), _stamp(trust_dir())]


def trust_dir() -> str:
    """engine.workspace_trust's folder of trust records, written out (the engine costs more than
    this call); tests/statusline checks the two agree."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "metis-compaction-tui", "trusted-workspaces")


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_mtime_ns, st.st_size]


def _uri_path(path: str) -> str:
    """The path in a SQLite URI: "%", "?" and "#" escaped (urllib.parse would cost more)."""
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def load_saved(path: str, store: str, session_arg: str | None) -> dict[str, object] | None:
    """What the refresher saved for this store and session argument, or None (absent, corrupt,
    another store's, or not what the refresher writes)."""
    data = read_object(path)
    if data is None or data.get("version") != WS_STATE_VERSION:
        return None
    if data.get("store") != store or data.get("session_arg") != (session_arg or ""):
        return None
    fields, took = data.get("fields"), data.get("took_ms")
    if not isinstance(data.get("key"), list) or not isinstance(fields, dict):
        return None
    if not isinstance(took, int) or isinstance(took, bool) or took < 0:
        return None
    if not set(fields) <= set(FIELD_NAMES):
        return None
    if not all(v is None or isinstance(v, bool | int | str) for v in fields.values()):
        return None
    return data


def workspace_fields(
    workspace: str, session_arg: str | None, *, sync: bool = False
) -> tuple[dict[str, object], tuple[str, str, str | None] | None]:
    """The fields for the line, and (state directory, workspace, session argument) when a
    refresher is to start once the line is out. A missing store or session gives a line with a
    note, never an exception."""
    from metis_compaction_tui.statusline.state import state_dir

    f: dict[str, object] = dict.fromkeys(FIELD_NAMES)
    f["source"] = "metis"
    store = store_file(workspace)
    now = probe(store, session_arg)
    if now == UNREADABLE:  # rare: the engine's own words for what is wrong with the file
        from metis_compaction_tui.statusline.workspace_refresh import compute_fields

        return compute_fields(workspace, session_arg), None
    if isinstance(now, str):
        f["note"] = now
        return f, None
    if now is None:
        f["note"] = "no such session" if session_arg else "no sessions yet"
        return f, None
    directory = state_dir()
    path = state_file(directory, store, session_arg)
    saved = load_saved(path, store, session_arg)
    if saved is not None and saved["key"] == now:
        f.update(saved["fields"])  # type: ignore[arg-type]
        return f, None
    if sync:
        from metis_compaction_tui.statusline.workspace_refresh import refresh_workspace

        refresh_workspace(directory, workspace, session_arg, wait=True)
        saved = load_saved(path, store, session_arg)
        if saved is not None:
            f.update(saved["fields"])  # type: ignore[arg-type]
            return f, None
    if saved is not None and saved["fields"].get("session") == now[0]:  # type: ignore[union-attr]
        f.update(saved["fields"])  # type: ignore[arg-type]
    else:
        f["session"] = clean(str(now[0]), 40)
        f["note"] = "reading store…"
    # The row's own context is current whatever the saved figures say (the spend changes with
    # a compaction, which the refresher is about to read).
    if isinstance(now[4], int) and not isinstance(now[4], bool):
        f["ctx"] = now[4]
    refresh = None if _refreshed_lately(path, saved) else (directory, workspace, session_arg)
    return f, refresh


def _refreshed_lately(path: str, saved: dict[str, object] | None) -> bool:
    """A refresher ran less than twice its own run time ago: the next call starts one."""
    if saved is None:
        return False
    import time

    try:
        age_ms = (time.time() - os.stat(path).st_mtime) * 1000
    except OSError:
        return False
    return 0 <= age_ms < 2 * saved["took_ms"]  # type: ignore[operator]
