"""§4.2 / §4.4: the synthetic summary message and splicing it so the history stays valid."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.history import History
from engine.ids import next_monotonic_id
from engine.messages import HistoryError, Message, Role, TextContentBlock, validate_history
from engine.policy.splice import (
    ASSISTANT_FILLER_TEXT,
    TRUNCATION_NOTICE,
    SummaryWrapper,
    parse_summary_text,
    splice,
    summary_body,
    summary_message,
    summary_text,
    truncation_notice,
)
from tests.history_builders import assistant, ids, tool_call, tool_result, user

KEY = "0123456789abcdef" * 4


def block(watermark_before: int = 0, watermark_after: int = 0) -> Message:
    return summary_message(
        message_id=next_monotonic_id("s"),
        model="anthropic:claude-haiku-4-5",
        watermark_before=watermark_before,
        watermark_after=watermark_after,
        summary="- decided to use SQLite\n- app.py fixed",
        cache_key=KEY,
    )


def roles(messages: Sequence[Message]) -> str:
    return "".join("U" if m.role is Role.USER else "A" for m in messages)


def history_of(pattern: str) -> History:
    """A plain text history whose roles spell `pattern` ("UAUA...")."""
    messages = [
        user(f"m{i}", f"text {i}") if c == "U" else assistant(f"m{i}", f"text {i}")
        for i, c in enumerate(pattern)
    ]
    return History(messages)


# --- the synthetic message ---------------------------------------------------------------------


def test_summary_text_is_the_exact_spec_wrapper() -> None:
    assert summary_text("anthropic:claude-haiku-4-5", 12, "the summary") == (
        "<COMPACTION_SUMMARY model=anthropic:claude-haiku-4-5 watermark=12>\n"
        "the summary\n"
        "</COMPACTION_SUMMARY>"
    )


def test_the_wrapper_reads_back_what_was_written() -> None:
    text = summary_text("anthropic:claude-haiku-4-5", 12, "line one\n\nline two")
    assert parse_summary_text(text) == SummaryWrapper(
        "anthropic:claude-haiku-4-5", 12, "line one\n\nline two"
    )
    assert summary_body(text) == "line one\n\nline two"


@pytest.mark.parametrize(
    "text",
    [
        "plain text",
        "<COMPACTION_SUMMARY>",
        "<COMPACTION_SUMMARY model=m watermark=x>\nbody\n</COMPACTION_SUMMARY>",
        "<COMPACTION_SUMMARY model=m watermark=3>\nbody without its end",
        "<COMPACTION_SUMMARY model=m watermark=3> trailing\nbody\n</COMPACTION_SUMMARY>",
    ],
)
def test_anything_else_is_not_a_wrapper(text: str) -> None:
    assert parse_summary_text(text) is None


def test_a_broken_wrapper_still_shows_without_its_wrapper_lines() -> None:
    assert summary_body("plain text") == "plain text"
    assert summary_body("<COMPACTION_SUMMARY model=m watermark=3>\nbody") == "body"


def test_summary_message_is_one_synthetic_user_text_block_with_span_and_key() -> None:
    message = block(3, 9)
    assert message.role is Role.USER
    assert message.content == (
        TextContentBlock(
            "<COMPACTION_SUMMARY model=anthropic:claude-haiku-4-5 watermark=3>\n"
            "- decided to use SQLite\n- app.py fixed\n"
            "</COMPACTION_SUMMARY>"
        ),
    )
    assert message.metadata.synthetic is True
    assert message.metadata.compaction_span == (3, 9)
    assert message.metadata.compaction_cache_key == KEY


def test_session_ids_are_unique_and_sortable_in_creation_order() -> None:
    made = [next_monotonic_id("s") for _ in range(50)]
    assert len(set(made)) == 50
    assert made == sorted(made)


def test_truncation_notice_is_a_synthetic_user_message_counting_the_dropped() -> None:
    notice = truncation_notice(7, "t1")
    assert notice.role is Role.USER
    assert notice.synthetic
    assert notice.text() == TRUNCATION_NOTICE.format(count=7)
    assert "7 earlier messages" in notice.text()


# --- alternation: which fillers each case needs -------------------------------------------------


# history "UAUAUA": (start, end, the replacement's roles, the spliced history's roles)
ALTERNATION_CASES = [
    (0, 3, "U", "UAUA"),  # nothing before, assistant after: the block alone
    (2, 5, "U", "UAUA"),  # assistant before and after: the block alone
    (1, 3, "AU", "UAUAUA"),  # user before: a filler before the block
    (0, 2, "UA", "UAUAUA"),  # user after: a filler after the block
    (1, 4, "AUA", "UAUAUA"),  # user on both sides: a filler on each side
    (2, 6, "U", "UAU"),  # assistant before, nothing after: the block alone
    (3, 6, "AU", "UAUAU"),  # user before, nothing after: a filler before
]


@pytest.mark.parametrize(
    ("start", "end", "replacement_roles", "spliced_roles"),
    ALTERNATION_CASES,
    ids=[f"{c[0]}:{c[1]}" for c in ALTERNATION_CASES],
)
def test_fillers_are_inserted_exactly_where_alternation_needs_them(
    start: int, end: int, replacement_roles: str, spliced_roles: str
) -> None:
    history = history_of("UAUAUA")
    spliced, replacement = splice(history, start, end, block(start, end), new_id=next_monotonic_id)
    assert roles(replacement) == replacement_roles
    assert roles(spliced.messages) == spliced_roles
    fillers = [m for m in replacement if m.role is Role.ASSISTANT]
    assert all(m.text() == ASSISTANT_FILLER_TEXT and m.synthetic for m in fillers)
    assert [m.synthetic for m in replacement] == [True] * len(replacement)
    validate_history(spliced.messages)


def test_the_spliced_history_keeps_the_messages_outside_the_span_in_order() -> None:
    history = history_of("UAUAUAUA")
    spliced, replacement = splice(history, 2, 6, block(), new_id=next_monotonic_id)
    assert ids(spliced.messages[:2]) == ["m0", "m1"]
    assert ids(spliced.messages[-2:]) == ["m6", "m7"]
    assert spliced.messages[2 : 2 + len(replacement)] == replacement


def test_the_spliced_token_ledger_matches_recounting() -> None:
    history = history_of("UAUAUAUA")
    spliced, _ = splice(history, 1, 6, block(), new_id=next_monotonic_id)
    recount = [history.counter(m) for m in spliced.messages]
    assert spliced.tokens == recount
    assert spliced.total_tokens == sum(recount)
    assert spliced.range_tokens(0, len(spliced)) == sum(recount)


def test_the_floor_moves_just_past_the_summary_and_its_fillers() -> None:
    history = history_of("UAUAUAUA")
    spliced, replacement = splice(history, 1, 4, block(), new_id=next_monotonic_id)
    assert spliced.floor == 1 + len(replacement)
    assert all(m.synthetic for m in spliced.messages[1 : spliced.floor])


def test_given_token_counts_are_used_for_the_replacement() -> None:
    history = history_of("UAUA")
    spliced, replacement = splice(
        history, 0, 3, block(), counter_tokens=[7], new_id=next_monotonic_id
    )
    assert len(replacement) == 1
    assert spliced.tokens[0] == 7


# --- a cut inside a tool cycle is refused, and nothing changes ----------------------------------


def tool_history() -> History:
    return History(
        [
            user("u0", "run the tests"),
            tool_call("a1", "t1"),
            tool_result("u2", "t1", output="2 failed"),
            assistant("a3", "fixing"),
            user("u4", "go on"),
            assistant("a5", "fixed"),
        ]
    )


@pytest.mark.parametrize(
    ("start", "end"),
    [(0, 2), (2, 4), (2, 3)],
    ids=["cut-after-the-call", "span-starts-at-the-result", "result-only"],
)
def test_splicing_across_a_tool_cycle_raises_and_leaves_the_history_unchanged(
    start: int, end: int
) -> None:
    history = tool_history()
    before = (list(history.messages), list(history.tokens), history.floor, history.total_tokens)
    with pytest.raises(HistoryError) as raised:
        splice(history, start, end, block(), new_id=next_monotonic_id)
    assert raised.value.rule in {"unanswered_tool_use", "orphan_tool_result"}
    assert (list(history.messages), list(history.tokens), history.floor, history.total_tokens) == (
        before
    )
    validate_history(history.messages)


def test_splicing_a_whole_tool_cycle_is_fine() -> None:
    history = tool_history()
    spliced, _ = splice(history, 0, 3, block(), new_id=next_monotonic_id)
    validate_history(spliced.messages)
    assert "t1" not in {i for m in spliced.messages for i in m.tool_use_ids()}


# --- the floor: one rule for History and the store ----------------------------------------------


def test_the_floor_falls_back_to_the_summary_before_when_a_range_takes_the_last_one() -> None:
    messages = [user("u0"), assistant("a1"), user("u2"), block(0, 3), assistant("a4")]
    messages += [user(f"u{i}") if i % 2 else assistant(f"a{i}") for i in range(5, 10)]
    messages += [block(4, 9), assistant("a11")]
    history = History(messages)
    assert history.floor == 11
    # Undo-like: the later summary goes, plain messages in its place.
    history.replace(8, 11, [user("x8"), assistant("x9"), user("x10")], [1, 1, 1])
    assert history.floor == 4  # just past the summary at 3, as the store's refresh_floor says
    history.replace(3, 4, [user("x3")], [1])  # an invalid history, but the rule still holds
    assert history.floor == 0
