"""engine.summary_checks: one rule for every summarizer kind. A summary longer than the call's
max_tokens (the engine's count) is cut to it, and says so; usage or a cost that cannot be true for
the request is replaced by the request's bound, and says so. The pure functions, then a plugin
summarizer (injected, real SessionManager) and the offline one held to the same rule."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.manager import SessionManager
from engine.policy.summary_budget import SummaryCallPrice
from engine.summarizers.base import SummaryRequest, SummaryResult
from engine.summarizers.pricing import CallUsage
from engine.summary_checks import (
    SUMMARY_OVER_BUDGET,
    USAGE_IMPLAUSIBLE,
    CallBounds,
    check_answer,
    cut_to_budget,
    request_bounds,
)
from engine.tokens import estimate_text_tokens
from tests.history_builders import tool_session

BOUNDS = CallBounds(
    max_tokens=100,
    input_tokens=2_000,
    max_input_tokens=50_000,
    bound_cost_usd=Decimal("0.0025"),
    cost_ceiling_usd=Decimal("0.5"),
)


def result(
    text: str = "a fine summary",
    tokens_in: object = 2_000,
    tokens_out: object = 10,
    cost: object = Decimal("0.001"),
    usage: CallUsage | None = None,
) -> SummaryResult:
    return SummaryResult(text, "m", tokens_in, tokens_out, cost, 5, usage)  # type: ignore[arg-type]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=3_000), st.integers(min_value=1, max_value=400))
def test_a_cut_summary_always_fits_and_a_fitting_one_is_untouched(text: str, budget: int) -> None:
    cut, had = cut_to_budget(text, budget, estimate_text_tokens)
    assert estimate_text_tokens(cut) <= budget
    if estimate_text_tokens(text) <= budget:
        assert cut == text and had == estimate_text_tokens(text)
    else:
        assert had > budget and cut != text
        assert cut.endswith(f"[summary cut to {budget:,} tokens]") or len(cut) < 40


def test_an_honest_answer_passes_unchanged() -> None:
    usage = CallUsage(input_tokens=1_500, cache_read_tokens=400, output_tokens=10)
    checked = check_answer(result(usage=usage), BOUNDS, estimate_text_tokens)
    assert (checked.text, checked.tokens_in, checked.tokens_out) == ("a fine summary", 2_000, 10)
    assert checked.cost_usd == Decimal("0.001") and checked.usage == usage and not checked.notes


LIES = {
    "output over max_tokens": dict(tokens_out=10**15),
    "input over the request": dict(tokens_in=10**15),
    "negative output": dict(tokens_out=-1),
    "float input": dict(tokens_in=12.5),
    "bool output": dict(tokens_out=True),
    "missing usage count": dict(usage=CallUsage(input_tokens=None, output_tokens=5)),  # type: ignore[arg-type]
    "negative cache read": dict(usage=CallUsage(input_tokens=5, cache_read_tokens=-3)),
    "text longer than its output": dict(text="word " * 500, tokens_out=2,
                                        usage=CallUsage(input_tokens=5, output_tokens=2)),
    "cost NaN": dict(cost=Decimal("NaN")),
    "cost negative": dict(cost=Decimal("-1")),
    "cost a string": dict(cost="0.001"),
    "cost over the ceiling": dict(cost=Decimal("5000000000")),
}  # fmt: skip


@pytest.mark.parametrize("lie", LIES)
def test_an_impossible_figure_is_charged_at_the_bound_and_said(lie: str) -> None:
    checked = check_answer(result(**LIES[lie]), BOUNDS, estimate_text_tokens)  # type: ignore[arg-type]
    assert checked.cost_usd == BOUNDS.bound_cost_usd and checked.usage is None
    assert checked.tokens_in == BOUNDS.input_tokens
    assert checked.tokens_out == estimate_text_tokens(checked.text) <= BOUNDS.max_tokens
    [note] = [n for n in checked.notes if n.startswith(USAGE_IMPLAUSIBLE)]
    assert note.endswith(f"charged at the request's bound ${BOUNDS.bound_cost_usd}")


def test_the_bounds_come_from_the_request_and_the_price() -> None:
    request = SummaryRequest(
        span=tuple(tool_session(3, size=300)), prompt_version="1", max_tokens=400
    )
    price = SummaryCallPrice(
        input_usd=Decimal("0.002"),
        output_per_token=Decimal("0.000005"),
        cache_write_per_token=Decimal("0.00000125"),
        cache_read_per_token=Decimal("0.0000001"),
    )
    bounds = request_bounds(request, price, 1_000)
    assert bounds.bound_cost_usd == Decimal("0.002") + 400 * Decimal("0.000005")
    assert bounds.max_input_tokens > 1_000 and bounds.max_tokens == 400
    assert bounds.cost_ceiling_usd is not None and bounds.cost_ceiling_usd > bounds.bound_cost_usd


class Flooding:
    """A plugin summarizer that answers far past max_tokens and reports a billion-dollar cost."""

    name = "flood:v1"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        text = "a fact the summary repeats\n" * 50_000
        return SummaryResult(text, self.name, 10, 10**12, Decimal("5000000000"), 3)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return Decimal("0.000001") * tokens_in + Decimal("0.00001") * max_tokens

    async def aclose(self) -> None:
        return None


KNOBS = {
    "compaction_threshold_tokens": 300,
    "compaction_hard_cap_tokens": 1_500,
    "compaction_preserve_recent_turns": 2,
    "compaction_max_summary_tokens": 200,
}


async def test_a_plugins_answer_is_held_to_the_same_rule(tmp_path: Path) -> None:
    manager = SessionManager(
        history=tool_session(6, size=300),
        compaction_model="flood:v1",
        summarizer=Flooding(),
        workspace=tmp_path,
        **KNOBS,
    )
    outcome = await manager.before_turn("t1")
    assert outcome.status == "compacted" and outcome.record is not None
    notes = outcome.record.notes
    assert any(n.startswith(f"{SUMMARY_OVER_BUDGET}: summary cut to ") for n in notes), notes
    assert any(n.startswith(USAGE_IMPLAUSIBLE) for n in notes), notes
    assert outcome.record.span_token_count_out <= 200
    assert manager.history.total_tokens <= 1_500
    assert Decimal(0) < manager.spent_usd < Decimal("0.01")  # the bound, not $5e9
    await manager.aclose()


async def test_the_offline_summarizer_passes_the_same_checks_untouched(tmp_path: Path) -> None:
    manager = SessionManager(
        history=tool_session(6, size=300),
        compaction_model="local:extractive",
        workspace=tmp_path,
        **KNOBS,
    )
    outcome = await manager.before_turn("t1")
    assert outcome.status == "compacted" and outcome.record is not None
    assert outcome.record.notes == ()  # it keeps to its budget and its (zero) cost
    assert manager.spent_usd == 0
    await manager.aclose()
