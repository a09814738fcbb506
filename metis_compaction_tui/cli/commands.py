"""The non-interactive subcommands status, compact and undo (cache: cli_cache.py), and what all
subcommands share. Each command returns an exit code.

Output shapes of `status --json` and `cache list --json` are documented in docs/cli-json.md. Every
reader here opens the store with create=False and writes nothing; only compact, undo and the
cache's evict/trim/clear change anything, and only what they name.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, TextIO

import msgspec

# What every reader here uses (and the store loads anyway); the rest is imported where it is
# used: a compaction's savings and work ledger only when one is in effect, the summarizer's
# errors only by compact.
from engine import (
    ORIGIN_DEFAULT,
    SCHEMA_VERSION,
    History,
    SessionStore,
    StoreError,
    no_span_reason,
    plan_turn,
    price_origin,
    resolve_config,
)
from metis_compaction_tui.cli import exit_codes
from metis_compaction_tui.cli.errors import CliError
from metis_compaction_tui.cli.output import (
    JSON_SHAPE_VERSION,
    emit_json,
    one_line,
    warn,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from engine import (
        CompactionConfig,
        Message,
        ResolvedConfig,
        SessionInfo,
        SpanPlan,
        StoredCompaction,
        SummarizerSettings,
        TurnPlan,
    )


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


def open_store(workspace: Path) -> SessionStore:
    if not workspace.exists():  # a file is read as a transcript before this (cli.dispatch)
        raise CliError(
            f"{workspace} does not exist (a workspace folder, or for status and "
            "compact --dry-run a transcript file)"
        )
    if not workspace.is_dir():
        raise CliError(f"workspace {workspace} is not a folder")
    try:
        return SessionStore.open(workspace, create=False)
    except StoreError as error:
        raise CliError(str(error)) from None


# -- status -----------------------------------------------------------------------------------


def plan_status(history: History, config: CompactionConfig, spent_usd: Decimal) -> dict[str, Any]:
    """Pressure, floor, trigger decision and spend of any history (docs/cli-json.md)."""
    plan: TurnPlan = plan_turn(history, config, spent_usd)
    decision = plan.decision
    pending = decision.pending_history_tokens
    span = plan.span
    return {
        "stable_prefix_end": plan.stable_prefix_end,
        "floor": plan.floor,
        "pending_history_tokens": pending,
        "threshold_tokens": decision.threshold_tokens,
        "hard_cap_tokens": decision.hard_cap_tokens,
        "preserve_recent_turns": config.compaction_preserve_recent_turns,
        "pressure": {
            "of_threshold_pct": _percent(pending, decision.threshold_tokens),
            "of_hard_cap_pct": _percent(pending, decision.hard_cap_tokens),
        },
        "decision": {
            "action": decision.action.value,
            "reason": decision.reason.value,
            "fires": decision.fires,
            "explain": decision.explain(),
        },
        "span": None if span is None else span_json(span),
        "boundary_found": plan.boundary_found,
        "strategy": {
            "name": plan.strategy,
            "action": plan.action,
            "expected_saved_tokens": plan.expected_saved_tokens,
        },
        "model": config.compaction_model,
        "spent_usd": str(spent_usd),
        "budget_usd": str(decision.budget_usd),
        "budget_exhausted": decision.budget_exhausted,
    }


def span_json(span: SpanPlan) -> dict[str, int]:
    return {
        "start": span.start,
        "compaction_watermark": span.compaction_watermark,
        "nominal_watermark": span.nominal_watermark,
        "slid_back_by": span.slid_back_by,
        "span_message_count": span.span_message_count,
        "span_tokens": span.span_tokens,
    }


def session_status(
    store: SessionStore,
    info: SessionInfo,
    settings: ResolvedConfig | None = None,
    *,
    ledger: bool = True,
) -> dict[str, Any]:
    """One stored session's status (docs/cli-json.md): its stored knobs, with what the flags,
    environment and .metis/config.yaml set on top (`settings`), and where each came from.
    `ledger`: read the last summary's work ledger back (the JSON shows it, the text does not)."""
    config = info.config if settings is None else settings.apply(info.config)
    snapshot = store.snapshot(info.session_id)
    history = History(
        snapshot.messages, stable_prefix_end=snapshot.stable_prefix_end, tokens=snapshot.tokens
    )
    compactions = store.compactions(info.session_id)
    # The rows are the truth; the session's denormalised counts are checked against them and a
    # wrong one reported (the next write repairs it).
    count, total = len(snapshot.messages), sum(snapshot.tokens)
    if (count, total) != (info.message_count, info.total_tokens):
        warn(
            f"session {one_line(info.session_id)!r}: sessions.message_count/total_tokens say "
            f"{info.message_count}/{info.total_tokens} but its rows hold {count}/{total}; "
            "showing the rows' (the next compact or undo repairs the columns)"
        )
    return {
        "session_id": info.session_id,
        "title": info.title,
        "revision": info.revision,
        "message_count": count,
        "total_tokens": total,
        "last_seq": info.last_seq,
        "created_at_ms": info.created_at_ms,
        "updated_at_ms": info.updated_at_ms,
        **plan_status(history, config, info.spent_usd),
        "price_origin": price_origin(
            config.compaction_model, None if settings is None else settings.summarizer
        ),
        "config": None if settings is None else settings.to_json(info.config),
        "compactions_in_effect": sum(not c.undone for c in compactions),
        "compactions_undone": sum(c.undone for c in compactions),
        "last_compaction": last_compaction_json(
            compactions,
            None if settings is None else settings.summarizer.bound(config.compaction_model),
            history.messages if ledger else (),
        ),
    }


