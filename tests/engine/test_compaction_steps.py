"""Each compaction step on plain data: a History, the knobs, a fixed clock and fixed ids. No
SessionManager and no database: the steps return what they made and change nothing."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from engine.compaction.commit import commit_prepared
from engine.compaction.fallback_run import truncate, truncate_or_fail
from engine.compaction.result import StepInputs
from engine.compaction.summary_call import prepare_mask, prepare_summary
from engine.compaction.turn import CompactSpan, open_turn, summary_failed
from engine.config import CompactionConfig
from engine.events import CompactionCompleted, CompactionFailed, CompactionStarted
from engine.history import History
from engine.messages import validate_history
from engine.policy.plan import plan_turn
from engine.policy.splice import NewId
from engine.summarizers import ErrorClass, SummarizerError, SummaryRequest, SummaryResult
from tests.history_builders import (
    FailingSummarizer,
    RecordingSummarizer,
    chat,
    ids,
    tool_session,
)

NOW = 1_700_000_000_000
CONFIG = CompactionConfig(
    compaction_threshold_tokens=300,
    compaction_hard_cap_tokens=600,
    compaction_preserve_recent_turns=2,
    compaction_model="local:extractive",
)


def new_ids() -> NewId:
    """Fixed, readable ids: "s-0", "f-1", "t-2", ... (the session's own use the clock)."""
    counter = itertools.count()
    return lambda prefix: f"{prefix}-{next(counter)}"


def inputs(cycles: int, *, spent: str = "0", config: CompactionConfig = CONFIG) -> StepInputs:
    history = History(tool_session(cycles, size=90))
    return StepInputs(session_id="s1", history=history, config=config, spent_usd=Decimal(spent))


def test_below_the_threshold_the_turn_is_skipped_with_nothing_to_write() -> None:
    small = inputs(1)
    plan = plan_turn(small.history, CONFIG, small.spent_usd)
    opened = open_turn(small, plan, "t1", now_ms=NOW, new_id=new_ids())
    assert not isinstance(opened, CompactSpan)
    assert opened.outcome.status == "skipped"
    assert opened.replacement is None and opened.events == ()


def test_a_turn_over_the_threshold_announces_its_span_before_any_call() -> None:
    big = inputs(8)
    plan = plan_turn(big.history, CONFIG, big.spent_usd)
    opened = open_turn(big, plan, "t1", now_ms=NOW, new_id=new_ids())
    assert isinstance(opened, CompactSpan)
    assert opened.action == "summarize" and opened.trigger == "threshold"
    assert [type(e) for e in opened.events] == [CompactionStarted]
    assert opened.events[0].watermark_before == opened.span.start


async def test_prepare_then_commit_returns_the_new_history_record_events_and_spend() -> None:
    big = inputs(8, spent="0.05")
    before = list(big.history.messages)
    plan = plan_turn(big.history, CONFIG, big.spent_usd)
    assert plan.span is not None
    summarizer = RecordingSummarizer("- fixed app.py", cost=Decimal("0.01"))
    prepared = await prepare_summary(
        big, plan.span, None, "threshold", summarizer=summarizer, cache=None
    )
    # The prose as returned, then the work ledger: the span's command the prose did not state.
    prose, ledger = prepared.summary.split("\n\nWork ledger:\n")
    assert prose == "- fixed app.py" and "ran ok: ls" in ledger
    assert prepared.cost_usd == Decimal("0.01")
    assert prepared.span_ids == tuple(ids(before[plan.span.start : plan.span.compaction_watermark]))

    result = commit_prepared(big, plan, prepared, "t1", now_ms=NOW, new_id=new_ids())
    # The input history is untouched; the result holds the spliced one.
    assert big.history.messages == before
    assert result.outcome.status == "compacted"
    assert result.history is not None
    validate_history(result.history.messages)
    assert len(result.history) == len(before) - plan.span.span_message_count + len(
        result.replacement.messages
    )
    summary = result.outcome.summary_message
    assert summary is not None and summary.id == "s-0" and "- fixed app.py" in summary.text()
    record = result.record
    assert record is not None and record.created_at_ms == NOW and record.kind == "summary"
    assert record.history_tokens_before == big.history.total_tokens
    assert record.history_tokens_after == result.history.total_tokens
    assert [type(e) for e in result.events] == [CompactionCompleted]
    # The spend the store writes with the splice: the session's, the call already charged.
    assert result.spent_usd == Decimal("0.05")


async def test_an_empty_summary_is_refused_below_the_hard_cap_and_nothing_is_spliced() -> None:
    big = inputs(8)
    plan = plan_turn(big.history, CONFIG, big.spent_usd)
    assert plan.span is not None
    prepared = await prepare_summary(
        big, plan.span, None, "threshold", summarizer=RecordingSummarizer("  "), cache=None
    )
    result = commit_prepared(big, plan, prepared, "t1", now_ms=NOW, new_id=new_ids())
    assert result.outcome.status == "failed"
    assert result.outcome.failure_mode == "validation_failed"
    assert result.replacement is None
    [event] = result.events
    assert isinstance(event, CompactionFailed) and event.failure_mode == "validation_failed"


async def test_a_failed_call_raises_and_the_turn_step_reports_it_without_a_splice() -> None:
    big = inputs(8)
    plan = plan_turn(big.history, CONFIG, big.spent_usd)
    opened = open_turn(big, plan, "t1", now_ms=NOW, new_id=new_ids())
    assert isinstance(opened, CompactSpan)
    failing = FailingSummarizer(ErrorClass.NETWORK, "connection refused")
    with pytest.raises(SummarizerError) as raised:
        await prepare_summary(
            big, opened.span, None, opened.trigger, summarizer=failing, cache=None
        )
    result = summary_failed(big, plan, "t1", opened, raised.value, now_ms=NOW, new_id=new_ids())
    assert result.outcome.status == "failed" and result.outcome.error_class == "network"
    assert result.replacement is None
    [event] = result.events
    assert event.failure_mode == "adapter_error"


def test_at_the_hard_cap_truncation_drops_the_oldest_messages_on_a_boundary() -> None:
    huge = inputs(20)
    assert huge.history.total_tokens >= CONFIG.compaction_hard_cap_tokens
    plan = plan_turn(huge.history, CONFIG, huge.spent_usd)
    result = truncate(huge, plan, "t1", "adapter_error", now_ms=NOW, new_id=new_ids())
    assert result.outcome.status == "truncated"
    assert result.history is not None
    validate_history(result.history.messages)
    assert result.record is not None and result.record.kind == "truncation"
    [notice] = [m for m in result.replacement.messages if m.id == result.record.summary_message_id]
    assert notice.id.startswith("t-") and notice.synthetic and "earlier messages" in notice.text()
    assert result.record.created_at_ms == NOW
    [event] = result.events
    assert event.truncated_message_count == result.outcome.truncated_message_count > 0
    pending_after = result.history.total_tokens
    assert pending_after < huge.history.total_tokens


def test_below_the_hard_cap_the_fallback_only_reports_the_failure() -> None:
    big = inputs(8)
    plan = plan_turn(big.history, CONFIG, big.spent_usd)
    result = truncate_or_fail(
        big, plan, "t1", False, plan.span, "adapter_error", now_ms=NOW, new_id=new_ids(),
        detail="the endpoint answered 500 for sk-ant-abcdefgh12345678",
    )  # fmt: skip
    assert result.outcome.status == "failed" and result.replacement is None
    [event] = result.events
    # §6: what leaves the engine is redacted.
    assert "sk-ant-" not in (event.error_message or "")


def test_a_forced_turn_past_the_budget_announces_the_overspend() -> None:
    huge = inputs(20, spent="1.00")
    plan = plan_turn(huge.history, CONFIG, huge.spent_usd)
    opened = open_turn(huge, plan, "t1", now_ms=NOW, new_id=new_ids())
    assert isinstance(opened, CompactSpan) and opened.at_hard_cap
    started, overspend = opened.events
    assert isinstance(started, CompactionStarted)
    assert isinstance(overspend, CompactionFailed)
    assert overspend.failure_mode == "budget_exhausted_forced"


def test_a_mask_needs_no_call_and_commits_masked_copies() -> None:
    config = CONFIG.replace(compaction_strategy="mask")
    big = inputs(8, config=config)
    plan = plan_turn(big.history, config, big.spent_usd)
    assert plan.span is not None
    prepared = prepare_mask(big, plan.span, "manual")
    assert prepared.action == "mask" and prepared.cost_usd == 0
    result = commit_prepared(big, plan, prepared, "t1", now_ms=NOW, new_id=new_ids())
    assert result.outcome.status == "compacted"
    assert all(m.id.endswith("~masked") for m in result.replacement.messages)
    assert result.record is not None and result.record.kind == "mask"


class FillsItsBudget(RecordingSummarizer):
    """Prose exactly as long as the request allows: the §4.2 wrapper comes on top of it."""

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.text = "word " * (3 * request.max_tokens // 5)
        return await super().summarize(request)


async def test_the_spliced_summary_stays_within_max_tokens_wrapper_included() -> None:
    config = CompactionConfig(
        compaction_threshold_tokens=300,
        compaction_hard_cap_tokens=600,
        compaction_preserve_recent_turns=2,
        compaction_model="local:extractive",
        compaction_max_summary_tokens=200,
    )
    chatty = StepInputs(
        session_id="s1", history=History(chat(12, size=120)), config=config, spent_usd=Decimal(0)
    )
    plan = plan_turn(chatty.history, config, chatty.spent_usd)
    assert plan.span is not None
    summarizer = FillsItsBudget()
    prepared = await prepare_summary(
        chatty, plan.span, None, "threshold", summarizer=summarizer, cache=None
    )
    # Nothing for a work ledger in plain chat: the prose got the whole budget...
    assert summarizer.requests[0].max_tokens == 200
    result = commit_prepared(chatty, plan, prepared, "t1", now_ms=NOW, new_id=new_ids())
    assert result.history is not None
    summary = result.history.messages[plan.span.start]
    # ...and the message it became, wrapper included, is held to it.
    assert chatty.history.counter(summary) <= 200
