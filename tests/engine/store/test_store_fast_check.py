"""The store's fast validity check (store_sql._columns_valid) reads the role and tool-id columns
written beside each body instead of the bodies. It may only ever say "look closer": whatever it
accepts, validate_history must accept too, or a rule added to one would be missed by the other.
Arbitrary histories, valid and broken, are checked against both."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.messages import (
    HistoryError,
    Message,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    encode_message,
    validate_history,
)
from engine.store.sql import _columns_valid, encode_ids

IDS = st.sampled_from(["t1", "t2", "t3"])
BLOCKS = st.one_of(
    st.builds(TextContentBlock, st.sampled_from(["", "x", "hello"])),
    st.builds(ToolUseContentBlock, IDS, st.just("bash"), st.just({})),
    st.builds(ToolResultContentBlock, IDS, st.sampled_from(["", "ok"]), st.booleans()),
)
MESSAGES = st.builds(
    Message,
    st.sampled_from(["m1", "m2", "m3", "m4"]),
    st.sampled_from(list(Role)),
    st.lists(BLOCKS, max_size=3).map(tuple),
)


def _rows(messages: list[Message]) -> list[tuple[object, ...]]:
    """The columns as store_sql.insert_message writes them, in read_snapshot's column order."""
    return [
        (
            seq,
            encode_message(m),
            1,
            m.role.value,
            encode_ids(m.tool_use_ids()),
            encode_ids(m.tool_result_ids()),
            seq,
        )
        for seq, m in enumerate(messages)
    ]


@settings(max_examples=600, deadline=None)
@given(st.lists(MESSAGES, max_size=6))
def test_what_the_fast_check_accepts_validate_history_accepts(messages: list[Message]) -> None:
    if _columns_valid(_rows(messages), messages):
        validate_history(messages)  # raises HistoryError if the fast check let a rule slip


def test_the_fast_check_accepts_ordinary_histories() -> None:
    """Not a check that can only pass: the common case must take the fast path."""
    messages = [
        Message("u1", Role.USER, (TextContentBlock("go"),)),
        Message("a1", Role.ASSISTANT, (ToolUseContentBlock("t1", "bash", {}),)),
        Message("r1", Role.USER, (ToolResultContentBlock("t1", "ok"),)),
        Message("a2", Role.ASSISTANT, (TextContentBlock("done"),)),
    ]
    assert _columns_valid(_rows(messages), messages)
    broken = [messages[0], messages[1], messages[3]]
    assert not _columns_valid(_rows(broken), broken)
    with pytest.raises(HistoryError, match=r"two assistant messages in a row"):
        validate_history(broken)
