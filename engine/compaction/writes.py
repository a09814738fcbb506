"""Everything a compaction run writes outside the history it plans on: the events (to the store,
then the bus), the compaction spend, and the spliced history (store first, memory second)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from engine.compaction.deps import Trigger
from engine.events import (
    CompactionEvent,
    CompactionFailed,
    CompactionStarted,
    FailureMode,
    redact,
)
from engine.history import History
from engine.messages import Message
from engine.outcomes import CompactionRecord
from engine.policy.span import SpanPlan

if TYPE_CHECKING:
    from engine.manager import SessionManager


def emit(manager: SessionManager, event: CompactionEvent) -> None:
    if manager.persistence is not None:
        manager.persistence.record_event(manager.session_id, event)
    manager.bus.emit(event)


def emit_started(manager: SessionManager, turn_id: str, span: SpanPlan, trigger: Trigger) -> None:
    emit(
        manager,
        CompactionStarted(
            manager.session_id,
            turn_id,
            span.start,
            span.span_message_count,
            span.span_tokens,
            trigger,
        ),
    )


def emit_failed(
    manager: SessionManager,
    turn_id: str,
    watermark_before: int,
    span_message_count: int,
    failure_mode: FailureMode,
    *,
    error_class: str | None = None,
    error_message: str | None = None,
    truncated_message_count: int | None = None,
) -> None:
    emit(
        manager,
        CompactionFailed(
            manager.session_id,
            turn_id,
            watermark_before,
            span_message_count,
            failure_mode,
            error_class,
            redact(error_message) if error_message else None,
            truncated_message_count,
        ),
    )


def charge(manager: SessionManager, cost: Decimal) -> None:
    """Compaction spend, kept apart from the session's primary spend (§4, §12.5)."""
    if cost:
        manager.spent_usd += cost
        if manager.persistence is not None:
            manager.persistence.record_spend(manager.session_id, manager.spent_usd)


def persist_replacement(
    manager: SessionManager,
    spliced: History,
    start: int,
    span_ids: Sequence[str],
    replacement: Sequence[Message],
    record: CompactionRecord,
) -> None:
    """Store first, memory second: a SpanChanged leaves both as they were."""
    if manager.persistence is not None:
        tokens = spliced.tokens[start : start + len(replacement)]
        # Compare-and-set on the revision planned on (issue 17): an undo made by another
        # process since then may leave the span's ids in place (a mask's copies) and would
        # otherwise be written over and never synced (the revision jumping past it).
        manager.revision = manager.persistence.commit_replacement(
            manager.session_id, start, span_ids, replacement, tokens, record, manager.spent_usd,
            expected_revision=manager.revision,
        )  # fmt: skip
    manager.history = spliced
