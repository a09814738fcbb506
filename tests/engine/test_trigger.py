"""§3.1: decide_trigger, every branch, with exact Decimal budget arithmetic."""

from __future__ import annotations

from decimal import Decimal

import pytest

from engine.config import CompactionConfig
from engine.policy.trigger import TriggerAction, TriggerDecision, TriggerReason, decide_trigger

CONFIG = CompactionConfig(
    compaction_threshold_tokens=30_000,
    compaction_hard_cap_tokens=80_000,
    compaction_max_cost_per_session_usd=Decimal("0.20"),
    compaction_model="local:extractive",
)
NOTHING_SPENT = Decimal(0)


def decide(pending: int, spent: Decimal = NOTHING_SPENT, **options: bool) -> TriggerDecision:
    return decide_trigger(pending, CONFIG, spent, **options)


@pytest.mark.parametrize("pending", [0, 1, 29_999])
def test_below_the_threshold_skips(pending: int) -> None:
    decision = decide(pending)
    assert (decision.action, decision.reason) == (TriggerAction.SKIP, TriggerReason.BELOW_THRESHOLD)
    assert not decision.fires


@pytest.mark.parametrize("pending", [30_000, 30_001, 79_999])
def test_at_or_over_the_threshold_is_soft(pending: int) -> None:
    decision = decide(pending)
    assert (decision.action, decision.reason) == (
        TriggerAction.SOFT,
        TriggerReason.THRESHOLD_CROSSED,
    )
    assert decision.fires


@pytest.mark.parametrize("pending", [80_000, 80_001, 10**9])
def test_at_or_over_the_hard_cap_is_forced(pending: int) -> None:
    decision = decide(pending)
    assert (decision.action, decision.reason) == (
        TriggerAction.FORCED,
        TriggerReason.HARD_CAP_CROSSED,
    )


@pytest.mark.parametrize("spent", [Decimal("0.20"), Decimal("0.2000"), Decimal("0.21"), Decimal(5)])
def test_spent_budget_below_the_cap_skips_silently(spent: Decimal) -> None:
    decision = decide(50_000, spent)
    assert (decision.action, decision.reason) == (
        TriggerAction.SKIP,
        TriggerReason.BUDGET_EXHAUSTED_SKIP,
    )
    assert not decision.fires


def test_spent_budget_at_the_cap_still_forces_and_says_budget_exhausted() -> None:
    decision = decide(80_000, Decimal("0.20"))
    assert (decision.action, decision.reason) == (
        TriggerAction.FORCED,
        TriggerReason.BUDGET_EXHAUSTED_FORCED,
    )
    assert decision.fires


def test_spent_budget_below_the_threshold_is_just_below_threshold() -> None:
    decision = decide(10, Decimal(100))
    assert decision.reason is TriggerReason.BELOW_THRESHOLD


def test_budget_is_compared_exactly_not_as_floats() -> None:
    config = CONFIG.replace(compaction_max_cost_per_session_usd=Decimal("0.30"))
    # In floats 0.1 + 0.2 overshoots 0.3; in Decimal two charges land exactly on the budget.
    assert 0.1 + 0.2 != 0.3
    spent = Decimal("0.1") + Decimal("0.2")
    assert decide_trigger(50_000, config, spent).reason is TriggerReason.BUDGET_EXHAUSTED_SKIP
    # One hundred-millionth of a dollar below the budget is not exhausted.
    just_below = Decimal("0.30") - Decimal("0.00000001")
    decision = decide_trigger(50_000, config, just_below)
    assert decision.reason is TriggerReason.THRESHOLD_CROSSED
    assert decision.spent_usd == Decimal("0.29999999")
    assert isinstance(decision.budget_usd, Decimal)


def test_zero_budget_is_always_exhausted() -> None:
    config = CONFIG.replace(compaction_max_cost_per_session_usd=Decimal(0))
    assert decide_trigger(50_000, config, Decimal(0)).reason is TriggerReason.BUDGET_EXHAUSTED_SKIP
    forced = decide_trigger(90_000, config, Decimal(0))
    assert forced.reason is TriggerReason.BUDGET_EXHAUSTED_FORCED


