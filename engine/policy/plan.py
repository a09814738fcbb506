"""The whole §3.1-§3.3 decision for one turn, as data: the one function the manager, the store's
session list, the dashboard, the CLI and the projection all ask, so they cannot disagree."""

from __future__ import annotations

from decimal import Decimal

from engine.config import CompactionConfig
from engine.history import History
from engine.outcomes import TurnPlan
from engine.policy.span import has_compactable_messages, pending_history_tokens, plan_span
from engine.policy.trigger import decide_trigger


def plan_turn(history: History, config: CompactionConfig, spent_usd: Decimal) -> TurnPlan:
    """The whole §3.1-§3.3 decision for one turn, as data. O(1) plus the boundary slide."""
    preserve = config.compaction_preserve_recent_turns
    pending = pending_history_tokens(history, preserve)
    span = plan_span(history, preserve)
    irreducible = None
    reducible = False  # nothing compactable: a soft trigger would only fail every turn
    if span is not None:
        # No loops: when what compaction cannot remove (earlier summaries, a message kept for a
        # tool cycle) is over the threshold by itself, a soft compaction would fire every turn.
        irreducible = pending - span.span_tokens
        reducible = irreducible < config.compaction_threshold_tokens
    elif has_compactable_messages(history, preserve):
        # §3.3: a candidate range with no tool-cycle boundary is reported as no_valid_boundary
        # when the trigger fires (an event, no call), not hidden as not reducible.
        reducible = True
    decision = decide_trigger(pending, config, spent_usd, reducible=reducible)
    return TurnPlan(
        decision=decision,
        span=span,
        boundary_found=span is not None or not has_compactable_messages(history, preserve),
        floor=history.floor,
        stable_prefix_end=history.stable_prefix_end,
        message_count=len(history),
        preserve_recent_turns=preserve,
        irreducible_tokens=irreducible,
    )
