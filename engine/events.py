"""§6: the three compaction events, their payloads, and delivery to subscribers."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from decimal import Decimal
from typing import Literal

import msgspec

FailureMode = Literal[
    "adapter_error", "no_valid_boundary", "budget_exhausted_forced", "validation_failed"
]


class Sensitivity(enum.StrEnum):
    PSEUDONYMOUS = "PSEUDONYMOUS"


class CompactionStarted(msgspec.Struct, frozen=True, tag="session.compaction_started"):
    session_id: str
    turn_id: str
    watermark_before: int
    span_message_count: int
    span_token_count_in: int
    threshold_or_hard_cap: Literal["threshold", "hard_cap", "manual"]


class CompactionCompleted(msgspec.Struct, frozen=True, tag="session.compaction_completed"):
    session_id: str
    turn_id: str
    watermark_before: int
    watermark_after: int
    span_message_count: int
    span_token_count_in: int
    span_token_count_out: int
    cache_hit: bool
    cache_key: str
    cost_usd: Decimal
    latency_ms: int


class CompactionFailed(
    msgspec.Struct, frozen=True, omit_defaults=True, tag="session.compaction_failed"
):
    session_id: str
    turn_id: str
    watermark_before: int
    span_message_count: int
    failure_mode: FailureMode
    error_class: str | None = None
    error_message: str | None = None
    truncated_message_count: int | None = None


CompactionEvent = CompactionStarted | CompactionCompleted | CompactionFailed

# §6: event type → (payload Struct, sensitivity). None is in AUDIT_EVENT_TYPES.
PAYLOAD_REGISTRY: dict[str, tuple[type[CompactionEvent], Sensitivity]] = {
    "session.compaction_started": (CompactionStarted, Sensitivity.PSEUDONYMOUS),
    "session.compaction_completed": (CompactionCompleted, Sensitivity.PSEUDONYMOUS),
    "session.compaction_failed": (CompactionFailed, Sensitivity.PSEUDONYMOUS),
}


def event_type(event: CompactionEvent) -> str:
    return type(event).__struct_config__.tag  # type: ignore[return-value]


_event_encoder = msgspec.json.Encoder()


@functools.cache
def _event_decoder() -> msgspec.json.Decoder[CompactionEvent]:
    """Built on first use: a reader that decodes no event never evaluates the payloads' types."""
    return msgspec.json.Decoder(CompactionEvent)


def encode_event(event: CompactionEvent) -> bytes:
    """JSON with a "type" tag: what the store keeps and `status --json` prints."""
    return _event_encoder.encode(event)


def decode_event(data: bytes) -> CompactionEvent:
    return _event_decoder().decode(data)


Subscriber = Callable[[CompactionEvent], None]


class EventBus:
    """Synchronous fan-out. A failing subscriber is logged and never breaks the session's turn."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def emit(self, event: CompactionEvent) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                import logging  # only now: a reader of the store never needs it

                logging.getLogger(__name__).exception(
                    "event subscriber failed on %s", event_type(event)
                )


def __getattr__(name: str) -> object:
    """`redact`, re-exported from its old home, imported when asked for: a reader of the store
    (status, cache list) never compiles the redaction patterns."""
    if name == "redact":
        from engine.redaction import redact

        return redact
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
