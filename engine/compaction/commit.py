"""Splice a prepared summary (§4.2 message) or mask in, with the CompactionRecord that describes
it; a result that would not validate goes to §3.4's fallback instead. Returns the new history,
the record and the events; SessionManager writes them."""

from __future__ import annotations

from engine.compaction.fallback_run import validation_failed
from engine.compaction.result import CommitResult, StepInputs, replacement_of
from engine.events import CompactionCompleted
from engine.messages import HistoryError, Message
from engine.outcomes import CompactionOutcome, CompactionRecord, PreparedCompaction, TurnPlan
from engine.policy.splice import NewId, splice, splice_masked, summary_message


def commit_prepared(
    inputs: StepInputs,
    plan: TurnPlan,
    prepared: PreparedCompaction,
    turn_id: str,
    *,
    now_ms: int,
    new_id: NewId,
) -> CommitResult:
    """`prepared` spliced into `inputs.history` (which is not changed: the result holds a copy).
    Does not check that the span is still there: SessionManager.commit and the store do."""
    span = prepared.span
    history = inputs.history
    message: Message | None = None

    def refused(detail: str) -> CommitResult:
        return validation_failed(
            inputs, plan, turn_id, span, detail, prepared, now_ms=now_ms, new_id=new_id
        )

    if prepared.action == "mask":
        try:
            spliced, replacement = splice_masked(
                history, span.start, span.compaction_watermark, prepared.replacement
            )
        except HistoryError as error:  # pragma: no cover - copies keep every pair and role
            return refused(str(error))
    else:
        if not prepared.summary.strip():
            return refused("; ".join(("the summary is empty", *prepared.notes)))
        message = summary_message(
            message_id=new_id("s"),
            model=prepared.model,
            watermark_before=span.start,
            watermark_after=span.compaction_watermark,
            summary=prepared.summary,
            cache_key=prepared.cache_key,
        )
        try:
            spliced, replacement = splice(
                history, span.start, span.compaction_watermark, message, new_id=new_id
            )
        except HistoryError as error:
            return refused(str(error))
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
        created_at_ms=now_ms,
        strategy=prepared.strategy,
        history_tokens_before=history.total_tokens,
        history_tokens_after=spliced.total_tokens,
        usage=prepared.usage,
        notes=prepared.notes,
    )
    completed = CompactionCompleted(
        inputs.session_id,
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
    )
    outcome = CompactionOutcome(
        status="compacted", plan=plan, record=record, summary_message=message
    )
    return CommitResult(
        outcome=outcome,
        replacement=replacement_of(spliced, span.start, prepared.span_ids, replacement, record),
        events=(completed,),
        spent_usd=inputs.spent_usd,
    )
