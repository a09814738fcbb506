"""§3.4 when no summary can be used: at the hard cap, drop the oldest messages on a tool-cycle
boundary (and say how many went); below it, report the failure and leave the history alone.
Each path's result carries the turn's one `failed` event."""

from __future__ import annotations

from engine.compaction.result import CommitResult, StepInputs, failed_event, replacement_of
from engine.events import FailureMode, redact
from engine.messages import HistoryError
from engine.outcomes import CompactionOutcome, CompactionRecord, PreparedCompaction, TurnPlan
from engine.policy.fallback import fallback
from engine.policy.span import SpanPlan, plan_truncation
from engine.policy.splice import NewId, splice, truncation_cost, truncation_notice
from engine.summarizers import SummarizerError


def _error_fields(
    error: SummarizerError | None, detail: str | None
) -> tuple[str | None, str | None]:
    """(error_class, error_message) as events and outcomes carry them: redacted (§6)."""
    if error is not None:
        return error.error_class.value, redact(str(error))
    return None, redact(detail) if detail else None


def failed(
    inputs: StepInputs,
    plan: TurnPlan,
    turn_id: str,
    cause: FailureMode,
    where: tuple[int, int],
    error: SummarizerError | None = None,
    detail: str | None = None,
) -> CommitResult:
    """The failure reported (one event at `where`: watermark, span size), the history as it was."""
    error_class, error_message = _error_fields(error, detail)
    watermark_before, span_message_count = where
    event = failed_event(
        inputs.session_id,
        turn_id,
        watermark_before,
        span_message_count,
        cause,
        error_class=error_class,
        error_message=error_message,
    )
    outcome = CompactionOutcome(
        status="failed",
        plan=plan,
        failure_mode=cause,
        error_class=error_class,
        error_message=error_message,
    )
    return CommitResult(outcome=outcome, events=(event,), spent_usd=inputs.spent_usd)


def truncate(
    inputs: StepInputs,
    plan: TurnPlan,
    turn_id: str,
    cause: FailureMode,
    *,
    now_ms: int,
    new_id: NewId,
    error: SummarizerError | None = None,
    detail: str | None = None,
) -> CommitResult:
    """§3.4: drop the oldest non-preserved messages on a tool-cycle boundary until pending
    tokens are under the hard cap, and say how many went, in the turn's one failed event."""
    history, config = inputs.history, inputs.config
    cut = plan_truncation(
        history,
        config.compaction_preserve_recent_turns,
        config.compaction_hard_cap_tokens,
        replacement_tokens=lambda start, end: truncation_cost(history, start, end, new_id),
    )
    span_message_count = plan.span.span_message_count if plan.span else 0
    if cut is None:
        where = (plan.floor, span_message_count)
        return failed(inputs, plan, turn_id, cause, where, error, detail)
    error_class, error_message = _error_fields(error, detail)
    span_ids = tuple(m.id for m in history.messages[cut.start : cut.end])
    notice = truncation_notice(cut.dropped_message_count, new_id("t"))
    try:
        spliced, replacement = splice(history, cut.start, cut.end, notice, new_id=new_id)
    except HistoryError:  # pragma: no cover - a boundary cut always bridges
        outcome = CompactionOutcome(status="failed", plan=plan, failure_mode=cause)
        return CommitResult(outcome=outcome, spent_usd=inputs.spent_usd)
    record = CompactionRecord(
        kind="truncation",
        turn_id=turn_id,
        watermark_before=cut.start,
        watermark_after=cut.end,
        span_message_count=cut.dropped_message_count,
        span_token_count_in=cut.dropped_tokens,
        span_token_count_out=0,
        replacement_count=len(replacement),
        trigger="hard_cap",
        summary_message_id=notice.id,
        created_at_ms=now_ms,
    )
    event = failed_event(
        inputs.session_id,
        turn_id,
        plan.floor,
        span_message_count,
        cause,
        error_class=error_class,
        error_message=error_message,
        truncated_message_count=cut.dropped_message_count,
    )
    outcome = CompactionOutcome(
        status="truncated",
        plan=plan,
        record=record,
        failure_mode=cause,
        error_class=error_class,
        error_message=error_message,
        truncated_message_count=cut.dropped_message_count,
    )
    return CommitResult(
        outcome=outcome,
        replacement=replacement_of(spliced, cut.start, span_ids, replacement, record),
        events=(event,),
        spent_usd=inputs.spent_usd,
    )


def truncate_or_fail(
    inputs: StepInputs,
    plan: TurnPlan,
    turn_id: str,
    at_hard_cap: bool,
    span: SpanPlan | None,
    cause: FailureMode,
    *,
    now_ms: int,
    new_id: NewId,
    error: SummarizerError | None = None,
    detail: str | None = None,
) -> CommitResult:
    """§3.4's choice: truncate at the hard cap; below it only this turn fails (the next retries).
    `span` is what the failure concerns (None: no span, reported at the floor)."""
    if fallback(at_hard_cap=at_hard_cap) == "truncate":
        return truncate(
            inputs, plan, turn_id, cause, now_ms=now_ms, new_id=new_id, error=error, detail=detail
        )
    where = (span.start, span.span_message_count) if span else (plan.floor, 0)
    return failed(inputs, plan, turn_id, cause, where, error, detail)


def validation_failed(
    inputs: StepInputs,
    plan: TurnPlan,
    turn_id: str,
    span: SpanPlan,
    detail: str,
    prepared: PreparedCompaction,
    *,
    now_ms: int,
    new_id: NewId,
) -> CommitResult:
    # §4.4: a result that would not validate is refused and the history stays as it was.
    # At the hard cap, keeping it there would force another (billed, budget-exempt) call
    # every turn: the fallback truncates.
    at_hard_cap = prepared.trigger == "hard_cap"
    return truncate_or_fail(
        inputs,
        plan,
        turn_id,
        at_hard_cap,
        span,
        "validation_failed",
        now_ms=now_ms,
        new_id=new_id,
        detail=detail,
    )
