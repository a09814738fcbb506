"""Splice a prepared summary (§4.2 message) or mask in, with the CompactionRecord that describes
it; a result that would not validate goes to §3.4's fallback instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.compaction.fallback_run import validation_failed
from engine.compaction.writes import emit, persist_replacement
from engine.events import CompactionCompleted
from engine.messages import HistoryError, Message
from engine.outcomes import CompactionOutcome, CompactionRecord, PreparedCompaction, TurnPlan
from engine.policy.splice import splice, splice_masked, summary_message

if TYPE_CHECKING:
    from engine.manager import SessionManager


def commit_prepared(
    manager: SessionManager, plan: TurnPlan, prepared: PreparedCompaction, turn_id: str
) -> CompactionOutcome:
    span = prepared.span
    history = manager.history
    message: Message | None = None
    if prepared.action == "mask":
        try:
            spliced, replacement = splice_masked(
                history, span.start, span.compaction_watermark, prepared.replacement
            )
        except HistoryError as error:  # pragma: no cover - copies keep every pair and role
            return validation_failed(manager, plan, turn_id, span, str(error), prepared)
    else:
        if not prepared.summary.strip():
            detail = "; ".join(("the summary is empty", *prepared.notes))
            return validation_failed(manager, plan, turn_id, span, detail, prepared)
        message = summary_message(
            model=prepared.model,
            watermark_before=span.start,
            watermark_after=span.compaction_watermark,
            summary=prepared.summary,
            cache_key=prepared.cache_key,
        )
        try:
            spliced, replacement = splice(history, span.start, span.compaction_watermark, message)
        except HistoryError as error:
            return validation_failed(manager, plan, turn_id, span, str(error), prepared)
    record = CompactionRecord(
        kind="mask" if prepared.action == "mask" else "summary",
        turn_id=turn_id,
        watermark_before=span.start,
        watermark_after=span.compaction_watermark,
        span_message_count=span.span_message_count,
        span_token_count_in=span.span_tokens,
        span_token_count_out=prepared.tokens_out
        if message is not None
        else sum(spliced.tokens[span.start : span.start + len(replacement)]),
        replacement_count=len(replacement),
        cache_key=prepared.cache_key or None,
        cache_hit=prepared.cache_hit,
        model=prepared.model,
        prompt_version=prepared.prompt_version,
        cost_usd=prepared.cost_usd,
        latency_ms=prepared.latency_ms,
        trigger=prepared.trigger,
        instructions=prepared.instructions,
        summary_message_id=(message or replacement[0]).id,
        created_at_ms=manager._clock(),
        strategy=prepared.strategy,
        history_tokens_before=history.total_tokens,
        history_tokens_after=spliced.total_tokens,
        usage=prepared.usage,
        notes=prepared.notes,
    )
    persist_replacement(manager, spliced, span.start, prepared.span_ids, replacement, record)
    emit(
        manager,
        CompactionCompleted(
            manager.session_id,
            turn_id,
            span.start,
            span.compaction_watermark,
            span.span_message_count,
            span.span_tokens,
            record.span_token_count_out,
            prepared.cache_hit,
            prepared.cache_key,
            prepared.cost_usd,
            prepared.latency_ms,
        ),
    )
    return CompactionOutcome(status="compacted", plan=plan, record=record, summary_message=message)
