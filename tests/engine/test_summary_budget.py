"""The summary's max_tokens, chosen from what pays (engine.policy.summary_budget), and the manager
sending it: unit tests of the rule, a property of it, and the request the real SDK sends."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.manager import SessionManager
from engine.messages import Message, Role, TextContentBlock
from engine.policy.summary_budget import (
    BUDGET_STEP,
    FREE,
    MIN_SUMMARY_TOKENS,
    SummaryCallPrice,
    payback_turns_for,
    summary_budget,
)
from engine.prompt import length_target
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from engine.summarizers.base import SummaryRequest, SummaryResult
from engine.summarizers.pricing import ModelPrice, price_for, price_from_rates
from engine.summarizers.request import SessionPrefix, primary_request
from tests.messages_api_server import MessagesAPIServer, ok, realistic

PER = Decimal(1_000_000)
# claude-haiku-4-5 per token, and the input of a call on the session's cached prefix that reads
# a 36k-token history from the cache (the mixed workload's first compaction measured $0.0042).
HAIKU = SummaryCallPrice(
    input_usd=Decimal("0.0042"),
    output_per_token=Decimal(5) / PER,
    cache_write_per_token=Decimal("1.25") / PER,
    cache_read_per_token=Decimal("0.1") / PER,
)


def test_the_budget_is_the_longest_summary_that_pays_back_within_n_turns() -> None:
    budget = summary_budget(31_319, 1_118, HAIKU, ceiling=2_000, payback_turns=3)
    # (3 * 0.1 * 31,319 + 0.1 * 32,437 - 1.25 * 1,118 - 4,200) / (5 + 1.25 + 0.3) = 1,075.1
    assert budget == 1_050  # rounded down to the 50-token step
    turns = payback_turns_for(31_319, 1_118, budget, HAIKU)
    assert turns is not None and turns <= 3
    over = payback_turns_for(31_319, 1_118, budget + BUDGET_STEP, HAIKU)
    assert over is not None and over > 3
    # The full ceiling would take twice as long: what the rule is for.
    ceiling_turns = payback_turns_for(31_319, 1_118, 2_000, HAIKU)
    assert ceiling_turns is not None and ceiling_turns > 5
    # More turns allowed: a longer summary.
    assert summary_budget(31_319, 1_118, HAIKU, ceiling=2_000, payback_turns=6) > budget


def test_a_span_too_small_to_pay_back_still_gets_the_floor() -> None:
    assert summary_budget(2_000, 500, HAIKU, ceiling=2_000, payback_turns=3) == MIN_SUMMARY_TOKENS
    # ... but never more than the ceiling.
    assert summary_budget(2_000, 500, HAIKU, ceiling=300, payback_turns=3) == 300


def test_a_free_summarizer_and_a_rule_turned_off_keep_the_ceiling() -> None:
    assert summary_budget(31_319, 1_118, FREE, ceiling=2_000, payback_turns=3) == 2_000
    assert summary_budget(31_319, 1_118, HAIKU, ceiling=2_000, payback_turns=0) == 2_000


def test_the_ceiling_holds_however_well_a_summary_would_pay() -> None:
    cheap = SummaryCallPrice(
        input_usd=Decimal(0),
        output_per_token=Decimal("0.01") / PER,
        cache_write_per_token=Decimal("1.25") / PER,
        cache_read_per_token=Decimal("0.1") / PER,
    )
    assert summary_budget(500_000, 0, cheap, ceiling=2_000, payback_turns=3) == 2_000


@st.composite
def prices(draw: st.DrawFn) -> SummaryCallPrice:
    """Any provider's shape: a cache read costs less than a cache write."""
    write = draw(st.decimals("0.0000001", "0.00002", places=8))
    return SummaryCallPrice(
        input_usd=draw(st.decimals(0, "0.05", places=6)),
        output_per_token=draw(st.decimals("0.0000001", "0.0001", places=8)),
        cache_write_per_token=write,
        cache_read_per_token=write * draw(st.decimals("0.01", "0.9", places=2)),
    )


