"""§5.1: the cache key recipe, its stability, and what does and does not change it."""

from __future__ import annotations

import hashlib

import msgpack
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cache_key import canonical_bytes, canonicalize, compute_cache_key
from engine.messages import (
    Message,
    MessageMetadata,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)

KNOBS = {
    "summarization_model": "anthropic:claude-haiku-4-5",
    "summarization_prompt_version": "1.0.0",
    "summarization_max_tokens": 1024,
}


def tiny_span() -> list[Message]:
    return [
        Message(id="m1", role=Role.USER, content=(TextContentBlock("list the files"),)),
        Message(
            id="m2",
            role=Role.ASSISTANT,
            content=(ToolUseContentBlock(id="t1", name="bash", input={"cmd": "ls"}),),
        ),
        Message(id="m3", role=Role.USER, content=(ToolResultContentBlock("t1", "a.txt"),)),
    ]


def key(messages: list[Message], **overrides: object) -> str:
    return compute_cache_key(messages, **{**KNOBS, **overrides})  # type: ignore[arg-type]


def test_key_is_sha256_of_the_spec_msgpack_payload_recomputed_by_hand() -> None:
    by_hand = msgpack.dumps(
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list the files"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": "a.txt",
                            "is_error": False,
                        }
                    ],
                },
            ],
            "summarization_model": "anthropic:claude-haiku-4-5",
            "summarization_prompt_version": "1.0.0",
            "summarization_max_tokens": 1024,
        }
    )
    assert canonical_bytes(tiny_span(), **KNOBS) == by_hand  # type: ignore[arg-type]
    assert key(tiny_span()) == hashlib.sha256(by_hand).hexdigest()


def test_key_is_stable_across_releases() -> None:
    # A golden value: if this changes, every stored summary silently becomes a miss.
    assert key(tiny_span()) == GOLDEN_KEY


GOLDEN_KEY = "eb6687ca243fa368c19befe335ea5afbfb382870d88ea9448ead7d94469ac8bb"


def test_key_is_the_bare_sha256_of_canonical_bytes() -> None:
    data = canonical_bytes(tiny_span(), **KNOBS)  # type: ignore[arg-type]
    assert key(tiny_span()) == hashlib.sha256(data).hexdigest()


def test_canonicalize_keeps_role_and_tagged_blocks_and_drops_id_and_metadata() -> None:
    message = Message(
        id="m9",
        role=Role.ASSISTANT,
        content=(TextContentBlock("done"),),
        metadata=MessageMetadata(created_at_ms=5, input_tokens=1, cost_usd="0.01"),
    )
    canonical = canonicalize(message)
    assert canonical.keys() == {"role", "content"}
    assert canonical["role"] == "assistant"
    assert list(canonical["content"]) == [{"type": "text", "text": "done"}]


def test_equal_content_gives_equal_key() -> None:
    assert key(tiny_span()) == key(tiny_span())


def test_ids_timestamps_and_cost_stamps_do_not_change_the_key() -> None:
    stamped = [
        msgspec.structs.replace(
            m,
            id=f"other-{i}",
            metadata=MessageMetadata(
                created_at_ms=1_700_000_000_000 + i,
                input_tokens=100,
                output_tokens=20,
                cost_usd="0.0042",
                compaction_cache_key="ff" * 32,
            ),
        )
        for i, m in enumerate(tiny_span())
    ]
    assert key(stamped) == key(tiny_span())


@pytest.mark.parametrize(
    "override",
    [
        {"summarization_model": "anthropic:claude-sonnet-4-5"},
        {"summarization_prompt_version": "1.0.1"},
        {"summarization_max_tokens": 1025},
    ],
)
def test_each_knob_changes_the_key(override: dict[str, object]) -> None:
    assert key(tiny_span(), **override) != key(tiny_span())


def test_content_changes_change_the_key() -> None:
    base = key(tiny_span())
    edited = tiny_span()
    edited[0] = msgspec.structs.replace(edited[0], content=(TextContentBlock("list the file"),))
    assert key(edited) != base
    assert key(tiny_span()[:2]) != base  # a shorter span
    flipped = tiny_span()
    flipped[2] = Message(
        id="m3", role=Role.USER, content=(ToolResultContentBlock("t1", "a.txt", is_error=True),)
    )
    assert key(flipped) != base


def test_instructions_absent_give_the_spec_key_and_present_give_another() -> None:
    assert key(tiny_span(), instructions=None) == key(tiny_span())
    assert key(tiny_span(), instructions="") == key(tiny_span())
    with_words = key(tiny_span(), instructions="keep the file paths")
    assert with_words != key(tiny_span())
    assert with_words != key(tiny_span(), instructions="keep the errors")


def test_tool_input_key_order_is_not_content() -> None:
    def span(tool_input: dict[str, object]) -> list[Message]:
        block = ToolUseContentBlock(id="t1", name="edit", input=tool_input)
        return [Message(id="a", role=Role.ASSISTANT, content=(block,))]

    assert key(span({"path": "x", "text": "y"})) == key(span({"text": "y", "path": "x"}))
    assert key(span({1: "x", "a": "y"})) == key(span({1: "x", "a": "y"}))  # unsortable keys


def test_any_iterable_is_read_in_one_pass() -> None:
    assert key(iter(tiny_span())) == key(tiny_span())  # type: ignore[arg-type]


def test_a_bool_max_tokens_is_refused() -> None:
    with pytest.raises(TypeError):
        key(tiny_span(), summarization_max_tokens=True)


# --- properties -------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
blocks = st.one_of(
    st.builds(TextContentBlock, st.text()),
    st.builds(
        ToolUseContentBlock,
        st.text(min_size=1, max_size=12),
        st.text(min_size=1, max_size=12),
        st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    ),
    st.builds(ToolResultContentBlock, st.text(min_size=1, max_size=12), st.text(), st.booleans()),
)
metadata = st.builds(
    MessageMetadata,
    created_at_ms=st.none() | st.integers(0, 2**50),
    input_tokens=st.none() | st.integers(0, 10**6),
    output_tokens=st.none() | st.integers(0, 10**6),
    cost_usd=st.none() | st.decimals(0, 10, places=6).map(str),
    compaction_cache_key=st.none() | st.text(max_size=64),
)
messages = st.builds(
    Message,
    id=st.text(max_size=16),
    role=st.sampled_from(Role),
    content=st.lists(blocks, min_size=1, max_size=4).map(tuple),
    metadata=metadata,
)
spans = st.lists(messages, min_size=1, max_size=8)


@given(spans, st.data())
def test_metadata_only_changes_never_change_the_key(
    span: list[Message], data: st.DataObject
) -> None:
    restamped = [
        msgspec.structs.replace(m, id=data.draw(st.text(max_size=16)), metadata=data.draw(metadata))
        for m in span
    ]
    assert key(restamped) == key(span)


@given(spans, st.data())
def test_content_changes_always_change_the_key(span: list[Message], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(span) - 1))
    extra = data.draw(blocks)
    changed = list(span)
    changed[index] = msgspec.structs.replace(span[index], content=(*span[index].content, extra))
    assert key(changed) != key(span)
    other_role = Role.USER if span[index].role is Role.ASSISTANT else Role.ASSISTANT
    changed[index] = msgspec.structs.replace(span[index], role=other_role)
    assert key(changed) != key(span)
