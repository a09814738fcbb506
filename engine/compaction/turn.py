"""§3.1 at the start of a turn, once planned: what the turn does before any call. Either it is
already decided (skip, or §3.4's fallback when there is no span to compact), or it compacts a
span with one action after announcing it (the started event, and §3.1 step 2's budget notice).
SessionManager.before_turn runs the summary call and the commit between these steps."""

from __future__ import annotations

from dataclasses import dataclass

from engine.compaction.fallback_run import truncate_or_fail
from engine.compaction.result import (
    CommitResult,
    StepInputs,
    Trigger,
    failed_event,
    started_event,
)
from engine.events import CompactionEvent
from engine.outcomes import CompactionOutcome, TurnPlan
from engine.policy.span import SpanPlan
from engine.policy.splice import NewId
from engine.policy.trigger import TriggerAction, TriggerReason
from engine.summarizers import SummarizerError


@dataclass(frozen=True, kw_only=True)
class CompactSpan:
    """The turn compacts `span` by `action` ("summarize" or "mask"); `events` go out first."""

    span: SpanPlan
    action: str
    trigger: Trigger
    at_hard_cap: bool
    events: tuple[CompactionEvent, ...]


def open_turn(
    inputs: StepInputs, plan: TurnPlan, turn_id: str, *, now_ms: int, new_id: NewId
) -> CommitResult | CompactSpan:
    """What the turn does with `plan`: a finished result, or the span to compact."""
    decision = plan.decision
    if not decision.fires:
        return CommitResult(
            outcome=CompactionOutcome(status="skipped", plan=plan), spent_usd=inputs.spent_usd
        )
    forced = decision.action is TriggerAction.FORCED
    trigger: Trigger = "hard_cap" if forced else "threshold"
    if plan.span is None:
        # §3.3: no tool-cycle boundary in the candidate range. One failed event per turn:
        # at the hard cap truncate emits it, with truncated_message_count.
        return truncate_or_fail(
            inputs, plan, turn_id, forced, None, "no_valid_boundary", now_ms=now_ms, new_id=new_id
        )
    span = plan.span
    if plan.action is None:
        # The strategy has nothing to do with this span (`mask`: no result long enough to
        # mask). Only the hard cap gets here (not reducible otherwise).
        detail = f"the {plan.strategy} strategy has nothing left to remove at the hard cap"
        return truncate_or_fail(
            inputs,
            plan,
            turn_id,
            forced,
            None,
            "validation_failed",
            now_ms=now_ms,
            new_id=new_id,
            detail=detail,
        )
    events: list[CompactionEvent] = [started_event(inputs.session_id, turn_id, span, trigger)]
    if decision.reason is TriggerReason.BUDGET_EXHAUSTED_FORCED:
        # §3.1 step 2: the call runs anyway, and the overspend is reported.
        events.append(
            failed_event(
                inputs.session_id,
                turn_id,
                span.start,
                span.span_message_count,
                "budget_exhausted_forced",
                error_message=f"compaction budget spent (${inputs.spent_usd} of "
                f"${inputs.config.compaction_max_cost_per_session_usd}); compacting anyway "
                "at the hard cap",
            )
        )
    return CompactSpan(
        span=span, action=plan.action, trigger=trigger, at_hard_cap=forced, events=tuple(events)
    )


def summary_failed(
    inputs: StepInputs,
    plan: TurnPlan,
    turn_id: str,
    compact: CompactSpan,
    error: SummarizerError,
    *,
    now_ms: int,
    new_id: NewId,
) -> CommitResult:
    """The summary call failed: at the hard cap truncate emits the one failed event, with
    truncated_message_count; below it a failure only skips this turn and the next turn retries."""
    return truncate_or_fail(
        inputs,
        plan,
        turn_id,
        compact.at_hard_cap,
        compact.span,
        "adapter_error",
        now_ms=now_ms,
        new_id=new_id,
        error=error,
    )