@given(
    span=st.integers(0, 400_000),
    kept=st.integers(0, 100_000),
    price=prices(),
    ceiling=st.integers(1, 10_000),
    turns=st.integers(1, 20),
)
def test_property_a_budget_inside_its_bounds_pays_back_and_one_step_more_would_not(
    span: int, kept: int, price: SummaryCallPrice, ceiling: int, turns: int
) -> None:
    budget = summary_budget(span, kept, price, ceiling=ceiling, payback_turns=turns)
    low = min(MIN_SUMMARY_TOKENS, ceiling)
    assert low <= budget <= ceiling
    if low < budget < ceiling:
        assert budget % BUDGET_STEP == 0
        paid = payback_turns_for(span, kept, budget, price)
        assert paid is not None and paid <= turns
        more = payback_turns_for(span, kept, budget + BUDGET_STEP, price)
        assert more is None or more > turns


# -- through SessionManager, the real SDK and a local Messages API server ------------------------


def long_history(turns: int = 30) -> list[Message]:
    """A plain conversation of about 1,000 tokens a turn (len/3 estimator)."""
    out: list[Message] = []
    for turn in range(turns):
        words = " ".join(f"step{turn}-{i} of the ledger migration" for i in range(70))
        out.append(Message(id=f"u{turn}", role=Role.USER, content=(TextContentBlock(words),)))
        out.append(Message(id=f"a{turn}", role=Role.ASSISTANT, content=(TextContentBlock(words),)))
    return out


def manager_for(summarizer: AnthropicSummarizer, history: list[Message]) -> SessionManager:
    return SessionManager(
        history=history,
        compaction_model=summarizer.name,
        summarizer=summarizer,
        compaction_max_summary_tokens=2_000,
        compaction_preserve_recent_turns=2,
    )


def local_summarizer(server: MessagesAPIServer, model: str, **options: Any) -> AnthropicSummarizer:
    """The real SDK client, pointed at the local server, no retries."""
    return AnthropicSummarizer(
        model, api_key="sk-ant-test-budget", base_url=server.base_url, max_retries=0, **options
    )


@pytest.mark.asyncio
async def test_the_request_max_tokens_is_the_rules_and_the_prompt_states_it(
    server: MessagesAPIServer,
) -> None:
    server.script(ok("## Goal\n- migrate the ledger", input_tokens=640, output_tokens=20))
    prefix = SessionPrefix(model="anthropic:claude-haiku-4-5", system="You are the agent.")
    summarizer = local_summarizer(server, "claude-haiku-4-5", session_prefix=prefix)
    history = long_history()
    manager = manager_for(summarizer, history)
    try:
        preview = manager.preview()
        assert preview is not None
        span = preview.span
        kept = manager.history.total_tokens - span.span_tokens
        request_price = summarizer.call_price(
            _request(manager, span.start, span.compaction_watermark)
        )
        expected = summary_budget(
            span.span_tokens, kept, request_price, ceiling=2_000, payback_turns=3
        )
        assert MIN_SUMMARY_TOKENS < expected < 2_000  # the rule, not a clamp, decides here
        await manager.prepare()
    finally:
        await manager.aclose()
    (sent,) = server.requests
    body = sent.body
    assert isinstance(body, dict)
    assert body["max_tokens"] == expected
    instruction = body["messages"][-1]["content"][-1]["text"]
    assert length_target(expected) in instruction
    # The preview priced the same budget.
    assert preview.estimated_cost_usd == summarizer.estimate_cost(span.span_tokens, expected)


@pytest.mark.asyncio
async def test_a_summarizer_priced_at_zero_is_sent_the_ceiling(server: MessagesAPIServer) -> None:
    server.script(ok("## Goal\n- migrate the ledger"))
    free = price_from_rates("local-model", Decimal(0), Decimal(0))
    summarizer = local_summarizer(server, "local-model", price=free)
    manager = manager_for(summarizer, long_history())
    try:
        await manager.prepare()
    finally:
        await manager.aclose()
    (sent,) = server.requests
    assert isinstance(sent.body, dict) and sent.body["max_tokens"] == 2_000


def _request(manager: SessionManager, start: int, end: int) -> SummaryRequest:
    return SummaryRequest(
        span=tuple(manager.history.messages[start:end]),
        prompt_version=manager.config.compaction_summary_prompt_version,
        max_tokens=manager.config.compaction_max_summary_tokens,
        history=tuple(manager.history.messages),
        span_start=start,
    )


