"""Canonical messages: the history validator's rules, and the msgspec encoding."""

from __future__ import annotations

import msgspec
import pytest

from engine.messages import (
    HistoryError,
    Message,
    MessageMetadata,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    decode_message,
    encode_message,
    validate_history,
    validate_message,
)
from tests.history_builders import assistant, tool_call, tool_result, tool_session, user


def refusal(messages: list[Message], **options: object) -> HistoryError:
    with pytest.raises(HistoryError) as raised:
        validate_history(messages, **options)  # type: ignore[arg-type]
    return raised.value


# --- what a valid history looks like ------------------------------------------------------------


def test_alternating_history_with_answered_tool_cycles_validates() -> None:
    validate_history(tool_session(3))


def test_parallel_tool_calls_answered_together_validate() -> None:
    validate_history(
        [user("u0"), tool_call("a1", "t1", "t2"), tool_result("u2", "t2", "t1"), assistant("a3")]
    )


def test_empty_history_validates() -> None:
    validate_history([])


# --- each rule, named with its index --------------------------------------------------------------


def test_two_user_messages_in_a_row_break_alternation_at_the_second() -> None:
    error = refusal([user("u0"), assistant("a1"), user("u2"), user("u3")])
    assert (error.index, error.rule) == (3, "alternation")
    assert "message 3: alternation" in str(error)


def test_two_assistant_messages_in_a_row_break_alternation() -> None:
    error = refusal([user("u0"), assistant("a1"), assistant("a2")])
    assert (error.index, error.rule) == (2, "alternation")


def test_tool_use_without_result_in_the_next_message_is_unanswered_at_the_call() -> None:
    error = refusal([user("u0"), tool_call("a1", "t1"), user("u2", "no result here")])
    assert (error.index, error.rule) == (1, "unanswered_tool_use")
    assert "'t1'" in str(error)


def test_one_of_two_parallel_calls_unanswered_is_refused() -> None:
    error = refusal([user("u0"), tool_call("a1", "t1", "t2"), tool_result("u2", "t1")])
    assert (error.index, error.rule) == (1, "unanswered_tool_use")
    assert "'t2'" in str(error)


def test_tool_result_answered_two_messages_later_is_orphan_and_unanswered() -> None:
    # The result must be in the very next message: a later one answers nothing.
    error = refusal(
        [user("u0"), tool_call("a1", "t1"), user("u2"), assistant("a3"), tool_result("u4", "t1")]
    )
    assert error.rule == "unanswered_tool_use"
    assert error.index == 1


def test_orphan_tool_result_is_refused_at_its_index() -> None:
    error = refusal([user("u0"), assistant("a1"), tool_result("u2", "ghost")])
    assert (error.index, error.rule) == (2, "orphan_tool_result")
    assert "'ghost'" in str(error)


def test_tool_result_as_the_first_message_is_an_orphan() -> None:
    error = refusal([tool_result("u0", "t0")])
    assert (error.index, error.rule) == (0, "orphan_tool_result")


def test_tool_use_in_a_user_message_is_refused() -> None:
    bad = Message(id="u2", role=Role.USER, content=(ToolUseContentBlock(id="t9", name="bash"),))
    error = refusal([user("u0"), assistant("a1"), bad])
    assert (error.index, error.rule) == (2, "tool_use_role")
    assert "user message" in str(error)


def test_tool_result_in_an_assistant_message_is_refused() -> None:
    bad = Message(
        id="a1", role=Role.ASSISTANT, content=(ToolResultContentBlock(tool_use_id="t", content=""),)
    )
    error = refusal([user("u0"), bad])
    assert (error.index, error.rule) == (1, "tool_result_role")


def test_duplicate_tool_use_ids_in_one_message_are_refused() -> None:
    error = refusal([user("u0"), tool_call("a1", "t1", "t1"), tool_result("u2", "t1")])
    assert (error.index, error.rule) == (1, "duplicate_tool_use_id")


def test_the_same_tool_use_answered_twice_is_refused() -> None:
    error = refusal([user("u0"), tool_call("a1", "t1"), tool_result("u2", "t1", "t1")])
    assert (error.index, error.rule) == (2, "duplicate_tool_result_id")


def test_message_without_content_blocks_is_refused() -> None:
    empty = Message(id="a1", role=Role.ASSISTANT, content=())
    error = refusal([user("u0"), empty])
    assert (error.index, error.rule) == (1, "empty_content")


