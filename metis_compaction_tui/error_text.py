"""Any exception → one readable line for the screen (a toast, the banner, a result panel).

Our typed errors speak for themselves (their own message); anything else is a bug or a surprise,
so the screen gets a plain sentence naming its type and where its traceback went, and the
traceback goes to `.metis/app-errors.log` (engine.layout), never to the screen. Either way the
line is scrubbed of API keys, its control characters made visible, and it is plain text: callers
show it with `Text(line)` or `notify(line, markup=False)`, never as markup.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

from engine import (
    BadRow,
    CacheUnavailable,
    ConfigError,
    HistoryError,
    NothingToCompact,
    SpanChanged,
    StoreError,
    SummarizerError,
    redact,
)
from metis_compaction_tui.importers.model import TranscriptError
from metis_compaction_tui.safe_text import neutralise
from metis_compaction_tui.sources.base import ActionRefused, SourceUnavailable

# Room for two long paths (a file, and a command naming its folder); a 3 MB error is still cut.
LINE_CHARS = 1_000
LOG_MAX_BYTES = 1_000_000  # past this the log starts again: it is for the latest surprises

# Errors whose message is written for a user. Anything else is unexpected and logged.
EXPECTED: tuple[type[BaseException], ...] = (
    SourceUnavailable,
    ActionRefused,
    CacheUnavailable,
    StoreError,
    ConfigError,
    BadRow,
    NothingToCompact,
    SpanChanged,
    HistoryError,
    TranscriptError,
    SummarizerError,
)


# An Anthropic key anywhere, and the value of an x-api-key / Authorization header (with or
# without a Bearer/Basic scheme) in whatever quoting a repr or a log line gives it.
def own_message(error: BaseException) -> str:
    """A typed error's message in its own words (the field it keeps for that, else str)."""
    for field in ("problem", "reason"):
        value = getattr(error, field, None)
        if isinstance(value, str) and value:
            return value
    text = str(error)
    if isinstance(error, SummarizerError):
        return f"the compaction call failed ({error.error_class.value}): {text}"
    return text or type(error).__name__


def error_log_path(workspace: Path | str | None) -> Path:
    """Where tracebacks go: the workspace's `.metis/app-errors.log`, or, without a workspace (a
    demo in memory) or without its `.metis/` folder (which a log must not create: it would turn
    the folder into a workspace), a per-user file in the temporary folder."""
    from engine import app_error_log_path, metis_dir

    if workspace is not None and metis_dir(workspace).is_dir():
        return app_error_log_path(workspace)
    return Path(tempfile.gettempdir()) / f"metis-app-errors-{os.getuid()}.log"


def log_traceback(error: BaseException, doing: str, path: Path) -> Path | None:
    """Append `error`'s traceback (secrets scrubbed) to `path`; the path, or None if it could
    not be written (a read-only folder, `.metis` a file): the app goes on either way."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    body = "".join(traceback.format_exception(error))
    entry = f"--- {stamp} unexpected error while {doing}\n{neutralise(redact(body))}\n"
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW  # 0600, no symlink in a shared /tmp
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            flags |= os.O_TRUNC
        else:
            flags |= os.O_APPEND
        with os.fdopen(os.open(path, flags, 0o600), "a", encoding="utf-8") as log:
            log.write(entry)
    except (OSError, UnicodeError):
        return None
    return path


def error_line(
    error: BaseException,
    doing: str,
    *,
    workspace: Path | str | None = None,
    max_chars: int = LINE_CHARS,
) -> str:
    """One plain line for the screen: a typed error's own message, or for anything else
    "unexpected error while <doing>: <type>; details in <log>" with the traceback in that log.
    Secrets scrubbed, control characters visible, cut at `max_chars`."""
    if isinstance(error, EXPECTED):
        line = own_message(error)
    else:
        logged = log_traceback(error, doing, error_log_path(workspace))
        where = f"details in {logged}" if logged else "the error log could not be written"
        line = f"unexpected error while {doing}: {type(error).__name__}; {where}"
    line = neutralise(redact(line[: max_chars * 4]), single_line=True)
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"


def source_workspace(source: object) -> Path | None:
    """The folder a source writes under: a store's workspace, a transcript's scratch workspace."""
    for field in ("workspace", "scratch"):
        value = getattr(source, field, None)
        if isinstance(value, Path | str):
            return Path(value)
    return None
