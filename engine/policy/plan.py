"""The whole §3.1-§3.3 decision for one turn, as data: the one function the manager, the store's
session list, the dashboard, the CLI and the projection all ask, so they cannot disagree."""

from __future__ import annotations

from decimal import Decimal

import msgspec

from engine.config import CompactionConfig
from engine.history import History
from engine.policy.span import (
    SpanPlan,
    has_compactable_messages,
    nominal_watermark,
    pending_history_tokens,
    plan_span,
)
from engine.policy.strategies import mask_pays, plan_strategy
from engine.policy.trigger import TriggerDecision, decide_trigger


class TurnPlan(msgspec.Struct, frozen=True):
    """What the engine would do at the start of this turn, and why (pure: nothing is called)."""

    decision: TriggerDecision
    span: SpanPlan | None  # None: nothing compactable, or no valid boundary (see boundary_found)
    boundary_found: bool
    floor: int  # first compactable index: just past the last summary
    stable_prefix_end: int
    message_count: int
    preserve_recent_turns: int
    nominal_watermark: int  # §3.2: where the preserved tail starts, before any slide
    irreducible_tokens: int | None  # pending tokens compaction of this span cannot remove
    # engine.policy.strategies: the configured strategy, what it would do with `span` (summarize
    # or mask; None: nothing to do), and the tokens that is expected to remove.
    strategy: str = "summarize"
    action: str | None = None
    expected_saved_tokens: int | None = None


def plan_turn(history: History, config: CompactionConfig, spent_usd: Decimal) -> TurnPlan:
    """The whole §3.1-§3.3 decision for one turn, as data, with what the configured strategy
    (engine.policy.strategies) would do. O(1) plus the boundary slide for `summarize`; a mask's
    estimate reads the span's tool results."""
    preserve = config.compaction_preserve_recent_turns
    pending = pending_history_tokens(history, preserve)
    planned = plan_strategy(
        history,
        config.compaction_strategy,
        preserve,
        config.compaction_threshold_tokens,
        config.compaction_max_summary_tokens,
    )
    span = planned.span if planned is not None else plan_span(history, preserve)
    irreducible = None
    reducible = False  # nothing compactable: a soft trigger would only fail every turn
    if planned is not None:
        # No loops: when what compaction cannot remove (earlier summaries, a message kept for a
        # tool cycle, tool results too short to mask) is over the threshold by itself, a soft
        # compaction would fire every turn.
        removable = (
            planned.expected_saved_tokens if planned.action == "mask" else planned.span.span_tokens
        )
        irreducible = pending - removable
        reducible = irreducible < config.compaction_threshold_tokens
    elif span is None and has_compactable_messages(history, preserve):
        # §3.3: a candidate range with no tool-cycle boundary is reported as no_valid_boundary
        # when the trigger fires (an event, no call), not hidden as not reducible.
        reducible = True
    action = planned.action if planned is not None else None
    # A mask that would not pay back its §7 re-cache waits below the hard cap (hybrid already
    # summarizes instead; see strategies.mask_pays).
    pays = (
        action != "mask"
        or planned is None
        or mask_pays(
            config.compaction_strategy, history.total_tokens, planned.expected_saved_tokens
        )
    )
    # A mask makes no call, so the budget does not gate it.
    decision = decide_trigger(
        pending, config, spent_usd, reducible=reducible, free=action == "mask", pays=pays
    )
    return TurnPlan(
        decision=decision,
        span=span,
        boundary_found=span is not None or not has_compactable_messages(history, preserve),
        floor=history.floor,
        stable_prefix_end=history.stable_prefix_end,
        message_count=len(history),
        preserve_recent_turns=preserve,
        nominal_watermark=nominal_watermark(history, preserve),
        irreducible_tokens=irreducible,
        strategy=config.compaction_strategy,
        action=action,
        expected_saved_tokens=planned.expected_saved_tokens if planned is not None else None,
    )
