"""`metis-compaction-tui cache list|show|evict|trim|clear`: the workspace's compaction cache (§5.2).

Reads never bump a row (looking is not a hit, §5.3); a missing cache is reported, never created.
`cache list --json` is documented in docs/cli-json.md.
"""

from __future__ import annotations

import os
import sys

from engine import cache_path
from metis_compaction_tui.cli import exit_codes
from metis_compaction_tui.cli.errors import CliError
from metis_compaction_tui.cli.output import (
    JSON_SHAPE_VERSION,
    block,
    emit_json,
    format_time,
    one_line,
)
from metis_compaction_tui.lean_msgspec import import_msgspec

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, TextIO

    from engine import CacheRow, CompactionCache

# msgspec comes with an existing cache (its rows are Structs) or a JSON report: `cache list` on
# a workspace without a cache file loads neither it nor typing.


def cache_row_json(row: CacheRow, *, with_text: bool) -> dict[str, Any]:
    import msgspec

    from engine import ledger_counts  # a summary's ledger: shown with one row, never listed

    data = msgspec.to_builtins(row)
    data["ledger"] = msgspec.to_builtins(ledger_counts(row.summary_text))
    if not with_text:
        data.pop("summary_text")
        data["summary_chars"] = len(row.summary_text)
    return data


def _open_cache(path: Path) -> CompactionCache | None:
    """The workspace's cache, or None when there is none yet (and none is created)."""
    if not os.path.lexists(path):  # a dangling link is no "none yet": CompactionCache refuses it
        return None
    import_msgspec()
    from engine import CompactionCache  # no cache yet, nothing of it loaded

    cache = CompactionCache(path)
    if cache.problem:
        cache.close()
        raise CliError(cache.problem)
    return cache


def _resolve_key(cache: CompactionCache, key: str) -> str:
    """A full key, or a unique prefix of one (list shows the first 16 characters)."""
    if cache.peek(key) is not None:
        return key
    matches = cache.keys_with_prefix(key) if key else []  # the keys only, no summary texts
    if len(matches) == 1:
        return matches[0]
    what = "matches several keys" if matches else "is not in the cache"
    raise CliError(f"cache key {one_line(key)!r} {what} ({cache.path})")


def _confirm(prompt: str, call: CacheCall) -> bool:
    if call.yes:
        return True
    if not call.stdin.isatty():
        raise CliError(f"{prompt.rstrip('?')}: refused without --yes (stdin is not a terminal)")
    call.out.write(f"{prompt} [y/N] ")
    call.out.flush()
    return call.stdin.readline().strip().lower() in ("y", "yes")


class CacheCall:
    """One cache subcommand's inputs; `cache` is None when the workspace has no cache yet."""

    __slots__ = ("arg", "as_json", "cache", "out", "path", "stdin", "yes")

    def __init__(
        self,
        cache: CompactionCache | None,
        path: Path,
        arg: Any,
        as_json: bool,
        yes: bool,
        out: TextIO,
        stdin: TextIO,
    ) -> None:
        self.cache, self.path, self.arg = cache, path, arg
        self.as_json, self.yes, self.out, self.stdin = as_json, yes, out, stdin

    def existing(self) -> CompactionCache:
        if self.cache is None:
            raise CliError(f"{self.path} does not exist: no cache yet")
        return self.cache

    def report(self, data: dict[str, Any], text: str) -> None:
        if self.as_json:
            emit_json(data, self.out)
        else:
            self.out.write(text + "\n")


def cmd_cache(
    workspace: Path,
    action: str,
    arg: Any,
    as_json: bool,
    yes: bool,
    out: TextIO,
    stdin: TextIO = sys.stdin,
) -> int:
    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} does not exist or is not a folder")
    path = cache_path(workspace)
    cache = _open_cache(path)
    try:
        return _CACHE_ACTIONS[action](CacheCall(cache, path, arg, as_json, yes, out, stdin))
    finally:
        if cache is not None:
            cache.close()


