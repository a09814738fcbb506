"""A model the price table does not list, behind an Anthropic-compatible endpoint (a
local server here, through the real `anthropic` SDK), runs at the price the user states; the
spend recorded is the server's usage at those rates, and the §3.1 budget holds against it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from engine.manager import SessionManager
from engine.policy.trigger import TriggerReason
from engine.summarizers import StatedPrice, SummarizerSettings, price_origin
from engine.summarizers.pricing import CallUsage, price_from_rates, usage_cost
from tests.history_builders import tool_session
from tests.messages_api_server import MessagesAPIServer, ok

API_KEY = "sk-ant-test-endpoint-SECRET-7"
MODEL = "anthropic:qwen2.5-coder:7b"  # an Ollama-style name, colon and all
KNOBS = {
    "compaction_threshold_tokens": 300,
    "compaction_hard_cap_tokens": 5_000,
    "compaction_preserve_recent_turns": 2,
}


def manager_for(server: MessagesAPIServer, price: StatedPrice, budget: str) -> SessionManager:
    settings = SummarizerSettings(model=MODEL, base_url=server.base_url, price=price, timeout_s=5.0)
    return SessionManager(
        history=tool_session(6, size=300),
        compaction_model=MODEL,
        compaction_max_cost_per_session_usd=Decimal(budget),
        summarizer_settings=settings,
        **KNOBS,
    )


async def test_spend_is_the_servers_usage_at_the_stated_prices_and_the_budget_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    price = StatedPrice(
        input_per_mtok=Decimal("40"),
        output_per_mtok=Decimal("120"),
        cache_read_per_mtok=Decimal("4"),
    )
    with MessagesAPIServer(default=ok("GATEWAY SUMMARY", 2_000, 100, cache_read=300)) as server:
        manager = manager_for(server, price, budget="0.05")
        assert price_origin(MODEL, manager.summarizer_settings) == "price you set"
        outcome = await manager.before_turn("t1")
        assert outcome.status == "compacted"
        (request,) = server.requests
        assert request.body["model"] == "qwen2.5-coder:7b"
        sent = {request.headers.get("x-api-key"), request.headers.get("authorization")}
        assert sent & {API_KEY, f"Bearer {API_KEY}"}  # the SDK's own header, from the env
        expected = usage_cost(
            price_from_rates(
                "qwen2.5-coder:7b",
                Decimal(40),
                Decimal(120),
                cache_read_per_mtok=Decimal(4),
            ),
            CallUsage(input_tokens=2_000, output_tokens=100, cache_read_tokens=300),
        )
        assert expected == Decimal("0.0932")  # 2,000 x $40 + 100 x $120 + 300 x $4, per million
        assert manager.spent_usd == expected
        assert outcome.record is not None and outcome.record.cost_usd == expected
        # Over the budget now: the next soft trigger is skipped, no call is made.
        for message in tool_session(6, size=300, prefix="n"):
            manager.append(message)
        again = await manager.before_turn("t2")
        assert again.status != "compacted"
        assert again.plan is not None
        assert again.plan.decision.reason == TriggerReason.BUDGET_EXHAUSTED_SKIP
        assert len(server.requests) == 1
        await manager.aclose()


async def test_a_local_model_at_a_stated_zero_price_costs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    zero = StatedPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))
    with MessagesAPIServer(default=ok("LOCAL SUMMARY", 5_000, 400)) as server:
        manager = manager_for(server, zero, budget="0")
        assert price_origin(MODEL, manager.summarizer_settings) == "price you set ($0)"
        assert manager.summarizer.estimate_cost(10_000, 2_000) == 0
        outcome = await manager.before_turn("t1")
        # A zero budget is spent from the start (§3.1: spent >= budget), so the soft trigger skips.
        assert outcome.status != "compacted" and server.requests == []
        manager.config = manager.config.replace(compaction_max_cost_per_session_usd=Decimal(1))
        outcome = await manager.before_turn("t2")
        assert outcome.status == "compacted"
        assert manager.spent_usd == 0
        await manager.aclose()


def test_the_api_key_is_never_in_the_summarizers_repr(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    zero = StatedPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))
    with MessagesAPIServer() as server:
        manager = manager_for(server, zero, budget="1")
        assert API_KEY not in repr(manager.summarizer)
        assert API_KEY not in repr(manager.summarizer_settings)
