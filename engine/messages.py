"""Canonical messages (canonical-message-format §5) and the history validator.

Messages are msgspec Structs so encoding is fast and canonical: the cache key (§5.1) hashes their
encoded content blocks, and the session store keeps them msgpack-encoded.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

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
        return self.role == "user" and not self.synthetic and not self.tool_result_ids()

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


def validate_message(message: Message, index: int = 0) -> None:
    """One message on its own: non-empty, tool blocks only where their role allows them."""
    if not message.content:
        raise HistoryError(index, "empty_content", "a message needs at least one content block")
    for block in message.content:
        if isinstance(block, ToolUseContentBlock) and message.role is not Role.ASSISTANT:
            raise HistoryError(index, "tool_use_role", f"tool_use {block.id!r} in a user message")
        if isinstance(block, ToolResultContentBlock) and message.role is not Role.USER:
            raise HistoryError(
                index,
                "tool_result_role",
                f"tool_result {block.tool_use_id!r} in an assistant message",
            )
    ids = message.tool_use_ids()
    if len(set(ids)) != len(ids):
        raise HistoryError(index, "duplicate_tool_use_id", "a tool_use id appears twice")
    results = message.tool_result_ids()
    if len(set(results)) != len(results):
        # The Messages API refuses a tool_use answered twice ("each tool_use must have a single
        # result"), so such a history could never be sent.
        raise HistoryError(
            index, "duplicate_tool_result_id", "two tool_result blocks answer the same tool_use"
        )


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
    for index, message in enumerate(messages, start=first_index):
        validate_message(message, index)
        if previous is not None and message.role is previous.role:
            raise HistoryError(index, "alternation", f"two {message.role.value} messages in a row")
        expected = set(previous.tool_use_ids()) if previous is not None else set()
        answered = message.tool_result_ids()
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
        previous = message
    if messages and previous is not None and previous.tool_use_ids() and not allow_pending_tool_use:
        raise HistoryError(
            first_index + len(messages) - 1,
            "unanswered_tool_use",
            "the last message's tool calls have no result",
        )


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)


def encode_message(message: Message) -> bytes:
    return _encoder.encode(message)


def decode_message(data: bytes) -> Message:
    """Decode a stored message; msgspec errors name the field that is wrong."""
    return _decoder.decode(data)