def last_compaction_json(
    compactions: list[StoredCompaction],
    summarizer: SummarizerSettings | None = None,
    messages: Sequence[Message] = (),
) -> dict[str, Any] | None:
    """The latest compaction still in effect: which strategy ran, and what it saved (priced at
    the rates `summarizer` states for its model, if it does)."""
    stored = next((c for c in reversed(compactions) if not c.undone), None)
    if stored is None:
        return None
    from engine import compaction_savings

    record = stored.record
    savings = compaction_savings(record, summarizer)
    usage = record.usage
    return {
        "compaction_id": stored.compaction_id,
        "kind": record.kind,
        "strategy": record.strategy,
        "trigger": record.trigger,
        "created_at_ms": stored.created_at_ms,
        "span_message_count": record.span_message_count,
        "history_tokens_before": record.history_tokens_before,
        "history_tokens_after": record.history_tokens_after,
        "cost_usd": str(record.cost_usd),
        "usage": None if usage is None else msgspec.to_builtins(usage),
        "notes": list(record.notes),
        "saved_tokens": savings.saved_tokens if savings else None,
        "saved_usd_per_turn": str(savings.saved_usd_per_turn) if savings else None,
        "break_even_turns": savings.break_even_turns if savings else None,
        "priced_at": savings.priced_at if savings else None,
        # engine.ledger: what its summary's work ledger restored and left out (None: its
        # summary is not in the active history).
        "ledger": next(
            (_ledger_counts(m) for m in messages if m.id == record.summary_message_id), None
        ),
    }


def _ledger_counts(summary: Message) -> dict[str, Any]:
    from engine import ledger_counts  # engine.ledger: loaded only to read a ledger back

    return msgspec.to_builtins(ledger_counts(summary.text()))