def test_not_reducible_skips_over_the_threshold() -> None:
    decision = decide(50_000, reducible=False)
    assert (decision.action, decision.reason) == (TriggerAction.SKIP, TriggerReason.NOT_REDUCIBLE)


def test_not_reducible_does_not_stop_the_hard_cap() -> None:
    decision = decide(80_000, reducible=False)
    assert decision.action is TriggerAction.FORCED


def test_not_reducible_below_the_threshold_is_below_threshold() -> None:
    assert decide(100, reducible=False).reason is TriggerReason.BELOW_THRESHOLD


def test_spent_budget_takes_precedence_over_not_reducible() -> None:
    assert decide(50_000, Decimal(1), reducible=False).reason is (
        TriggerReason.BUDGET_EXHAUSTED_SKIP
    )


def test_decision_carries_the_numbers_it_was_made_from() -> None:
    decision = decide(45_678, Decimal("0.05"))
    assert decision.pending_history_tokens == 45_678
    assert decision.threshold_tokens == 30_000
    assert decision.hard_cap_tokens == 80_000
    assert decision.spent_usd == Decimal("0.05")
    assert decision.budget_usd == Decimal("0.20")


def test_decision_follows_the_config_not_the_defaults() -> None:
    config = CONFIG.replace(compaction_threshold_tokens=10, compaction_hard_cap_tokens=20)
    assert decide_trigger(10, config, Decimal(0)).action is TriggerAction.SOFT
    assert decide_trigger(20, config, Decimal(0)).action is TriggerAction.FORCED


# --- explain() ---------------------------------------------------------------------------------


def test_explain_below_threshold_names_pending_and_threshold() -> None:
    text = decide(12_345).explain()
    assert text.startswith("skip")
    assert "12,345" in text
    assert "30,000" in text


def test_explain_soft_names_pending_and_threshold() -> None:
    text = decide(31_000).explain()
    assert text.startswith("soft")
    assert "31,000" in text
    assert "30,000" in text


def test_explain_forced_names_the_hard_cap() -> None:
    text = decide(81_000).explain()
    assert text.startswith("forced")
    assert "81,000" in text
    assert "80,000" in text


def test_explain_budget_skip_names_spend_and_budget() -> None:
    text = decide(31_000, Decimal("0.25")).explain()
    assert text.startswith("skip")
    assert "$0.25" in text
    assert "$0.20" in text


def test_explain_budget_forced_names_spend_budget_and_cap() -> None:
    text = decide(90_000, Decimal("0.3")).explain()
    assert text.startswith("forced")
    assert "$0.3" in text
    assert "$0.20" in text
    assert "80,000" in text


def test_explain_not_reducible_names_pending_and_says_why() -> None:
    text = decide(40_000, reducible=False).explain()
    assert text.startswith("skip")
    assert "40,000" in text
    assert "summaries" in text


def test_every_reason_has_an_explanation() -> None:
    decisions = [
        decide(1),
        decide(31_000),
        decide(31_000, Decimal(1)),
        decide(81_000),
        decide(81_000, Decimal(1)),
        decide(31_000, reducible=False),
        decide(31_000, free=True, pays=False),
    ]
    assert {d.reason for d in decisions} == set(TriggerReason)
    assert len({d.explain() for d in decisions}) == len(decisions)


def test_a_mask_that_would_not_pay_waits_below_the_hard_cap_and_is_forced_at_it() -> None:
    waits = decide(31_000, free=True, pays=False)
    assert (waits.action, waits.reason) == (TriggerAction.SKIP, TriggerReason.MASK_WOULD_NOT_PAY)
    assert "pay back" in waits.explain()
    forced = decide(81_000, free=True, pays=False)
    assert (forced.action, forced.reason) == (TriggerAction.FORCED, TriggerReason.HARD_CAP_CROSSED)
