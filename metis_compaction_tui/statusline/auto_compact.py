"""Where Claude Code compacts on its own: the one place its documented rule is written down.

The rule, from Claude Code's documentation (update this module when the pages change):
  https://code.claude.com/docs/en/env-vars  (CLAUDE_CODE_AUTO_COMPACT_WINDOW,
                                             CLAUDE_AUTOCOMPACT_PCT_OVERRIDE)
  https://code.claude.com/docs/en/settings  (`autoCompactWindow`; the settings files and which
                                             one wins when several set a key)

- The compaction window defaults to the model's context window (200K, or 1M for an extended
  context model); Claude Code compacts when the context reaches that window less the room it
  keeps for the summary it writes (20K) and a fixed buffer (13K): a native 1M window at 967K.
- CLAUDE_CODE_AUTO_COMPACT_WINDOW sets the window in tokens (100K to 1M), capped at the model's
  actual window, and takes precedence over the `autoCompactWindow` setting (the same range, or
  "auto" for the default), read from the settings files: local over project over user.
- CLAUDE_AUTOCOMPACT_PCT_OVERRIDE (1-100) is a percentage of that window; values above the
  default point have no effect (it can only move the point earlier).

Claude Code applies the `env` block of its settings to its own environment, which the status line
command inherits: the variables are read from the environment only. Settings files are someone
else's: read only when a regular file under SETTINGS_MAX_BYTES, and a file that is not a JSON
object is ignored with a note. Standard library only (the status line's every-call path).
"""

from __future__ import annotations

import os

from metis_compaction_tui.statusline.json_object import load_object

SUMMARY_RESERVE = 20_000  # the room kept for the compaction summary Claude Code writes
BUFFER = 13_000  # and a fixed margin below that
MIN_WINDOW = 100_000
MAX_WINDOW = 1_000_000
WINDOW_ENV = "CLAUDE_CODE_AUTO_COMPACT_WINDOW"
PCT_ENV = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"
SETTING = "autoCompactWindow"
SETTINGS_MAX_BYTES = 1 << 20


class AutoCompact:
    """The point (tokens of context), the compaction window it comes from, and where each came
    from: `source` is "default", "env", "setting <path>" or "pct override"; `notes` name the
    inputs that were ignored and why."""

    __slots__ = ("at", "notes", "source", "window")

    def __init__(self, at: int, window: int, source: str, notes: list[str]) -> None:
        self.at, self.window, self.source, self.notes = at, window, source, notes


def settings_files(project_dir: str | None, environ: dict[str, str] | None = None) -> list[str]:
    """Claude Code's settings files, highest precedence first: local, project, user (the user
    folder is $CLAUDE_CONFIG_DIR when set, else ~/.claude)."""
    env = os.environ if environ is None else environ
    user_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    files = []
    if project_dir:
        files.append(os.path.join(project_dir, ".claude", "settings.local.json"))
        files.append(os.path.join(project_dir, ".claude", "settings.json"))
    files.append(os.path.join(user_dir, "settings.json"))
    return files


def _read_settings(path: str, notes: list[str]) -> dict[str, object] | None:
    """The file's JSON object, or None: absent (silently), or not a regular file, too big, or
    not a JSON object (each with a note)."""
    import stat

    try:
        # O_NONBLOCK: a FIFO put where a settings file belongs must not hang the agent's line.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        notes.append(f"settings {path}: unreadable; ignored")
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            notes.append(f"settings {path}: not a regular file; ignored")
            return None
        raw = os.read(fd, SETTINGS_MAX_BYTES + 1)
    except OSError:
        notes.append(f"settings {path}: unreadable; ignored")
        return None
    finally:
        os.close(fd)
    if len(raw) > SETTINGS_MAX_BYTES:
        notes.append(f"settings {path}: over {SETTINGS_MAX_BYTES >> 20} MiB; ignored")
        return None
    data = load_object(raw)
    if data is None:
        notes.append(f"settings {path}: not a JSON object; ignored")
    return data


def _tokens(value: object) -> int | None:
    """A token count as Claude Code reads one: a number, or text holding one; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().replace("_", ""))
        except ValueError:
            return None
    if not isinstance(value, int | float) or value != value or value <= 0 or value > 1e12:
        return None
    return int(value)


def _clamp(window: int, model_window: int) -> int:
    return min(max(window, MIN_WINDOW), MAX_WINDOW, model_window)


def auto_compact_point(
    model_window: int,
    project_dir: str | None = None,
    environ: dict[str, str] | None = None,
) -> AutoCompact:
    """Where Claude Code will compact a context whose model window is `model_window`."""
    env = os.environ if environ is None else environ
    notes: list[str] = []
    window, source = model_window, "default"
    raw_window = env.get(WINDOW_ENV)
    if raw_window is not None and raw_window.strip():
        tokens = _tokens(raw_window)
        if tokens is None:
            notes.append(f"{WINDOW_ENV}={raw_window[:20]!r} is not a number of tokens; ignored")
        else:
            window, source = _clamp(tokens, model_window), "env"
    if source == "default":
        for path in settings_files(project_dir, env):
            data = _read_settings(path, notes)
            if data is None or SETTING not in data:
                continue
            value = data[SETTING]
            if value == "auto":
                break  # the highest file that says anything decides: "auto" is the default
            tokens = _tokens(value) if not isinstance(value, str) else None
            if tokens is None:
                notes.append(f'settings {path}: {SETTING} is not a number or "auto"; ignored')
                continue
            window, source = _clamp(tokens, model_window), f"setting {path}"
            break
    at = max(0, window - SUMMARY_RESERVE - BUFFER)
    raw_pct = env.get(PCT_ENV)
    if raw_pct is not None and raw_pct.strip():
        try:
            pct = float(raw_pct)
        except ValueError:
            pct = float("nan")
        if not 0 < pct <= 100:  # NaN fails too
            notes.append(f"{PCT_ENV}={raw_pct[:20]!r} is not a percentage (1-100); ignored")
        elif int(window * pct / 100) < at:
            at, source = int(window * pct / 100), "pct override"
    return AutoCompact(at, window, source, notes)