def cmd_status(
    workspace: Path, as_json: bool, out: TextIO, flags: dict[str, str] | None = None
) -> int:
    settings = resolve_config(workspace, flags=flags)
    with open_store(workspace) as store:
        # One bad row (a hand-edited spend, a message that does not decode) is named and
        # skipped; the other sessions are shown.
        infos, bad_rows = store.readable_sessions()
        sessions = []
        for info in infos:
            try:
                sessions.append(session_status(store, info, settings, ledger=as_json))
            except StoreError as error:
                bad_rows.append(str(error))
        for problem in bad_rows:
            warn(f"skipped a bad row: {one_line(problem)}")
        if as_json:
            emit_json(
                {
                    "shape_version": JSON_SHAPE_VERSION,
                    "workspace": str(workspace),
                    "store": str(store.path),
                    "schema_version": SCHEMA_VERSION,
                    "config_file": str(settings.path),
                    "config_file_found": settings.file_found,
                    "user_config_file": str(settings.user_path),
                    "user_config_file_found": settings.user_file_found,
                    "config": settings.to_json(),
                    "workspace_trust": msgspec.to_builtins(settings.trust),
                    "sessions": sessions,
                    "bad_rows": bad_rows,
                },
                out,
            )
            return 0
        out.write(f"{store.path} (schema {SCHEMA_VERSION}): {len(sessions)} session(s)\n")
    write_settings_text(settings, out)
    for s in sessions:
        write_status_text(s, out)
    return 0


def write_settings_text(settings: ResolvedConfig, out: TextIO) -> None:
    """What the flags, environment and config files set, each with where it came from."""
    found = "" if settings.file_found else " (absent)"
    out.write(f"config     {one_line(str(settings.path))}{found}\n")
    if settings.user_file_found:
        out.write(f"user config {one_line(str(settings.user_path))}\n")
    if settings.trust.state == "untrusted":
        out.write(f"  trust    {one_line(settings.trust.note() or 'workspace config untrusted')}\n")
    for key, value, origin in settings.describe():
        if settings.origins[key].kind != ORIGIN_DEFAULT:
            out.write(f"  {key} = {one_line(value)}  ({one_line(origin)})\n")


def write_status_text(s: dict[str, Any], out: TextIO) -> None:
    """One session's status as text: a store's session, or a transcript's (no revision)."""
    span = s["span"]
    span_text = (
        f"next span {span['start']}..{span['compaction_watermark']} ({span['span_message_count']} "
        f"messages, {span['span_tokens']:,} tokens, slid back {span['slid_back_by']})"
        if span
        else no_span_reason(s["message_count"], s["preserve_recent_turns"], s["floor"])
    )
    exhausted = " (exhausted)" if s["budget_exhausted"] else ""
    price = f", {s['price_origin']}" if s.get("price_origin") else ""
    stored = (
        f", revision {s['revision']}, {s['compactions_in_effect']} compaction(s) in effect"
        if "revision" in s
        else ""
    )
    out.write(
        f"\n{one_line(s['session_id'])}  {one_line(s['title'])}\n"
        f"  messages   {s['message_count']:,} ({s['total_tokens']:,} tokens){stored}\n"
        f"  pressure   {s['pending_history_tokens']:,} pending tokens: "
        f"{s['pressure']['of_threshold_pct']}% of threshold {s['threshold_tokens']:,}, "
        f"{s['pressure']['of_hard_cap_pct']}% of hard cap {s['hard_cap_tokens']:,}\n"
        f"  floor      {s['floor']} (stable prefix ends at {s['stable_prefix_end']}); "
        f"{span_text}\n"
        f"  trigger    {s['decision']['explain']}\n"
        f"  strategy   {strategy_text(s['strategy'])}\n"
        f"  spend      ${s['spent_usd']} of ${s['budget_usd']} budget{exhausted} "
        f"({one_line(s['model'])}{price})\n"
    )
    if s.get("last_compaction"):
        out.write(f"  last       {last_text(s['last_compaction'])}\n")


def strategy_text(strategy: dict[str, Any]) -> str:
    action = strategy["action"]
    if action is None:
        return f"{strategy['name']}: nothing it can do now"
    saved = strategy["expected_saved_tokens"]
    what = "mask old tool results" if action == "mask" else "summarize"
    return f"{strategy['name']}: would {what} (about {saved:,} tokens fewer)"


