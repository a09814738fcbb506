"""Canonical messages (canonical-message-format §5) and the history validator.

Messages are msgspec Structs so encoding is fast and canonical: the cache key (§5.1) hashes their
encoded content blocks, and the session store keeps them msgpack-encoded.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import msgspec


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class TextContentBlock(msgspec.Struct, tag="text", frozen=True, forbid_unknown_fields=True):
    text: str


class ToolUseContentBlock(msgspec.Struct, tag="tool_use", frozen=True, forbid_unknown_fields=True):
    id: str
    name: str
    input: dict[str, object] = {}


class ToolResultContentBlock(
    msgspec.Struct, tag="tool_result", frozen=True, forbid_unknown_fields=True
):
    tool_use_id: str
    content: str
    is_error: bool = False


ContentBlock = TextContentBlock | ToolUseContentBlock | ToolResultContentBlock


class MessageMetadata(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """Per-message metadata. Only `synthetic`, `compaction_span` and `compaction_cache_key` carry
    meaning for compaction; timestamps and cost stamps never enter the cache key (§5.1)."""

    synthetic: bool = False
    compaction_span: tuple[int, int] | None = None
    compaction_cache_key: str | None = None
    created_at_ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: str | None = None  # a Decimal as text: exact, and msgpack-encodable


def opens_turn(role: str, synthetic: bool, has_tool_results: bool) -> bool:
    """A user message that is not a tool result and not synthetic: where a turn starts, and so
    where the writer asks the engine whether to compact (§3.1). The store applies it to its
    columns (engine.store.sql.write_log)."""
    return role == Role.USER and not synthetic and not has_tool_results


class Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    role: Role
    content: tuple[ContentBlock, ...]
    metadata: MessageMetadata = MessageMetadata()

    @property
    def synthetic(self) -> bool:
        return self.metadata.synthetic

    def tool_use_ids(self) -> tuple[str, ...]:
        return tuple(b.id for b in self.content if isinstance(b, ToolUseContentBlock))

    def tool_result_ids(self) -> tuple[str, ...]:
        return tuple(b.tool_use_id for b in self.content if isinstance(b, ToolResultContentBlock))

    @property
    def opens_turn(self) -> bool:
        """A user message that is not a tool result and not synthetic: where a turn starts, and
        so where the writer asks the engine whether to compact (§3.1)."""
        # opens_turn() written out: asked of every message a projection replays.
        if self.role != Role.USER or self.metadata.synthetic:
            return False
        return not any(isinstance(block, ToolResultContentBlock) for block in self.content)

    def text(self) -> str:
        """Every text this message carries, joined: what token estimates and renderers read."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextContentBlock):
                parts.append(block.text)
            elif isinstance(block, ToolUseContentBlock):
                parts.append(block.name)
                parts.append(msgspec.json.encode(block.input).decode())
            else:
                parts.append(block.content)
        return "\n".join(parts)


class HistoryError(ValueError):
    """A history that breaks a canonical-message rule; names the message index and the rule."""

    def __init__(self, index: int, rule: str, detail: str) -> None:
        super().__init__(f"message {index}: {rule}: {detail}")
        self.index = index
        self.rule = rule
        self.detail = detail


class MessageShape(NamedTuple):
    """What the history rules read of a message. The session store keeps these as columns beside
    each body, so its fast check runs the very same rules (check_shapes) without decoding."""

    role: str
    tool_use_ids: tuple[str, ...]
    tool_result_ids: tuple[str, ...]
    has_content: bool = True


def shell_message(
    message_id: str, role: str, tool_use_ids: tuple[str, ...], synthetic: bool
) -> Message:
    """A stand-in with what planning reads of a message (its role, synthetic flag and tool_use
    ids) and no text: built from the store's columns without decoding the body."""
    content: tuple[ContentBlock, ...] = (
        tuple(ToolUseContentBlock(tool_id, "") for tool_id in tool_use_ids)
        if tool_use_ids
        else _NO_TEXT
    )
    return Message(message_id, _ROLES[role], content, _SYNTHETIC if synthetic else _PLAIN)


