"""§3.1 at the start of a turn, once planned: compact (summary or mask), fall back, or skip."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.compaction.commit import commit_prepared
from engine.compaction.deps import Trigger
from engine.compaction.fallback_run import truncate_or_fail
from engine.compaction.summary_call import prepare_mask, prepare_summary
from engine.compaction.writes import emit_failed, emit_started
from engine.outcomes import CompactionOutcome, SpanChanged, TurnPlan
from engine.policy.span import SpanPlan
from engine.policy.trigger import TriggerAction
from engine.summarizers import SummarizerError

if TYPE_CHECKING:
    from engine.manager import SessionManager


async def run_turn(manager: SessionManager, plan: TurnPlan, turn_id: str) -> CompactionOutcome:
    decision = plan.decision
    if not decision.fires:
        return CompactionOutcome(status="skipped", plan=plan)
    forced = decision.action is TriggerAction.FORCED
    trigger: Trigger = "hard_cap" if forced else "threshold"
    if plan.span is None:
        # §3.3: no tool-cycle boundary in the candidate range. One failed event per turn:
        # at the hard cap truncate emits it, with truncated_message_count.
        return truncate_or_fail(manager, plan, turn_id, forced, None, "no_valid_boundary")
    span = plan.span
    if plan.action is None:
        # The strategy has nothing to do with this span (`mask`: no result long enough to
        # mask). Only the hard cap gets here (not reducible otherwise).
        detail = f"the {plan.strategy} strategy has nothing left to remove at the hard cap"
        return truncate_or_fail(
            manager, plan, turn_id, forced, None, "validation_failed", detail=detail
        )
    emit_started(manager, turn_id, span, trigger)
    if decision.reason == "budget_exhausted_forced":
        # §3.1 step 2: the call runs anyway, and the overspend is reported.
        emit_failed(
            manager,
            turn_id,
            span.start,
            span.span_message_count,
            "budget_exhausted_forced",
            error_message=f"compaction budget spent (${manager.spent_usd} of "
            f"${manager.config.compaction_max_cost_per_session_usd}); compacting anyway "
            "at the hard cap",
        )
    try:
        if plan.action == "mask":
            return commit_prepared(manager, plan, prepare_mask(manager, span, trigger), turn_id)
        return await summarize_and_commit(manager, plan, span, turn_id, trigger)
    except SpanChanged:
        # Another process (the app's "compact now") committed first: take its result.
        manager.sync()
        return CompactionOutcome(status="skipped", plan=manager.plan())


async def summarize_and_commit(
    manager: SessionManager, plan: TurnPlan, span: SpanPlan, turn_id: str, trigger: Trigger
) -> CompactionOutcome:
    try:
        prepared = await prepare_summary(manager, span, None, trigger)
    except SummarizerError as error:
        # At the hard cap truncate emits the one failed event, with truncated_message_count;
        # below it a failure only skips this turn and the next turn retries.
        forced = plan.decision.action is TriggerAction.FORCED
        return truncate_or_fail(manager, plan, turn_id, forced, span, "adapter_error", error=error)
    return commit_prepared(manager, plan, prepared, turn_id)