def last_text(last: dict[str, Any]) -> str:
    """`hybrid mask at turn ...: 31,200 -> 9,800 tokens, saves $0.0021 a turn, ...`"""
    head = (
        f"compaction {last['compaction_id']}: {last['strategy'] or 'summarize'} ({last['kind']}), "
        f"{last['history_tokens_before']:,} -> {last['history_tokens_after']:,} tokens"
    )
    notes = "".join(f"; {one_line(note)}" for note in last.get("notes") or ())
    if last["saved_tokens"] is None:
        return f"{head}, cost ${last['cost_usd']}{notes}"
    even = last["break_even_turns"]
    pays = "never pays back" if even is None else f"paid back after {even} more turn(s)"
    return (
        f"{head}: saved {last['saved_tokens']:,} tokens, "
        f"${Decimal(last['saved_usd_per_turn']):.4f} a turn at {last['priced_at']} cache-read "
        f"rates; cost ${last['cost_usd']}; {pays}{notes}"
    )


# -- compact and undo -------------------------------------------------------------------------


def cmd_compact(
    workspace: Path,
    session_id: str,
    dry_run: bool,
    instructions: str | None,
    as_json: bool,
    out: TextIO,
    flags: dict[str, str] | None = None,
) -> int:
    settings = resolve_config(workspace, flags=flags)
    settings.require_trust("compact --dry-run" if dry_run else "compact")  # engine.workspace_trust
    with open_store(workspace) as store:
        try:
            info = store.session_info(session_id)
            if not dry_run:
                store.verify(session_id)  # never write to a corrupt store
        except StoreError as error:
            raise CliError(str(error)) from None
        settings.apply(info.config)  # a set knob clashing with the session's: named, up front
        settings.require_stored_model(
            session_id, info.config, "compact --dry-run" if dry_run else "compact"
        )
        # A dry run writes nothing: it peeks at an existing cache and never creates one.
        cache_path = store.cache_path
        from engine import CompactionCache  # asyncio and the cache: compact's alone

        # The session's own LRU bound (§5.2), not the default.
        max_rows = info.config.compaction_cache_max_rows
        cache = (
            CompactionCache(cache_path, max_rows=max_rows)
            if not dry_run or cache_path.exists()
            else None
        )
        # The session's knobs with what flags, environment and config.yaml set on top, and the
        # workspace's summarizer settings (import path, endpoint, stated price) for its model.
        manager = store.manager(
            session_id, cache=cache, summarizer_settings=settings.summarizer, **settings.overrides()
        )
        try:
            import asyncio  # only compact runs the manager: status and undo do not pay for it

            return asyncio.run(compact_or_preview(manager, dry_run, instructions, as_json, out))
        finally:
            if cache is not None:
                cache.close()


