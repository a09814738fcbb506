"""The four compaction strategies (engine.policy.strategies), one behaviour at a time."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest

from engine.config import CompactionConfig
from engine.errors import ConfigError
from engine.history import History, text_message
from engine.manager import SessionManager
from engine.messages import Message, Role, ToolResultContentBlock
from engine.policy.span import plan_span
from engine.policy.splice import summary_text
from engine.policy.strategies import (
    MASKED_PREFIX,
    keeps_key_lines,
    masked_span,
    placeholder,
    plan_strategy,
    summary_ceiling,
)
from engine.store import SessionStore
from engine.summarizers import ExtractiveSummarizer, SummaryRequest
from tests.history_builders import (
    LOCAL,
    FailingSummarizer,
    RecordingSummarizer,
    assistant,
    ids,
    tool_call,
    tool_result,
    user,
)

LOG = "\n".join(
    f"2026-12-04 12:00:{i:02d} INFO worker {i} processed batch {i * 7}" for i in range(60)
)


def long_tool_session(turns: int, *, output: str = LOG, prefix: str = "t") -> list[Message]:
    """`turns` times: an ask, a tool call with a long output, a short one, and an answer."""
    messages: list[Message] = []
    for turn in range(turns):
        p = f"{prefix}{turn}-"
        messages += [
            user(f"{p}ask", f"turn {turn}: look at the worker logs"),
            tool_call(f"{p}c1", f"{p}call-long", name="read_log", text="reading the log"),
            tool_result(f"{p}r1", f"{p}call-long", output=output),
            tool_call(f"{p}c2", f"{p}call-short", name="bash", text="checking the exit code"),
            tool_result(f"{p}r2", f"{p}call-short", output="exit 0"),
            assistant(f"{p}answer", f"turn {turn}: the worker is fine, batch size 7"),
        ]
    return messages


def manager(strategy: str, messages: list[Message], **knobs: object) -> SessionManager:
    settings: dict[str, object] = dict(
        compaction_threshold_tokens=2_000,
        compaction_hard_cap_tokens=40_000,
        compaction_preserve_recent_turns=4,
        compaction_model=LOCAL,
        compaction_strategy=strategy,
        summarizer=knobs.pop("summarizer", None) or FailingSummarizer(),
    )
    settings.update(knobs)
    return SessionManager(history=messages, **settings)  # type: ignore[arg-type]


def test_an_unknown_strategy_is_a_config_error_naming_the_knob() -> None:
    with pytest.raises(
        ConfigError, match=r"compaction_strategy.*summarize, mask, hybrid, recompact"
    ):
        CompactionConfig(compaction_strategy="squash")


def test_the_placeholder_names_the_tool_the_size_the_first_line_and_a_digest() -> None:
    text = placeholder("read_log", LOG, False)
    assert text.startswith(MASKED_PREFIX + "read_log, ")
    assert f"{len(LOG):,} chars, 60 lines" in text
    assert "first line: 2026-12-04 12:00:00 INFO worker 0 processed batch 0" in text
    assert "sha256 " in text and len(text) < 220
    assert placeholder("read_log", LOG + "x", False) != text  # the digest tells outputs apart
    assert "error, " in placeholder("bash", "Traceback\n...", True)


def test_mask_replaces_long_results_keeps_short_ones_and_makes_no_call() -> None:
    summarizer = FailingSummarizer()
    m = manager("mask", long_tool_session(6), summarizer=summarizer)
    before = list(m.messages)
    outcome = asyncio.run(m.before_turn())
    assert outcome.status == "compacted" and summarizer.calls == 0
    record = outcome.record
    assert record is not None and record.kind == "mask" and record.strategy == "mask"
    assert record.cost_usd == 0 and record.cache_key is None
    assert record.history_tokens_after < record.history_tokens_before / 3
    span = before[record.watermark_before : record.watermark_after]
    copies = m.messages[record.watermark_before : record.watermark_after]
    results = [
        block
        for message in copies
        for block in message.content
        if isinstance(block, ToolResultContentBlock)
    ]
    assert {b.content for b in results if not b.content.startswith(MASKED_PREFIX)} == {"exit 0"}
    assert sum(b.content.startswith(MASKED_PREFIX + "read_log") for b in results) == len(
        [m for m in span if "call-long" in "".join(m.tool_result_ids())]
    )
    # User and assistant words stay verbatim; the tail is untouched.
    assert [m.text() for m in copies if not m.tool_result_ids()] == [
        m.text() for m in span if not m.tool_result_ids()
    ]
    assert ids(m.messages[-4:]) == ids(before[-4:])
    # The floor is past the copies: the next mask starts after them.
    assert m.history.floor == record.watermark_after


def test_mask_runs_with_the_budget_spent_since_it_makes_no_call() -> None:
    m = manager(
        "mask",
        long_tool_session(6),
        compaction_max_cost_per_session_usd=Decimal("0.01"),
        spent_usd=Decimal("0.01"),
    )
    assert m.plan().decision.fires
    assert asyncio.run(m.before_turn()).status == "compacted"
    # The same session summarizing would skip silently (§3.1 step 3).
    s = manager(
        "summarize",
        long_tool_session(6),
        compaction_max_cost_per_session_usd=Decimal("0.01"),
        spent_usd=Decimal("0.01"),
    )
    assert s.plan().decision.reason == "budget_exhausted_skip"


def test_mask_with_nothing_long_enough_does_not_fire_below_the_hard_cap() -> None:
    messages = long_tool_session(20, output="short output")
    m = manager("mask", messages, compaction_threshold_tokens=200)
    plan = m.plan()
    assert plan.action is None and plan.decision.reason == "not_reducible"
    assert asyncio.run(m.before_turn()).status == "skipped"


def test_hybrid_masks_when_that_is_enough_and_summarizes_folding_when_not() -> None:
    summarizer = RecordingSummarizer()
    m = manager("hybrid", long_tool_session(6), summarizer=summarizer)
    first = asyncio.run(m.before_turn())
    assert first.record is not None and first.record.kind == "mask"
    assert summarizer.requests == []
    # Chatty turns with no tool output: masking has nothing left to remove, so it summarizes,
    # and the span starts at the prefix: the masked copies are folded into the summary.
    for turn in range(40):
        m.append(user(f"c{turn}u", "a long remark about the design " * 8))
        m.append(assistant(f"c{turn}a", "a long answer about the design " * 8))
    second = asyncio.run(m.before_turn())
    assert second.record is not None and second.record.kind == "summary"
    assert second.record.watermark_before == 0
    assert any(message.text().count(MASKED_PREFIX) for message in summarizer.requests[0].span)


def test_recompact_folds_the_previous_summary_so_only_one_remains() -> None:
    summarizer = RecordingSummarizer()
    m = manager("recompact", long_tool_session(6), summarizer=summarizer)
    assert asyncio.run(m.before_turn()).status == "compacted"
    first_summary = m.messages[0]
    assert first_summary.synthetic
    m_messages = long_tool_session(6, prefix="u")
    for message in m_messages:
        m.append(message)
    outcome = asyncio.run(m.before_turn())
    assert outcome.status == "compacted" and outcome.record is not None
    assert outcome.record.watermark_before == 0
    assert summarizer.requests[1].span[0] == first_summary
    summaries = [x for x in m.messages if x.text().startswith("<COMPACTION_SUMMARY")]
    assert len(summaries) == 1


def test_summarize_never_takes_a_summary_into_its_span() -> None:
    summarizer = RecordingSummarizer()
    m = manager("summarize", long_tool_session(6), summarizer=summarizer)
    asyncio.run(m.before_turn())
    for message in long_tool_session(6, prefix="u"):
        m.append(message)
    asyncio.run(m.before_turn())
    assert not any(x.synthetic for x in summarizer.requests[1].span)
    assert sum(x.text().startswith("<COMPACTION_SUMMARY") for x in m.messages) == 2


def test_a_mask_is_archived_and_undone_through_the_store(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path, create=True)
    config = CompactionConfig(
        compaction_threshold_tokens=2_000,
        compaction_preserve_recent_turns=4,
        compaction_model=LOCAL,
        compaction_strategy="mask",
    )
    store.create_session("s", config=config)
    messages = long_tool_session(6)
    for message in messages:
        store.append_message("s", message, History().counter(message))
    m = store.manager("s")
    outcome = asyncio.run(m.before_turn())
    assert outcome.record is not None and outcome.record.kind == "mask"
    stored = store.compactions("s")[-1]
    assert stored.record.strategy == "mask"
    span = messages[outcome.record.watermark_before : outcome.record.watermark_after]
    assert [x.message for x in store.archived_messages(stored.compaction_id)] == span
    store.undo_latest_compaction("s")
    assert store.snapshot("s").messages == messages
    store.close()


def test_masking_twice_changes_nothing_more() -> None:
    history = History(long_tool_session(3))
    once = masked_span(history, 0, len(history))
    twice = masked_span(History(once), 0, len(once))
    assert [x.content for x in twice] == [x.content for x in once]


def test_plan_strategy_summarize_is_v1_and_recompact_starts_at_the_prefix() -> None:
    history = History(long_tool_session(4), stable_prefix_end=0)
    summarize = plan_strategy(history, "summarize", 4, 2_000, 500)
    recompact = plan_strategy(history, "recompact", 4, 2_000, 500)
    assert summarize is not None and recompact is not None
    assert summarize.span == recompact.span  # no summary yet: the same span
    assert summarize.action == recompact.action == "summarize"


def test_mask_payback_counts_the_one_time_rewrite_against_the_per_turn_saving() -> None:
    from engine.policy.strategies import mask_payback_turns

    # 32,437 tokens, 20,591 masked: 11,846 rewritten at 1.25x instead of 32,437 read at 0.1x,
    # paid back by 20,591 x 0.1 a turn (the mixed workload's first mask: 5.6 turns).
    assert mask_payback_turns(32_437, 20_591) == pytest.approx(5.62, abs=0.01)
    assert mask_payback_turns(36_273, 29_915) < 3  # long outputs: most of it goes
    assert mask_payback_turns(30_000, 0) == float("inf")


def test_hybrid_summarizes_when_a_mask_would_not_pay_back_its_rewrite() -> None:
    from engine.history import History
    from engine.policy.strategies import MASK_PAYBACK_TURNS, mask_payback_turns, plan_strategy

    # Masking empties the span, but the preserved tail is long chat: the rewrite of that tail
    # at the cache-write rate costs more than the masked tokens save in MASK_PAYBACK_TURNS.
    messages = long_tool_session(6)
    for turn in range(2):
        messages.append(user(f"tail{turn}u", "a long remark about the design " * 600))
        messages.append(assistant(f"tail{turn}a", "a long answer about the design " * 600))
    history = History(messages)
    masked = plan_strategy(history, "mask", 4, 2_000, 200)
    assert masked is not None
    assert mask_payback_turns(history.total_tokens, masked.expected_saved_tokens) > (
        MASK_PAYBACK_TURNS
    )
    planned = plan_strategy(history, "hybrid", 4, 2_000, 200)
    assert planned is not None and planned.action == "summarize"
    # Without the long tail the same mask pays back at once, and hybrid masks.
    short = History(long_tool_session(6))
    assert plan_strategy(short, "hybrid", 4, 2_000, 200).action == "mask"  # type: ignore[union-attr]


LOADER_LOG = "\n".join(
    [*(f"2026-12-04 12:00:{i:02d} INFO loader chunk {i} ok" for i in range(40))]
    + ["WARNING skipped 37 rows with an empty customer_id"]
    + [f"2026-12-04 12:01:{i:02d} INFO loader chunk {40 + i} ok" for i in range(10)]
)


def test_a_hybrid_placeholder_keeps_the_outputs_key_line_and_a_mask_one_does_not() -> None:
    kept = placeholder("bash", LOADER_LOG, False, keys=True)
    assert "key lines: WARNING skipped 37 rows" in kept
    assert "37 rows" not in placeholder("bash", LOADER_LOG, False)
    assert keeps_key_lines("hybrid") and not keeps_key_lines("mask")


def test_a_summary_of_masked_copies_still_says_what_their_key_lines_kept() -> None:
    messages = long_tool_session(1, output=LOADER_LOG)
    copies = masked_span(History(messages), 0, len(messages), keys=True)
    request = SummaryRequest(span=tuple(copies), prompt_version="x", max_tokens=400)
    summary = ExtractiveSummarizer().summarize_now(request)
    assert "skipped 37 rows" in summary


def test_a_fold_brings_the_earlier_summarys_room_up_to_one_more_ceiling() -> None:
    earlier = text_message("s1", Role.USER, summary_text(LOCAL, 0, "x " * 600), synthetic=True)
    history = History([earlier, *long_tool_session(6)])
    span = plan_span(history, 2, start=0)
    assert span is not None and span.start == 0
    carried = history.tokens[0]
    assert summary_ceiling(history, span, 5_000) == 5_000 + carried
    assert summary_ceiling(history, span, 100) == 200  # at most one more ceiling
    no_fold = plan_span(History(long_tool_session(6)), 2)
    assert no_fold is not None
    assert summary_ceiling(History(long_tool_session(6)), no_fold, 300) == 300