class OddlyPricedSummarizer:
    """A summarizer of someone else's making whose pricing is broken: the compaction must still
    run, with the ceiling, as before the pay-back budget."""

    name = "acme:summarizer"

    def __init__(self, cost: object) -> None:
        self.cost = cost
        self.max_tokens: list[int] = []

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.max_tokens.append(request.max_tokens)
        return SummaryResult(
            text="## Goal\n- migrate the ledger",
            model=self.name,
            tokens_in=100,
            tokens_out=10,
            cost_usd=Decimal(0),
            latency_ms=0,
        )

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        if isinstance(self.cost, Exception):
            raise self.cost
        return self.cost  # type: ignore[return-value]

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("cost", [RuntimeError("no price list"), float("nan"), "$1", Decimal(-1)])
@pytest.mark.asyncio
async def test_a_summarizer_whose_price_cannot_be_read_is_sent_the_ceiling(cost: object) -> None:
    summarizer = OddlyPricedSummarizer(cost)
    manager = SessionManager(
        history=long_history(),
        compaction_model=summarizer.name,
        summarizer=summarizer,
        compaction_max_summary_tokens=2_000,
        compaction_preserve_recent_turns=2,
    )
    try:
        prepared = await manager.prepare()
    finally:
        await manager.aclose()
    assert summarizer.max_tokens == [2_000]
    assert prepared.summary.startswith("## Goal")


@pytest.mark.asyncio
async def test_the_projected_call_cost_is_what_the_provider_bills() -> None:
    """call_price against a server that bills each request through an emulated prompt cache,
    after the session's own primary call cached its history: within 3% either way."""
    prefix = SessionPrefix(model="anthropic:claude-haiku-4-5", system="You are the agent. " * 200)
    history = tuple(long_history())
    with MessagesAPIServer(default=realistic(), responder=lambda body: "## Goal\n- go") as server:
        system, tools, messages = primary_request(prefix, history[:-1])
        server.prompt_cache.bill({"system": system, "tools": tools, "messages": messages})
        summarizer = local_summarizer(server, "claude-haiku-4-5", session_prefix=prefix)
        request = SummaryRequest(
            span=history[:50], prompt_version="1.2.0", max_tokens=1_000, history=history
        )
        try:
            projected = summarizer.call_price(request)
            result = await summarizer.summarize(request)
        finally:
            await summarizer.aclose()
    assert result.usage is not None and result.usage.cache_read_tokens > 0
    billed_input = result.cost_usd - projected.output_per_token * result.tokens_out
    assert abs(billed_input - projected.input_usd) <= Decimal("0.03") * billed_input
    # The same span sent standalone would have been priced at ten times the input.
    alone = AnthropicSummarizer("claude-haiku-4-5", api_key="sk-ant-test-budget")
    try:
        assert alone.call_price(request).input_usd > 5 * projected.input_usd
    finally:
        await alone.aclose()


@pytest.mark.asyncio
async def test_a_stated_price_for_the_sessions_own_model_prices_its_cache_too() -> None:
    """The session's primary model is the summarizer's own, at a price the user stated: the
    transcript's cache rates are that price's, not the price table's for the same name."""
    prefix = SessionPrefix(model="anthropic:claude-haiku-4-5", system="You are the agent.")
    stated = ModelPrice(
        model="claude-haiku-4-5",
        input_per_mtok=Decimal("2"),
        output_per_mtok=Decimal("8"),
        cache_write_per_mtok=Decimal("3"),
        cache_read_per_mtok=Decimal("0.5"),
    )
    request = SummaryRequest(
        span=tuple(long_history())[:20], prompt_version="1.2.0", max_tokens=500
    )
    own = AnthropicSummarizer(
        "claude-haiku-4-5", api_key="sk-ant-test-budget", session_prefix=prefix, price=stated
    )
    other = AnthropicSummarizer(
        "claude-sonnet-4-5",
        api_key="sk-ant-test-budget",
        session_prefix=prefix,
        price=stated,
    )
    try:
        mine, theirs = own.call_price(request), other.call_price(request)
    finally:
        await own.aclose()
        await other.aclose()
    per = Decimal(1_000_000)
    assert mine.cache_read_per_token == Decimal("0.5") / per
    assert mine.cache_write_per_token == Decimal("3") / per
    # Another primary model's transcript is cached at that model's table rates.
    table = price_for("claude-haiku-4-5")
    assert theirs.cache_read_per_token == table.cache_read_per_mtok / per
