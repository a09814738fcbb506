"""The session list and the dashboard ask the engine the same question (`plan_turn`), so they
agree on the trigger. Before, the list called `decide_trigger` itself, without the reducible
check, and said "soft" where the dashboard said "skip: not_reducible"."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from engine import CompactionConfig, TriggerReason, estimate_message_tokens
from engine.store import SessionStore
from metis_compaction_tui.sources.store import StoreSource
from tests.history_builders import assistant, chat, tool_call, tool_result, user

CONFIG = CompactionConfig(
    compaction_threshold_tokens=1_000,
    compaction_hard_cap_tokens=5_000,
    compaction_preserve_recent_turns=2,
    compaction_model="local:extractive",
)


def _write(store: SessionStore, sid: str, messages: list, spent: Decimal = Decimal(0)) -> None:
    store.create_session(sid, config=CONFIG)
    for message in messages:
        store.append_message(sid, message, estimate_message_tokens(message))
    if spent:
        store.record_spend(sid, spent)


def test_list_and_dashboard_agree_on_every_session(tmp_path: Path) -> None:
    with SessionStore.open(tmp_path, create=True) as store:
        # the only compactable span is tiny; a huge tool call held for its cycle stays
        _write(
            store,
            "not-reducible",
            [
                user("u0", "start"),
                assistant("a0", "ok"),
                user("u1", "go"),
                tool_call("c0", "call0", text="x" * 6_000),
                tool_result("r0", "call0"),
                assistant("a1", "done"),
            ],
        )
        _write(store, "exhausted", chat(12, size=300), spent=Decimal("5"))
        _write(store, "forced", chat(40, size=600), spent=Decimal("5"))
        _write(store, "soft", chat(12, size=300))
        _write(store, "quiet", chat(2))
    source = StoreSource(tmp_path)
    source.open()
    try:
        rows = {row.session_id: row for row in source.sessions()}
        reasons = set()
        for sid, row in rows.items():
            plan = source.load(sid).plan
            assert row.action == plan.decision.action, sid
            assert row.pending_history_tokens == plan.decision.pending_history_tokens, sid
            reasons.add(plan.decision.reason)
    finally:
        source.close()
    assert {
        TriggerReason.NOT_REDUCIBLE,
        TriggerReason.BUDGET_EXHAUSTED_SKIP,
        TriggerReason.BUDGET_EXHAUSTED_FORCED,
        TriggerReason.THRESHOLD_CROSSED,
        TriggerReason.BELOW_THRESHOLD,
    } <= reasons