_ROLES = {role.value: role for role in Role}  # a KeyError for any other text, as Role() would
_NO_TEXT = (TextContentBlock(""),)
_SYNTHETIC = MessageMetadata(synthetic=True)
_PLAIN = MessageMetadata()


def shape_of(message: Message) -> MessageShape:
    return MessageShape(
        message.role.value, message.tool_use_ids(), message.tool_result_ids(), bool(message.content)
    )


def check_shape(shape: MessageShape, index: int = 0) -> None:
    """One message on its own: non-empty, tool blocks only where their role allows them."""
    if not shape.has_content:
        raise HistoryError(index, "empty_content", "a message needs at least one content block")
    if shape.tool_use_ids and shape.role != Role.ASSISTANT:
        raise HistoryError(
            index, "tool_use_role", f"tool_use {shape.tool_use_ids[0]!r} in a user message"
        )
    if shape.tool_result_ids and shape.role != Role.USER:
        raise HistoryError(
            index,
            "tool_result_role",
            f"tool_result {shape.tool_result_ids[0]!r} in an assistant message",
        )
    if len(set(shape.tool_use_ids)) != len(shape.tool_use_ids):
        raise HistoryError(index, "duplicate_tool_use_id", "a tool_use id appears twice")
    if len(set(shape.tool_result_ids)) != len(shape.tool_result_ids):
        # The Messages API refuses a tool_use answered twice ("each tool_use must have a single
        # result"), so such a history could never be sent.
        raise HistoryError(
            index, "duplicate_tool_result_id", "two tool_result blocks answer the same tool_use"
        )


def check_shapes(
    shapes: Iterable[MessageShape],
    *,
    allow_pending_tool_use: bool = True,
    previous: MessageShape | None = None,
    first_index: int = 0,
) -> None:
    """validate_history's rules on shapes (see there)."""
    index = first_index - 1
    for index, shape in enumerate(shapes, start=first_index):
        check_shape(shape, index)
        if previous is not None and shape.role == previous.role:
            raise HistoryError(index, "alternation", f"two {shape.role} messages in a row")
        expected = set(previous.tool_use_ids) if previous is not None else set()
        answered = shape.tool_result_ids
        for tool_use_id in answered:
            if tool_use_id not in expected:
                raise HistoryError(
                    index, "orphan_tool_result", f"tool_result {tool_use_id!r} answers no tool_use"
                )
        missing = expected - set(answered)
        if missing:
            raise HistoryError(
                index - 1,
                "unanswered_tool_use",
                f"tool_use {sorted(missing)[0]!r} has no tool_result in the next message",
            )
        previous = shape
    pending = index >= first_index and previous is not None and bool(previous.tool_use_ids)
    if pending and not allow_pending_tool_use:
        raise HistoryError(
            index, "unanswered_tool_use", "the last message's tool calls have no result"
        )


def validate_message(message: Message, index: int = 0) -> None:
    """One message on its own: non-empty, tool blocks only where their role allows them."""
    check_shape(shape_of(message), index)


def validate_history(
    messages: Sequence[Message],
    *,
    allow_pending_tool_use: bool = True,
    previous: Message | None = None,
    first_index: int = 0,
) -> None:
    """Strict alternation, every tool_use answered in the next message, no orphan tool_result.

    `allow_pending_tool_use` admits a last assistant message whose tool calls are still running:
    metis dev persists it before the results exist. `previous` and `first_index` validate a window
    of a longer history: the message before the window, and the window's index in the history.
    """
    check_shapes(
        (shape_of(message) for message in messages),
        allow_pending_tool_use=allow_pending_tool_use,
        previous=shape_of(previous) if previous is not None else None,
        first_index=first_index,
    )


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)


def encode_message(message: Message) -> bytes:
    return _encoder.encode(message)


def decode_message(data: bytes) -> Message:
    """Decode a stored message; msgspec errors name the field that is wrong."""
    return _decoder.decode(data)
