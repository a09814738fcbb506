"""What a compaction step returns instead of writing: the session a step reads (`StepInputs`),
the events it would emit, and the `CommitResult` that SessionManager applies (store first, then
the events, then its own state)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from engine.config import CompactionConfig
from engine.events import (
    CompactionEvent,
    CompactionFailed,
    CompactionStarted,
    FailureMode,
    redact,
)
from engine.history import History
from engine.messages import Message
from engine.outcomes import CompactionOutcome
from engine.policy.span import SpanPlan
from engine.record import CompactionRecord

Trigger = Literal["threshold", "hard_cap", "manual"]


@dataclass(frozen=True, kw_only=True)
class StepInputs:
    """The session as a step reads it; a step never changes it (its history is copied on splice)."""

    session_id: str
    history: History
    config: CompactionConfig
    spent_usd: Decimal  # compaction spend so far (§4, §12.5)


@dataclass(frozen=True, kw_only=True)
class Replacement:
    """A splice to write: messages[start:start + len(span_ids)] become `messages`, and `history`
    is the session's history after it."""

    start: int
    span_ids: tuple[str, ...]  # checked again by the store: the span must be exactly these
    messages: tuple[Message, ...]
    tokens: tuple[int, ...]
    history: History
    record: CompactionRecord


@dataclass(frozen=True, kw_only=True)
class CommitResult:
    """What a commit, truncation or failure produces: the outcome to return, the splice to store
    (None: the history stays as it was), the events in the order they go out, and the session's
    compaction spend after it (what the store writes with the splice)."""

    outcome: CompactionOutcome
    replacement: Replacement | None = None
    events: tuple[CompactionEvent, ...] = ()
    spent_usd: Decimal = Decimal(0)

    @property
    def history(self) -> History | None:
        """The new history, or None when the history is unchanged."""
        return self.replacement.history if self.replacement is not None else None

    @property
    def record(self) -> CompactionRecord | None:
        return self.outcome.record


def replacement_of(
    spliced: History,
    start: int,
    span_ids: Sequence[str],
    messages: Sequence[Message],
    record: CompactionRecord,
) -> Replacement:
    return Replacement(
        start=start,
        span_ids=tuple(span_ids),
        messages=tuple(messages),
        tokens=tuple(spliced.tokens[start : start + len(messages)]),
        history=spliced,
        record=record,
    )


def started_event(
    session_id: str, turn_id: str, span: SpanPlan, trigger: Trigger
) -> CompactionStarted:
    return CompactionStarted(
        session_id, turn_id, span.start, span.span_message_count, span.span_tokens, trigger
    )


def failed_event(
    session_id: str,
    turn_id: str,
    watermark_before: int,
    span_message_count: int,
    failure_mode: FailureMode,
    *,
    error_class: str | None = None,
    error_message: str | None = None,
    truncated_message_count: int | None = None,
) -> CompactionFailed:
    """§6: the error message is redacted before it leaves the engine."""
    return CompactionFailed(
        session_id,
        turn_id,
        watermark_before,
        span_message_count,
        failure_mode,
        error_class,
        redact(error_message) if error_message else None,
        truncated_message_count,
    )
