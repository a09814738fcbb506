"""§3.2-§3.4 as pure functions: the span, the tool-cycle boundary, the floor, the truncation cut."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.history import History
from engine.messages import Message
from engine.policy.span import (
    has_compactable_messages,
    is_tool_cycle_boundary,
    nominal_watermark,
    pending_history_tokens,
    plan_span,
    plan_truncation,
)
from tests.history_builders import assistant, chat, tool_call, tool_result, user


def history_of(
    messages: Sequence[Message], tokens: Sequence[int] | None = None, stable_prefix_end: int = 0
) -> History:
    counts = list(tokens) if tokens is not None else [10] * len(messages)
    return History(messages, tokens=counts, stable_prefix_end=stable_prefix_end)


def summary(message_id: str) -> Message:
    return user(message_id, "<COMPACTION_SUMMARY ...>", synthetic=True, compaction_span=(0, 4))


# --- boundaries --------------------------------------------------------------------------------


def test_a_cut_after_a_tool_call_is_not_a_boundary_and_anywhere_else_is() -> None:
    history = history_of(
        [user("u0"), tool_call("a1", "t1"), tool_result("u2", "t1"), assistant("a3")]
    )
    assert [is_tool_cycle_boundary(history, i) for i in range(5)] == [
        True,
        True,
        False,  # between the call and its result
        True,
        True,
    ]


# --- the span ----------------------------------------------------------------------------------


def test_span_runs_from_the_prefix_end_to_before_the_preserved_tail() -> None:
    history = history_of(chat(5), stable_prefix_end=2)
    span = plan_span(history, preserve_recent_turns=3)
    assert span is not None
    assert (span.start, span.nominal_watermark, span.compaction_watermark) == (2, 7, 7)
    assert span.span_message_count == 5
    assert span.span_tokens == 50
    assert span.slid_back_by == 0
    assert span.pending_history_tokens == 50


def test_watermark_slides_back_to_a_tool_cycle_boundary() -> None:
    # The nominal watermark (6 - 2 = 4) falls between the call at 3 and its result at 4.
    messages = [
        user("u0"),
        assistant("a1"),
        user("u2"),
        tool_call("a3", "t1"),
        tool_result("u4", "t1"),
        assistant("a5"),
    ]
    span = plan_span(history_of(messages), preserve_recent_turns=2)
    assert span is not None
    assert (span.nominal_watermark, span.compaction_watermark, span.slid_back_by) == (4, 3, 1)
    assert span.span_message_count == 3
    assert span.span_tokens == 30


def test_watermark_slides_back_over_a_chain_of_tool_cycles_only_as_far_as_needed() -> None:
    messages = [
        user("u0"),
        tool_call("a1", "t1"),
        tool_result("u2", "t1"),
        tool_call("a3", "t2"),
        tool_result("u4", "t2"),
        assistant("a5"),
    ]
    # nominal 4 is inside cycle t2; 3 is after the result of t1: a boundary.
    span = plan_span(history_of(messages), preserve_recent_turns=2)
    assert span is not None
    assert span.compaction_watermark == 3
    assert is_tool_cycle_boundary(history_of(messages), span.compaction_watermark)


def test_no_valid_boundary_is_none_while_the_range_is_not_empty() -> None:
    # The only candidate message is a tool call whose result is in the preserved tail.
    messages = [tool_call("a0", "t1"), tool_result("u1", "t1"), assistant("a2")]
    history = history_of(messages)
    assert plan_span(history, preserve_recent_turns=2) is None
    assert has_compactable_messages(history, preserve_recent_turns=2)


def test_nothing_to_compact_is_none_with_an_empty_range() -> None:
    history = history_of(chat(2))
    assert plan_span(history, preserve_recent_turns=4) is None
    assert plan_span(history, preserve_recent_turns=10) is None
    assert not has_compactable_messages(history, preserve_recent_turns=4)


def test_an_empty_history_has_nothing_to_compact() -> None:
    history = history_of([])
    assert plan_span(history, 1) is None
    assert not has_compactable_messages(history, 1)
    assert pending_history_tokens(history, 1) == 0


def test_the_stable_prefix_is_never_in_the_span() -> None:
    history = history_of(chat(4), stable_prefix_end=6)
    assert plan_span(history, preserve_recent_turns=2) is None
    assert nominal_watermark(history, 2) == 6


# --- the floor after a summary ------------------------------------------------------------------


def test_span_starts_just_past_the_last_summary() -> None:
    messages = [summary("s0"), assistant("a1"), user("u2"), assistant("a3"), user("u4")]
    history = history_of(messages)
    assert history.floor == 1
    span = plan_span(history, preserve_recent_turns=1)
    assert span is not None
    assert span.start == 1
    assert span.compaction_watermark == 4


def test_a_summary_in_the_tail_puts_the_nominal_watermark_at_the_floor() -> None:
    messages = [*chat(2), summary("s4"), assistant("a5")]
    history = history_of(messages)
    assert history.floor == 5
    assert nominal_watermark(history, preserve_recent_turns=3) == 5
    assert plan_span(history, preserve_recent_turns=3) is None
    assert not has_compactable_messages(history, preserve_recent_turns=3)


def test_summaries_are_never_inside_the_span() -> None:
    messages = [user("u0"), assistant("a1"), summary("s2"), assistant("a3"), *chat(3, prefix="n")]
    history = history_of(messages)
    span = plan_span(history, preserve_recent_turns=2)
    assert span is not None
    assert not any(m.synthetic for m in history.messages[span.start : span.compaction_watermark])


def test_floor_follows_appended_summaries_and_only_moves_forward() -> None:
    history = history_of(chat(2))
    assert history.floor == 0
    history.append(summary("s4"), 5)
    assert history.floor == 5
    history.append(assistant("a5"), 5)
    assert history.floor == 5


# --- pending tokens ------------------------------------------------------------------------------


def test_pending_tokens_count_summaries_but_not_the_prefix_or_the_tail() -> None:
    messages = [user("p0"), assistant("p1"), summary("s2"), *chat(3, prefix="n")]
    tokens = [1000, 1000, 70, 5, 6, 7, 8, 9, 10]
    history = history_of(messages, tokens, stable_prefix_end=2)
    # [2, 9 - 3) = the summary and the next three messages.
    assert pending_history_tokens(history, preserve_recent_turns=3) == 70 + 5 + 6 + 7
    span = plan_span(history, preserve_recent_turns=3)
    assert span is not None
    assert span.span_tokens == 5 + 6 + 7
    assert span.pending_history_tokens == 88


def test_pending_tokens_are_zero_when_the_tail_covers_everything() -> None:
    history = history_of(chat(2), stable_prefix_end=1)
    assert pending_history_tokens(history, preserve_recent_turns=10) == 0


# --- truncation ----------------------------------------------------------------------------------


def test_truncation_drops_the_fewest_oldest_messages_to_get_under_the_cap() -> None:
    history = history_of(chat(5), [100] * 10)  # pending with a tail of 2: 800
    cut = plan_truncation(history, preserve_recent_turns=2, hard_cap_tokens=500)
    assert cut is not None
    assert (cut.start, cut.end) == (0, 4)  # 800 - 400 = 400 < 500; 800 - 300 is not
    assert cut.dropped_message_count == 4
    assert cut.dropped_tokens == 400
    assert cut.pending_after == 400


def test_truncation_cut_never_lands_between_a_tool_call_and_its_result() -> None:
    messages = [
        user("u0"),
        tool_call("a1", "t1"),
        tool_result("u2", "t1"),
        assistant("a3"),
        user("u4"),
        assistant("a5"),
    ]
    history = history_of(messages, [10, 100, 100, 10, 10, 10])
    # Dropping u0 and the call (110) would suffice on tokens, but it cuts the cycle.
    cut = plan_truncation(history, preserve_recent_turns=2, hard_cap_tokens=150)
    assert cut is not None
    assert cut.end == 3
    assert is_tool_cycle_boundary(history, cut.end)
    assert cut.pending_after == 10


def test_truncation_starts_at_the_prefix_end_and_leaves_the_tail() -> None:
    history = history_of(chat(5), [100] * 10, stable_prefix_end=2)
    cut = plan_truncation(history, preserve_recent_turns=2, hard_cap_tokens=300)
    assert cut is not None
    assert cut.start == 2
    assert cut.end <= len(history) - 2
    assert cut.pending_after < 300


def test_truncation_drops_summaries_too_oldest_first() -> None:
    messages = [summary("s0"), *chat(3, prefix="n")]
    history = history_of(messages, [500, 10, 10, 10, 10, 10, 10])
    cut = plan_truncation(history, preserve_recent_turns=2, hard_cap_tokens=100)
    assert cut is not None
    assert (cut.start, cut.end) == (0, 1)


def test_truncation_is_none_when_no_boundary_cut_gets_under_the_cap() -> None:
    history = history_of(chat(3), [100] * 6)
    # Only four messages are droppable (tail of 2) and the cap is 0: impossible.
    assert plan_truncation(history, preserve_recent_turns=2, hard_cap_tokens=0) is None


def test_truncation_counts_the_tokens_of_what_replaces_the_cut() -> None:
    history = history_of(chat(5), [100] * 10)  # pending 800
    without = plan_truncation(history, 2, 500)
    with_notice = plan_truncation(history, 2, 500, replacement_tokens=lambda start, end: 150)
    assert without is not None
    assert with_notice is not None
    assert without.end == 4  # 400 left
    assert with_notice.end == 5  # 400 + 150 is not under 500; 300 + 150 is
    assert with_notice.pending_after == 450
    assert with_notice.pending_after < 500


@pytest.mark.parametrize("cap", [150, 250, 450, 701])
def test_truncation_always_brings_pending_under_the_cap_when_it_returns_a_cut(cap: int) -> None:
    messages = [
        user("u0"),
        tool_call("a1", "t1"),
        tool_result("u2", "t1"),
        tool_call("a3", "t2"),
        tool_result("u4", "t2"),
        assistant("a5"),
        user("u6"),
        assistant("a7"),
    ]
    history = history_of(messages, [50, 200, 150, 100, 100, 50, 10, 10])
    cut = plan_truncation(history, preserve_recent_turns=2, hard_cap_tokens=cap)
    assert cut is not None
    assert cut.pending_after < cap
    assert is_tool_cycle_boundary(history, cut.end)
    assert pending_history_tokens(history, 2) - cut.dropped_tokens == cut.pending_after