async def compact_or_preview(
    manager: Any, dry_run: bool, instructions: str | None, as_json: bool, out: TextIO
) -> int:
    from engine import SpanChanged, SummarizerError

    try:
        preview = manager.preview(instructions)
        if preview is None:
            plan = manager.plan()
            preserve = manager.config.compaction_preserve_recent_turns
            warn(f"{no_span_reason(len(manager.history), preserve, plan.floor)}; nothing written")
            return exit_codes.NOTHING_DONE
        span = preview.span
        summary = {
            "session_id": manager.session_id,
            "dry_run": dry_run,
            "span": span_json(span),
            "pending_history_tokens": span.pending_history_tokens,
            "model": preview.model,
            "price_origin": preview.price_origin,
            # Where the session (and the key) would go: said before and after the call.
            "endpoint": preview.endpoint,
            "cache_key": preview.cache_key,
            "cache_hit": preview.cache_hit,
            "estimated_cost_usd": str(preview.estimated_cost_usd),
            "spent_usd": str(preview.spent_usd),
            "budget_usd": str(preview.budget_usd),
        }
        if not dry_run:
            try:
                prepared = await manager.prepare(instructions)
                outcome = manager.commit(prepared)
            except SummarizerError as error:
                warn(f"compaction call failed ({error.error_class.value}): {error}")
                return exit_codes.NOTHING_DONE
            except (SpanChanged, ValueError) as error:
                # ValueError: another writer compacted between preview and prepare (the
                # engine's NothingToCompact is one); nothing was written here.
                warn(f"{error}; nothing written: run it again")
                return exit_codes.NOTHING_DONE
            if outcome.status != "compacted" or outcome.record is None:
                warn(f"not compacted: {outcome.failure_mode}: {outcome.error_message}")
                return exit_codes.NOTHING_DONE
            exit_codes.note_commit()
            record = outcome.record
            summary.update(
                revision=manager.revision,
                cache_hit=record.cache_hit,
                tokens_out=record.span_token_count_out,
                cost_usd=str(record.cost_usd),
                spent_usd=str(manager.spent_usd),
                # engine.summary_checks: a summary cut to its budget, usage charged at the bound.
                notes=list(prepared.notes),
            )
    finally:
        await manager.aclose()
    if as_json:
        emit_json(summary, out)
        return 0
    s = summary["span"]
    head = "dry run (nothing written)" if dry_run else f"compacted: revision {summary['revision']}"
    cost = summary.get("cost_usd", summary["estimated_cost_usd"])
    out.write(
        f"{one_line(manager.session_id)}: {head}\n"
        f"  span       messages {s['start']}..{s['compaction_watermark']} "
        f"({s['span_message_count']} "
        f"messages, {s['span_tokens']:,} tokens); nominal watermark {s['nominal_watermark']}, "
        f"slid back {s['slid_back_by']}\n"
        f"  cache      {'hit' if summary['cache_hit'] else 'miss'} "
        f"{one_line(summary['cache_key'][:16])}\n"
        f"  cost       ${cost}{' estimated' if dry_run else ''} with {one_line(summary['model'])} "
        f"({summary['price_origin']}); "
        f"spent ${summary['spent_usd']} of ${summary['budget_usd']}\n"
        f"  endpoint   {one_line(summary['endpoint'])}\n"
    )
    if not dry_run:
        out.write(f"  summary    {summary['tokens_out']:,} tokens\n")
        for note in summary["notes"]:
            out.write(f"  note       {one_line(note)}\n")
    return 0


def compaction_json(stored: StoredCompaction) -> dict[str, Any]:
    record = msgspec.to_builtins(stored.record)
    return {
        "compaction_id": stored.compaction_id,
        "session_id": stored.session_id,
        "revision": stored.revision,
        "undone": stored.undone,
        "record": record,
    }


def cmd_undo(workspace: Path, session_id: str, as_json: bool, out: TextIO) -> int:
    from engine import UndoRefused

    with open_store(workspace) as store:
        try:
            before = store.session_info(session_id).revision
            store.verify(session_id)  # never write to a corrupt store
        except StoreError as error:
            raise CliError(str(error)) from None
        try:
            stored = store.undo_latest_compaction(session_id)
        except UndoRefused as refused:
            warn(f"undo refused: {refused.reason}")
            return exit_codes.NOTHING_DONE
        except StoreError as error:
            # The undo may have committed and then failed to decode what it returned: the code
            # must say what happened, so look at the revision before saying "nothing".
            if _revision_or_none(store, session_id) not in (None, before):
                exit_codes.note_commit()
                warn(f"undone, but reading the result back failed: {error}")
                return exit_codes.OK
            raise CliError(str(error)) from None
        exit_codes.note_commit()
        revision = store.session_info(session_id).revision
    if as_json:
        emit_json({**compaction_json(stored), "session_revision": revision}, out)
        return 0
    record = stored.record
    out.write(
        f"{one_line(session_id)}: undid compaction {stored.compaction_id} ({record.kind}): "
        f"{record.span_message_count} messages restored at {record.watermark_before}; "
        f"revision {revision}\n"
    )
    return 0


def _revision_or_none(store: SessionStore, session_id: str) -> object:
    try:
        return store.session_info(session_id).revision
    except StoreError:
        return None
