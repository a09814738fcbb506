"""`inspect`, and `status` / `compact --dry-run` on agent transcripts (Claude Code, Codex).

A transcript is only ever read. `inspect` opens the app on it with what-ifs going to a scratch
workspace; `status` and `compact --dry-run` print what our engine would do to it, in the same
shapes as for a metis store (docs/cli-json.md) plus a `transcript` object.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import msgspec

from engine import (
    ORIGIN_DEFAULT,
    CompactionConfig,
    ConfigError,
    History,
    SummarizerSettings,
    cache_path,
    is_workspace,
    metis_dir,
    parse_flags,
    reads_tool_output,
    resolve_config,
)
from metis_compaction_tui.cli.commands import (
    JSON_SHAPE_VERSION,
    CliError,
    compact_or_preview,
    emit_json,
    plan_status,
    write_status_text,
)
from metis_compaction_tui.cli.output import one_line, warn
from metis_compaction_tui.importers import TranscriptError, probe_head, skipped_lines_summary
from metis_compaction_tui.sources.recording import (
    Recording,
    discover_transcripts,
    read_recording,
)

WHAT_IF_MODEL = "local:extractive"  # no key needed; --set model=anthropic:<model> for a real one


def is_transcript_file(path: Path) -> bool:
    """A file named where a session id could be: a transcript (a named pipe too, refused when
    read with a message saying what it is)."""
    return path.exists() and not path.is_dir()


def is_transcript_path(path: Path) -> bool:
    """A transcript file, or a folder named on the command line that holds transcripts and is
    not a metis workspace (the default "." stays a workspace, so its errors stay a store's)."""
    if is_transcript_file(path):
        return True
    if path == Path(".") or not path.is_dir() or is_workspace(path):
        return False
    return any(path.rglob("*.jsonl"))


class WhatIf(NamedTuple):
    config: CompactionConfig
    summarizer: SummarizerSettings


def what_if_settings(
    sets: Sequence[str], workspace: Path | None = None, *, running: str | None = None
) -> WhatIf:
    """What a transcript's what-ifs run with: the knobs and summarizer settings of the workspace
    the command runs in (its `.metis/config.yaml`, `METIS_*`, then `--set`), as its stored
    sessions get them; the offline summarizer where nothing names a model or a summarizer (no
    key needed). A `summarizer:` section without a model serves the default model, as there.
    `running`: the command that will compact with them, refused if the workspace file sets what
    it may not yet (engine.workspace_trust)."""
    if workspace is None:
        try:
            workspace = Path.cwd()  # named in full in an error: the user did not name it
        except OSError:
            workspace = Path(".")  # a folder removed under the shell
    settings = resolve_config(workspace, flags=parse_flags(list(sets)))
    if running is not None:
        settings.require_trust(running)
    config = settings.config
    if settings.origins["compaction_model"].kind == ORIGIN_DEFAULT and not (
        settings.summarizer.names_a_summarizer
    ):
        config = msgspec.structs.replace(config, compaction_model=WHAT_IF_MODEL)
    return WhatIf(config, settings.summarizer.bound(config.compaction_model))


def _paths(path: Path | None, limit: int) -> list[Path]:
    try:
        return discover_transcripts(path, limit)
    except FileNotFoundError as error:
        raise CliError(str(error)) from None


def _read(path: Path, config: CompactionConfig, *, light: bool = False) -> Recording:
    try:
        return read_recording(path, config, light=light)
    except TranscriptError as error:
        raise CliError(error.located()) from None
    except OSError as error:
        raise CliError(f"{path}: {error.strerror or error}") from None


def cmd_inspect(path: Path | None, scratch: Path | None, limit: int, sets: Sequence[str]) -> int:
    from metis_compaction_tui.sources.transcript import TranscriptSource, scratch_dir

    config, summarizer = what_if_settings(sets, running="inspect")  # its what-ifs compact
    scratch = scratch or scratch_dir()
    paths = _paths(path, limit)
    if len(paths) == 1 and (problem := probe_head(paths[0])) is not None:
        # One file that is plainly no transcript: said here, in one line, not in an empty app.
        raise CliError(f"{paths[0]}: {problem}")
    try:
        metis_dir(scratch).mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as error:
        raise CliError(f"scratch folder {scratch}: {error.strerror or error}") from None
    from metis_compaction_tui.app import run_app

    label = str(path) if path is not None else "Claude Code and Codex logs"
    source = TranscriptSource(
        paths, scratch=scratch, config=config, label=label, summarizer_settings=summarizer
    )
    return run_app(source)


WARNINGS_SHOWN = 10  # in the text output; --json has them all


def transcript_status(recording: Recording) -> dict[str, Any]:
    history = History(recording.messages, tokens=recording.tokens)
    view = recording.view()
    imported = recording.tail.transcript()  # O(messages): what was skipped and why
    return {
        "session_id": recording.session_id,
        "title": recording.title,
        "message_count": len(history),
        "total_tokens": history.total_tokens,
        **plan_status(history, recording.config, Decimal(0)),  # no what-if is spent here
        "transcript": {
            "path": view.path,
            "format": view.format,
            "line_count": view.line_count,
            "agent_compactions": [msgspec.to_builtins(c) for c in view.compactions],
            "context_reductions": [
                {**msgspec.to_builtins(r), "post_tokens": r.post_tokens}
                for r in imported.context_reductions
            ],
            "subagent": imported.subagent,
            "projected_compactions": [msgspec.to_builtins(f) for f in view.projected],
            "projected_count": view.projected_count,
            "projected_span_tokens": view.projected_span_tokens,
            "projected_reason": forced.explain() if (forced := view.projected_forced) else None,
            "recorded_usage": {
                "responses": view.usage_count,
                "last_recorded_context_tokens": view.last_recorded_tokens,
                "last_estimate_tokens": view.last_estimate_tokens,
                "recorded_total": view.recorded_total,
                "estimate_total": view.estimate_total,
            },
            "skipped": dict(sorted(imported.skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
            "warnings": list(imported.warnings),
            "skipped_lines": [{"line": n, "reason": r} for n, r in imported.skipped_lines],
            "empty_reason": imported.empty_reason,
        },
    }


def agent_compaction_line(c: dict[str, Any]) -> str:
    """`auto at 12: 167,000 → 21,000 tokens, 38.5 s`, leaving out what the log did not record."""

    def tokens(value: int | None) -> str:
        return "?" if value is None else f"{value:,}"

    text = f"{one_line(c['trigger'] or 'compacted')} at {c['message_index']}"
    if c["pre_tokens"] is not None or c["post_tokens"] is not None:
        text += f": {tokens(c['pre_tokens'])} → {tokens(c['post_tokens'])} tokens"
    if c["duration_ms"] is not None:
        text += f", {c['duration_ms'] / 1000:.1f} s"
    return text


def write_warnings(warnings: Sequence[str], out: TextIO) -> None:
    label = "  warnings   "
    for warning in warnings[:WARNINGS_SHOWN]:
        out.write(f"{label}{one_line(warning)}\n")
        label = " " * len(label)
    if len(warnings) > WARNINGS_SHOWN:
        out.write(f"{label}{len(warnings) - WARNINGS_SHOWN:,} more (status --json has them all)\n")


def _read_all(
    path: Path, paths: list[Path], config: CompactionConfig
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Every transcript that can be read, and each one that cannot with its problem: one bad
    file in a folder does not hide the others."""
    sessions: list[dict[str, Any]] = []
    not_read: list[dict[str, str]] = []
    # status shows no message: read without their text, unless planning reads tool output
    light = not reads_tool_output(config.compaction_strategy)
    for p in paths:
        try:
            sessions.append(transcript_status(_read(p, config, light=light)))
        except CliError as error:
            not_read.append({"path": str(p), "problem": str(error)})
    if not sessions:
        if len(not_read) == 1:
            raise CliError(not_read[0]["problem"])
        for problem in not_read:
            warn(f"metis-compaction-tui: {one_line(problem['problem'])}")
        raise CliError(f"none of the {len(not_read):,} transcript(s) under {path} could be read")
    for problem in not_read:  # on stderr, so a script reading stdout still gets the sessions
        warn(f"metis-compaction-tui: not read: {one_line(problem['problem'])}")
    return sessions, not_read


def cmd_transcript_status(
    path: Path, sets: Sequence[str], limit: int, as_json: bool, out: TextIO
) -> int:
    config = what_if_settings(sets).config
    sessions, not_read = _read_all(path, _paths(path, limit), config)
    if as_json:
        emit_json(
            {
                "shape_version": JSON_SHAPE_VERSION,
                "transcripts": str(path),
                "sessions": sessions,
                "not_read": not_read,
            },
            out,
        )
        return 0
    unread = f", {len(not_read):,} not read" if not_read else ""
    out.write(
        f"{one_line(path)}: {len(sessions)} transcript(s){unread}, never written; "
        "knobs are a what-if\n"
    )
    for s in sessions:
        write_status_text(s, out)
        fires = s["transcript"]["projected_compactions"]
        agent = s["transcript"]["agent_compactions"]
        count = s["transcript"]["projected_count"]  # every fire; `fires` holds a bounded few
        first = f", the first before message {fires[0]['before_index']}" if fires else ""
        own = "; ".join(agent_compaction_line(c) for c in agent[:3])
        own = f" ({own}{'; ...' if len(agent) > 3 else ''})" if own else ""
        out.write(
            f"  agent      {len(agent)} compaction(s) of its own{own}; ours would make "
            f"{count:,}{first}\n"
        )
        if s["transcript"]["projected_reason"]:  # why ours fires on (almost) every turn
            out.write(f"  ours       {one_line(s['transcript']['projected_reason'])}\n")
        skipped = s["transcript"]["skipped"]
        if skipped:  # records that are not conversation, counted: nothing is dropped unsaid
            kinds = ", ".join(f"{n:,} {one_line(kind)}" for kind, n in list(skipped.items())[:6])
            more = f", {len(skipped) - 6} more kinds" if len(skipped) > 6 else ""
            out.write(f"  skipped    {kinds}{more}\n")
        write_warnings(s["transcript"]["warnings"], out)
    for problem in not_read:  # each bad file, its problem beside it
        detail = problem["problem"].removeprefix(problem["path"]).lstrip(",: ")
        out.write(f"\n{one_line(problem['path'])}\n  not read   {one_line(detail)}\n")
    return 0


def cmd_transcript_compact(
    path: Path,
    dry_run: bool,
    instructions: str | None,
    sets: Sequence[str],
    as_json: bool,
    out: TextIO,
) -> int:
    if not dry_run:
        raise CliError(
            f"{path} is a transcript, which is never written: add --dry-run, or run "
            f"`inspect {path}` to compact it in a scratch store"
        )
    if not is_transcript_file(path):
        raise CliError(f"{path}: compact takes one transcript file")
    config, summarizer = what_if_settings(sets, running="compact --dry-run")
    recording = _read(path, config)
    if recording.tail.skipped_line_count:  # on stderr: stdout (and --json) stays the preview
        skipped = skipped_lines_summary(recording.tail.transcript().skipped_lines)
        warn(f"metis-compaction-tui: {one_line(str(path))}: {skipped}")
    # The manager, the cache and asyncio: the dry run's alone (status reads without them).
    import asyncio

    from engine import CompactionCache, ManagerDeps, SessionManager
    from metis_compaction_tui.sources.transcript import scratch_dir

    scratch_cache = cache_path(scratch_dir())
    cache = CompactionCache(scratch_cache) if scratch_cache.exists() else None  # peek, never create
    try:
        manager = SessionManager(
            session_id=recording.session_id,
            history=recording.messages,
            config=config,
            deps=ManagerDeps(cache=cache, summarizer_settings=summarizer),
        )
    except ConfigError as error:
        raise CliError(str(error)) from None
    try:
        return asyncio.run(compact_or_preview(manager, True, instructions, as_json, out))
    finally:
        if cache is not None:
            cache.close()
