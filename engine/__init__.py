"""The session compaction engine (session-compaction-spec): a library with no UI import.

metis dev, the inspector app, the CLI and the benchmarks all use these names.
"""

from engine.cache import AsyncCompactionCache, CacheRow, CacheUnavailable, CompactionCache
from engine.cache_key import canonical_bytes, canonicalize, compute_cache_key
from engine.config import CompactionConfig, ConfigError
from engine.events import (
    PAYLOAD_REGISTRY,
    CompactionCompleted,
    CompactionEvent,
    CompactionFailed,
    CompactionStarted,
    EventBus,
    decode_event,
    encode_event,
    event_type,
    redact,
)
from engine.history import History, text_message
from engine.manager import SessionManager, SessionPersistence, plan_turn
from engine.messages import (
    ContentBlock,
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
from engine.outcomes import (
    CompactionOutcome,
    CompactionPreview,
    CompactionRecord,
    PreparedCompaction,
    SessionSnapshot,
    SpanChanged,
    TurnPlan,
)
from engine.policy.projection import ProjectedCompaction, Projection, project_compactions
from engine.policy.span import (
    SpanPlan,
    TruncationPlan,
    is_tool_cycle_boundary,
    plan_span,
    plan_truncation,
)
from engine.policy.splice import splice, summary_message, summary_text
from engine.policy.trigger import TriggerAction, TriggerDecision, TriggerReason, decide_trigger
from engine.summarizers import (
    ErrorClass,
    ExtractiveSummarizer,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResult,
    make_summarizer,
)
from engine.tokens import estimate_message_tokens, estimate_text_tokens

__all__ = [
    "PAYLOAD_REGISTRY",
    "AsyncCompactionCache",
    "CacheRow",
    "CacheUnavailable",
    "CompactionCache",
    "CompactionCompleted",
    "CompactionConfig",
    "CompactionEvent",
    "CompactionFailed",
    "CompactionOutcome",
    "CompactionPreview",
    "CompactionRecord",
    "CompactionStarted",
    "ConfigError",
    "ContentBlock",
    "ErrorClass",
    "EventBus",
    "ExtractiveSummarizer",
    "History",
    "HistoryError",
    "Message",
    "MessageMetadata",
    "PreparedCompaction",
    "ProjectedCompaction",
    "Projection",
    "Role",
    "SessionManager",
    "SessionPersistence",
    "SessionSnapshot",
    "SpanChanged",
    "SpanPlan",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
    "SummaryResult",
    "TextContentBlock",
    "ToolResultContentBlock",
    "ToolUseContentBlock",
    "TriggerAction",
    "TriggerDecision",
    "TriggerReason",
    "TruncationPlan",
    "TurnPlan",
    "canonical_bytes",
    "canonicalize",
    "compute_cache_key",
    "decide_trigger",
    "decode_event",
    "decode_message",
    "encode_event",
    "encode_message",
    "estimate_message_tokens",
    "estimate_text_tokens",
    "event_type",
    "is_tool_cycle_boundary",
    "make_summarizer",
    "plan_span",
    "plan_truncation",
    "plan_turn",
    "project_compactions",
    "redact",
    "splice",
    "summary_message",
    "summary_text",
    "text_message",
    "validate_history",
    "validate_message",
]