def test_validate_message_alone_names_the_index_it_is_given() -> None:
    with pytest.raises(HistoryError) as raised:
        validate_message(Message(id="x", role=Role.USER, content=()), 41)
    assert raised.value.index == 41
    assert str(raised.value).startswith("message 41: empty_content:")


# --- a tool call still running at the end -------------------------------------------------------


def test_pending_tool_use_at_the_end_is_allowed_by_default() -> None:
    validate_history([user("u0"), tool_call("a1", "t1")])


def test_pending_tool_use_at_the_end_is_refused_when_not_allowed() -> None:
    error = refusal([user("u0"), tool_call("a1", "t1")], allow_pending_tool_use=False)
    assert (error.index, error.rule) == (1, "unanswered_tool_use")


def test_a_pending_tool_use_is_allowed_only_at_the_very_end() -> None:
    error = refusal([user("u0"), tool_call("a1", "t1"), user("u2")])
    assert error.rule == "unanswered_tool_use"


# --- windows of a longer history ----------------------------------------------------------------


def test_a_window_is_checked_against_the_message_before_it() -> None:
    history = [user("u0"), tool_call("a1", "t1"), tool_result("u2", "t1"), assistant("a3")]
    validate_history(history[2:], previous=history[1], first_index=2)
    error = refusal([user("u9")], previous=history[1], first_index=2)
    assert (error.index, error.rule) == (1, "unanswered_tool_use")


def test_a_window_reports_indexes_in_the_whole_history() -> None:
    error = refusal([user("u5"), user("u6")], previous=assistant("a4"), first_index=5)
    assert (error.index, error.rule) == (6, "alternation")


# --- encoding -----------------------------------------------------------------------------------


def every_kind_of_message() -> list[Message]:
    return [
        user("u0", "héllo ✓ — unicode survives"),
        Message(
            id="a1",
            role=Role.ASSISTANT,
            content=(
                TextContentBlock("calling"),
                ToolUseContentBlock(id="t1", name="edit", input={"path": "a.py", "n": [1, 2]}),
            ),
            metadata=MessageMetadata(created_at_ms=1_700_000_000_000, cost_usd="0.0012"),
        ),
        Message(
            id="u2",
            role=Role.USER,
            content=(ToolResultContentBlock(tool_use_id="t1", content="boom", is_error=True),),
        ),
        user(
            "s3",
            "<COMPACTION_SUMMARY model=local:extractive watermark=0>\nx\n</COMPACTION_SUMMARY>",
            synthetic=True,
            compaction_span=(0, 3),
            compaction_cache_key="ab" * 32,
        ),
    ]


@pytest.mark.parametrize("message", every_kind_of_message(), ids=lambda m: m.id)
def test_encode_then_decode_gives_the_same_message(message: Message) -> None:
    decoded = decode_message(encode_message(message))
    assert decoded == message
    assert type(decoded.content) is tuple
    assert decoded.metadata.compaction_span == message.metadata.compaction_span


def test_encoding_is_deterministic() -> None:
    for message in every_kind_of_message():
        assert encode_message(message) == encode_message(decode_message(encode_message(message)))


def test_default_metadata_is_omitted_from_the_encoding() -> None:
    plain = msgspec.msgpack.decode(encode_message(user("u0", "hi")))
    assert plain["metadata"] == {}


@pytest.mark.parametrize(
    "data",
    [b"", b"\xc1", b"not msgpack at all", msgspec.msgpack.encode([1, 2, 3])],
    ids=["empty", "reserved-byte", "text", "wrong-shape"],
)
def test_decoding_bad_bytes_raises_a_msgspec_error(data: bytes) -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_message(data)


def test_decoding_an_unknown_role_names_the_field() -> None:
    data = msgspec.msgpack.encode({"id": "x", "role": "system", "content": []})
    with pytest.raises(msgspec.ValidationError, match=r"role"):
        decode_message(data)


def test_decoding_an_unknown_block_type_is_refused() -> None:
    data = msgspec.msgpack.encode(
        {"id": "x", "role": "user", "content": [{"type": "image", "source": "..."}]}
    )
    with pytest.raises(msgspec.ValidationError, match=r"content"):
        decode_message(data)


def test_decoding_an_unknown_field_is_refused() -> None:
    data = msgspec.msgpack.encode(
        {"id": "x", "role": "user", "content": [{"type": "text", "text": "hi"}], "extra": 1}
    )
    with pytest.raises(msgspec.ValidationError, match=r"extra"):
        decode_message(data)


def test_decoded_history_still_validates() -> None:
    history = tool_session(2)
    validate_history([decode_message(encode_message(m)) for m in history])
