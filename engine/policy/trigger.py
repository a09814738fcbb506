"""§3.1: when compaction fires. One pure function, so the app shows exactly what a turn would do."""

from __future__ import annotations

import enum
from decimal import Decimal

import msgspec

from engine.config import CompactionConfig


class TriggerAction(enum.StrEnum):
    SKIP = "skip"
    SOFT = "soft"  # threshold crossed and the budget allows: attempt compaction
    FORCED = "forced"  # hard cap crossed: compact regardless of budget


class TriggerReason(enum.StrEnum):
    BELOW_THRESHOLD = "below_threshold"
    THRESHOLD_CROSSED = "threshold_crossed"
    BUDGET_EXHAUSTED_SKIP = "budget_exhausted_skip"  # §3.1 step 3: skip silently
    HARD_CAP_CROSSED = "hard_cap_crossed"
    BUDGET_EXHAUSTED_FORCED = "budget_exhausted_forced"  # §3.1 step 2: runs anyway, then degrades
    NOT_REDUCIBLE = "not_reducible"  # the last compaction could not get under the threshold
    MASK_WOULD_NOT_PAY = "mask_would_not_pay"  # its re-cache would cost more than it saves


class PressureZone(enum.StrEnum):
    """Where pending tokens stand against the two §3.1 limits (what the gauge and list colour)."""

    BELOW = "below"  # under the threshold
    SOFT = "soft"  # at or over the threshold: a soft compaction may run
    FORCED = "forced"  # at or over the hard cap: compaction is forced


def pressure_zone(pending_tokens: int, threshold_tokens: int, hard_cap_tokens: int) -> PressureZone:
    """§3.1 steps 2 and 4: each limit counts from the token that reaches it."""
    if pending_tokens >= hard_cap_tokens:
        return PressureZone.FORCED
    if pending_tokens >= threshold_tokens:
        return PressureZone.SOFT
    return PressureZone.BELOW


def budget_exhausted(spent_usd: Decimal, budget_usd: Decimal) -> bool:
    """§3.1: the session's compaction budget is spent once spending reaches it (a $0 budget is
    spent from the start). A call-free compaction (a mask) is not gated by it: decide_trigger."""
    return spent_usd >= budget_usd


class TriggerDecision(msgspec.Struct, frozen=True):
    action: TriggerAction
    reason: TriggerReason
    pending_history_tokens: int
    threshold_tokens: int
    hard_cap_tokens: int
    spent_usd: Decimal
    budget_usd: Decimal

    @property
    def fires(self) -> bool:
        return self.action is not TriggerAction.SKIP

    @property
    def zone(self) -> PressureZone:
        return pressure_zone(
            self.pending_history_tokens, self.threshold_tokens, self.hard_cap_tokens
        )

    @property
    def budget_exhausted(self) -> bool:
        return budget_exhausted(self.spent_usd, self.budget_usd)

    @property
    def tokens_to_threshold(self) -> int | None:
        """How far below the soft trigger this is, or None when it is not simply below it."""
        if self.reason is not TriggerReason.BELOW_THRESHOLD:
            return None
        return self.threshold_tokens - self.pending_history_tokens

    def explain(self) -> str:
        """One plain sentence for a status line."""
        pending = f"{self.pending_history_tokens:,} pending tokens"
        spend = f"${self.spent_usd} of ${self.budget_usd} spent"
        match self.reason:
            case TriggerReason.BELOW_THRESHOLD:
                return f"skip: {pending} is below the threshold of {self.threshold_tokens:,}"
            case TriggerReason.THRESHOLD_CROSSED:
                return f"soft: {pending} reaches the threshold of {self.threshold_tokens:,}"
            case TriggerReason.BUDGET_EXHAUSTED_SKIP:
                return f"skip: threshold reached but the budget is spent ({spend})"
            case TriggerReason.HARD_CAP_CROSSED:
                return f"forced: {pending} reaches the hard cap of {self.hard_cap_tokens:,}"
            case TriggerReason.BUDGET_EXHAUSTED_FORCED:
                return (
                    f"forced past the budget ({spend}): hard cap {self.hard_cap_tokens:,} reached"
                )
            case TriggerReason.NOT_REDUCIBLE:
                return (
                    f"skip: {pending} is over the threshold, but what compaction cannot remove "
                    "(earlier summaries, a kept tool cycle) is over it alone"
                )
            case TriggerReason.MASK_WOULD_NOT_PAY:
                return (
                    f"skip: {pending} is over the threshold, but masking would save too little "
                    "to pay back rewriting the prompt cache"
                )
        raise AssertionError(self.reason)  # pragma: no cover


def decide_trigger(
    pending_history_tokens: int,
    config: CompactionConfig,
    spent_usd: Decimal,
    *,
    reducible: bool = True,
    free: bool = False,
    pays: bool = True,
) -> TriggerDecision:
    """§3.1 steps 2-4. `reducible` is False when compacting the span could not bring pending tokens
    under the threshold (or there is no span): a soft compaction would then fire again every turn,
    the loop users of other agents report. The hard cap still forces (§3.1 step 2). `free`: the
    compaction makes no call (a mask), so the budget does not gate it. `pays` False: a mask that
    would not pay back its re-cache (strategies.mask_pays) waits below the hard cap."""
    budget = config.compaction_max_cost_per_session_usd
    exhausted = budget_exhausted(spent_usd, budget) and not free

    def decision(action: TriggerAction, reason: TriggerReason) -> TriggerDecision:
        return TriggerDecision(
            action,
            reason,
            pending_history_tokens,
            config.compaction_threshold_tokens,
            config.compaction_hard_cap_tokens,
            spent_usd,
            budget,
        )

    zone = pressure_zone(
        pending_history_tokens,
        config.compaction_threshold_tokens,
        config.compaction_hard_cap_tokens,
    )
    if zone is PressureZone.FORCED:
        if exhausted:
            return decision(TriggerAction.FORCED, TriggerReason.BUDGET_EXHAUSTED_FORCED)
        return decision(TriggerAction.FORCED, TriggerReason.HARD_CAP_CROSSED)
    if zone is PressureZone.SOFT:
        if exhausted:
            return decision(TriggerAction.SKIP, TriggerReason.BUDGET_EXHAUSTED_SKIP)
        if not reducible:
            return decision(TriggerAction.SKIP, TriggerReason.NOT_REDUCIBLE)
        if not pays:
            return decision(TriggerAction.SKIP, TriggerReason.MASK_WOULD_NOT_PAY)
        return decision(TriggerAction.SOFT, TriggerReason.THRESHOLD_CROSSED)
    return decision(TriggerAction.SKIP, TriggerReason.BELOW_THRESHOLD)