def _cache_list(call: CacheCall) -> int:
    # Every column but the summary texts (a listing never loads them).
    rows = call.cache.list_entries() if call.cache is not None else []
    out = call.out
    if call.as_json:
        import msgspec

        emit_json(
            {
                "shape_version": JSON_SHAPE_VERSION,
                "path": str(call.path),
                "exists": call.cache is not None,
                "count": len(rows),
                "rows": [msgspec.to_builtins(r) for r in rows],
            },
            out,
        )
        return 0
    if not rows:
        out.write(f"{call.path}: {'empty' if call.cache is not None else 'no cache yet'}\n")
        return 0
    out.write(f"{call.path}: {len(rows)} row(s), most recently read first\n")
    for r in rows:
        out.write(
            f"  {one_line(r.cache_key[:16])}  {one_line(r.summarization_model):<28} "
            f"{r.span_message_count:>4} msgs "
            f"{r.span_token_count_in:>7,} -> {r.span_token_count_out:>5,} tok  "
            f"used {r.use_count:>3}x  read {format_time(r.last_read_at_ms)}\n"
        )
    return 0


def _cache_show(call: CacheCall) -> int:
    cache = call.existing()
    row = cache.peek(_resolve_key(cache, call.arg))  # peek: looking is not a hit (§5.3)
    if row is None:  # evicted between the two reads
        raise CliError(f"cache key {call.arg!r} is not in the cache ({call.path})")
    if call.as_json:
        emit_json(cache_row_json(row, with_text=True), call.out)
        return 0
    call.out.write(
        f"key        {one_line(row.cache_key)}\nmodel      {one_line(row.summarization_model)} "
        f"(prompt {one_line(row.summarization_prompt_version)})\n"
        f"span       {row.span_message_count} messages, "
        f"{row.span_token_count_in:,} -> {row.span_token_count_out:,} tokens\n"
        f"created    {format_time(row.created_at_ms)}\n"
        f"last read  {format_time(row.last_read_at_ms)} (used {row.use_count}x)\n\n"
    )
    call.out.write(block(row.summary_text) + "\n")  # written as plain text, never interpreted
    return 0


def _cache_evict(call: CacheCall) -> int:
    cache = call.existing()
    key = _resolve_key(cache, call.arg)
    evicted = cache.evict(key)
    if evicted:
        exit_codes.note_commit()
    call.report({"evicted": int(evicted), "cache_key": key}, f"evicted {key}")
    return 0


def _cache_trim(call: CacheCall) -> int:
    keep: int = call.arg
    if keep < 0:
        raise CliError("trim N: N must be 0 or more")
    count = call.cache.count() if call.cache is not None else 0
    if call.cache is None or count <= keep:
        call.report({"evicted": 0, "kept": count}, f"nothing to trim ({count} rows)")
        return 0
    if not _confirm(f"evict {count - keep} of {count} rows from {call.path}?", call):
        return 1
    evicted = call.cache.trim(keep)
    exit_codes.note_commit()
    call.report({"evicted": evicted, "kept": call.cache.count()}, f"evicted {evicted} rows")
    return 0


def _cache_clear(call: CacheCall) -> int:
    count = call.cache.count() if call.cache is not None else 0
    if call.cache is None or count == 0:
        call.report({"evicted": 0, "kept": 0}, "the cache is already empty")
        return 0
    if not _confirm(f"evict all {count} rows from {call.path}?", call):
        return 1
    evicted = call.cache.clear()
    exit_codes.note_commit()
    call.report({"evicted": evicted, "kept": 0}, f"evicted {evicted} rows")
    return 0


_CACHE_ACTIONS: dict[str, Callable[[CacheCall], int]] = {
    "list": _cache_list,
    "show": _cache_show,
    "evict": _cache_evict,
    "trim": _cache_trim,
    "clear": _cache_clear,
}
