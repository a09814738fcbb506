"""Small builders for canonical histories and test summarizers, shared by the engine tests."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from engine.config import CompactionConfig
from engine.messages import (
    Message,
    MessageMetadata,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
)
from engine.summarizers.base import ErrorClass, SummarizerError, SummaryRequest, SummaryResult
from engine.tokens import estimate_text_tokens

if TYPE_CHECKING:
    from pathlib import Path

    from engine.store import SessionStore

LOCAL = "local:extractive"
SID = "s1"
# Small knobs: a few short turns cross the threshold, so compaction happens within a test.
SMALL_CONFIG = CompactionConfig(
    compaction_model=LOCAL,
    compaction_threshold_tokens=300,
    compaction_hard_cap_tokens=600,
    compaction_preserve_recent_turns=2,
)

# High knobs: nothing compacts by itself, so every compaction seen is one the test asked for.
QUIET_CONFIG = CompactionConfig(
    compaction_model=LOCAL,
    compaction_threshold_tokens=10_000_000,
    compaction_hard_cap_tokens=20_000_000,
    compaction_preserve_recent_turns=2,
)


def new_store(
    workspace: Path, session_id: str = SID, config: CompactionConfig = SMALL_CONFIG
) -> SessionStore:
    """A real store (created) with one session under `config`."""
    from engine.store import SessionStore

    store = SessionStore.open(workspace, create=True)
    store.create_session(session_id, config=config)
    return store


def fill(store: SessionStore, messages: Sequence[Message], session_id: str = SID) -> None:
    """Append as metis dev would, with a rough token count (a third of the characters)."""
    for message in messages:
        store.append_message(session_id, message, len(message.text()) // 3)


def user(message_id: str, text: str = "please go on", **metadata: object) -> Message:
    return Message(
        id=message_id,
        role=Role.USER,
        content=(TextContentBlock(text),),
        metadata=MessageMetadata(**metadata),  # type: ignore[arg-type]
    )


def assistant(message_id: str, text: str = "done", **metadata: object) -> Message:
    return Message(
        id=message_id,
        role=Role.ASSISTANT,
        content=(TextContentBlock(text),),
        metadata=MessageMetadata(**metadata),  # type: ignore[arg-type]
    )


def tool_call(
    message_id: str,
    *call_ids: str,
    text: str = "running a tool",
    name: str = "bash",
    arguments: dict[str, object] | None = None,
) -> Message:
    """An assistant message with a text block and one tool_use per call id."""
    blocks: list[TextContentBlock | ToolUseContentBlock] = [TextContentBlock(text)]
    blocks += [
        ToolUseContentBlock(id=c, name=name, input=arguments or {"cmd": "ls"}) for c in call_ids
    ]
    return Message(id=message_id, role=Role.ASSISTANT, content=tuple(blocks))


def tool_result(message_id: str, *call_ids: str, output: str = "ok") -> Message:
    """A user message answering each call id."""
    return Message(
        id=message_id,
        role=Role.USER,
        content=tuple(ToolResultContentBlock(tool_use_id=c, content=output) for c in call_ids),
    )


def chat(pairs: int, *, size: int = 30, prefix: str = "m") -> list[Message]:
    """`pairs` user/assistant exchanges of plain text, each text `size` characters long."""
    messages: list[Message] = []
    for index in range(pairs):
        messages.append(user(f"{prefix}{2 * index}", "u" * size))
        messages.append(assistant(f"{prefix}{2 * index + 1}", "a" * size))
    return messages


def tool_session(cycles: int, *, size: int = 30, prefix: str = "m") -> list[Message]:
    """A user ask, then `cycles` times (assistant tool call, user tool result), then an answer."""
    messages: list[Message] = [user(f"{prefix}ask", "fix the failing test in app.py " + "u" * size)]
    for index in range(cycles):
        call = f"{prefix}call{index}"
        messages.append(tool_call(f"{prefix}c{index}", call, text="c" * size))
        messages.append(tool_result(f"{prefix}r{index}", call, output="r" * size))
    messages.append(assistant(f"{prefix}answer", "the test passes now " + "a" * size))
    return messages


def ids(messages: Sequence[Message]) -> list[str]:
    return [m.id for m in messages]


class RecordingSummarizer:
    """Returns `text` (or a short summary) and records every request."""

    def __init__(
        self, text: str | None = None, *, name: str = LOCAL, cost: Decimal = Decimal(0)
    ) -> None:
        self.name = name
        self.text = text
        self.cost = cost
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        text = self.text if self.text is not None else f"summary of {len(request.span)} messages"
        return SummaryResult(
            text=text,
            model=self.name,
            tokens_in=sum(estimate_text_tokens(m.text()) for m in request.span),
            tokens_out=estimate_text_tokens(text),
            cost_usd=self.cost,
            latency_ms=1,
        )

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return self.cost

    async def aclose(self) -> None:
        return None


class FailingSummarizer:
    """Every call fails with `error_class`; counts the calls."""

    def __init__(
        self,
        error_class: ErrorClass = ErrorClass.NETWORK,
        message: str = "connection failed: connection refused",
        *,
        name: str = LOCAL,
    ) -> None:
        self.name = name
        self.error_class = error_class
        self.message = message
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        raise SummarizerError(self.error_class, self.message)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return Decimal(0)

    async def aclose(self) -> None:
        return None
