"""Provider faults through the local Messages-API server (tests/messages_api_server.py), the real
`anthropic` SDK inside a real AnthropicSummarizer, and a real SessionManager over a real store.

Each fault ends in the spec's failure mode: `adapter_error` with its class (a call that failed)
or `validation_failed` (a billed answer with no usable summary). Below the hard cap the turn
skips and the history is untouched; at the hard cap the session truncates and its next turn
works. The budget is charged only for what was billed: a response carrying usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

import pytest

from engine import CompactionConfig, CompactionFailed, Message
from engine.manager import SessionManager
from engine.store import SessionStore
from engine.summarizers.anthropic_summarizer import AnthropicSummarizer
from engine.summarizers.pricing import cost_of, price_for
from metis_compaction_tui.demo.workload import scripted_session
from tests.engine.store.test_store_processes import check_consistent
from tests.messages_api_server import (
    Behaviour,
    MessagesAPIServer,
    delay,
    empty_text,
    malformed_json,
    ok,
    refused_base_url,
    status,
    truncated,
)

MODEL = "claude-haiku-4-5"
KEY = "sk-ant-hostile-0123456789abcdef"
SESSION = "s"
PRICE = price_for(MODEL)
RETRY_NOW = {"retry-after": "0.01"}
TIMEOUT_S = 0.3


def config(hard_cap: int) -> CompactionConfig:
    return CompactionConfig(
        compaction_model=f"anthropic:{MODEL}",
        compaction_threshold_tokens=2_000,
        compaction_hard_cap_tokens=hard_cap,
        compaction_preserve_recent_turns=2,
        compaction_max_cost_per_session_usd=Decimal("1"),
    )


def turns(count: int, seed: int = 21) -> list[list[Message]]:
    return list(scripted_session(seed, count))


@asynccontextmanager
async def session(
    workspace: Path, base_url: str, *, hard_cap: int = 10_000_000, max_retries: int = 0
) -> AsyncIterator[tuple[SessionStore, SessionManager]]:
    store = SessionStore.open(workspace, create=True)
    store.create_session(SESSION, config=config(hard_cap))
    summarizer = AnthropicSummarizer(
        MODEL, api_key=KEY, base_url=base_url, timeout_s=TIMEOUT_S, max_retries=max_retries
    )
    manager = store.manager(SESSION, summarizer=summarizer, cache=None)
    for turn in turns(40)[:30]:
        for message in turn:
            manager.append(message)
    try:
        yield store, manager
    finally:
        await manager.aclose()
        store.close()


FAULTS: dict[str, tuple[list[Behaviour], str, str]] = {
    # name: (script, failure_mode, error_class)
    "401": ([status(401)], "adapter_error", "auth"),
    "403": ([status(403)], "adapter_error", "auth"),
    "429_retry_after": (
        [status(429, headers=RETRY_NOW), status(429, headers=RETRY_NOW)],
        "adapter_error",
        "rate_limit",
    ),
    "500": ([status(500, headers=RETRY_NOW)] * 2, "adapter_error", "overloaded"),
    "529": ([status(529, headers=RETRY_NOW)] * 2, "adapter_error", "overloaded"),
    "slow_past_timeout": ([delay(TIMEOUT_S * 10)] * 2, "adapter_error", "network"),
    "cut_mid_json": ([truncated()] * 2, "adapter_error", "bad_response"),
    "malformed_json": ([malformed_json()] * 2, "adapter_error", "bad_response"),
    "empty_summary": ([empty_text()], "validation_failed", ""),
    "blank_summary": ([empty_text("  \n\t ")], "validation_failed", ""),
}
BILLED = {"empty_summary": cost_of(PRICE, 100, 1), "blank_summary": cost_of(PRICE, 100, 1)}


def last_failure(store: SessionStore) -> CompactionFailed:
    failed = [e.event for e in store.events(SESSION) if isinstance(e.event, CompactionFailed)]
    assert failed, "no compaction_failed event was stored"
    return failed[-1]


@pytest.mark.parametrize("fault", FAULTS)
async def test_each_fault_below_the_hard_cap_fails_cleanly_and_charges_only_billing(
    tmp_path: Path, server: MessagesAPIServer, fault: str
) -> None:
    script, mode, error_class = FAULTS[fault]
    retries = 1 if fault == "429_retry_after" else 0
    async with session(tmp_path, server.base_url, max_retries=retries) as (store, manager):
        before = [m.id for m in manager.messages]
        server.script(*script)
        outcome = await manager.before_turn("t-fault")
        assert outcome.status == "failed", outcome
        assert outcome.failure_mode == mode
        assert (outcome.error_class or "") == error_class
        assert [m.id for m in manager.messages] == before  # §3.4: nothing changed
        billed = BILLED.get(fault, Decimal(0))
        assert manager.spent_usd == billed
        assert store.session_info(SESSION).spent_usd == billed
        event = last_failure(store)
        assert event.failure_mode == mode and event.turn_id == "t-fault"
        if fault == "429_retry_after":  # the SDK honoured retry-after: tried again, then gave up
            assert len([r for r in server.requests if r.path == "/v1/messages"]) == 2
        # The next turn, with the provider back, compacts and charges the billed call once.
        server.script(ok("the summary"))
        recovered = await manager.before_turn("t-next")
        assert recovered.status == "compacted", recovered
        assert manager.spent_usd == billed + cost_of(PRICE, 100, 20)
        check_consistent(store)


async def test_a_refused_connection_is_a_network_adapter_error(tmp_path: Path) -> None:
    async with session(tmp_path, refused_base_url()) as (store, manager):
        outcome = await manager.before_turn("t-refused")
        assert (outcome.status, outcome.failure_mode, outcome.error_class) == (
            "failed",
            "adapter_error",
            "network",
        )
        assert "refused" in (outcome.error_message or "")
        assert manager.spent_usd == 0 == store.session_info(SESSION).spent_usd


@pytest.mark.parametrize("fault", ["500", "slow_past_timeout", "cut_mid_json", "empty_summary"])
async def test_at_the_hard_cap_a_fault_truncates_and_the_session_keeps_running(
    tmp_path: Path, server: MessagesAPIServer, fault: str
) -> None:
    script, mode, _ = FAULTS[fault]
    async with session(tmp_path, server.base_url, hard_cap=4_000) as (store, manager):
        assert manager.plan().decision.action.value == "forced"
        server.script(*script)
        outcome = await manager.before_turn("t-cap")
        assert outcome.status == "truncated", outcome
        assert outcome.failure_mode == mode and outcome.truncated_message_count > 0
        assert last_failure(store).truncated_message_count == outcome.truncated_message_count
        assert manager.spent_usd == BILLED.get(fault, Decimal(0))
        check_consistent(store)
        # The session keeps running: the next turn appends and plans as usual.
        for message in turns(40)[30]:
            manager.append(message)
        server.script(ok("the summary"))
        following = await manager.before_turn("t-after")
        assert following.status in ("skipped", "compacted", "truncated"), following
        assert [m.id for m in store.snapshot(SESSION).messages] == [m.id for m in manager.messages]
        check_consistent(store)
