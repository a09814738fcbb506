"""The session compaction engine (session-compaction-spec): a library with no UI import.

metis dev, the inspector app, the CLI and the benchmarks all use these names. They load on first
use (PEP 562): `import engine.policy.trigger` must not pay for asyncio and SQLite (the statusline
runs on every agent update), while `from engine import X` keeps working for every name below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME: dict[str, str] = {
    "AsyncCompactionCache": "engine.cache",
    "CacheRow": "engine.cache",
    "CacheUnavailable": "engine.cache",
    "CompactionCache": "engine.cache",
    "CompactionCompleted": "engine.events",
    "CompactionConfig": "engine.config",
    "CompactionEvent": "engine.events",
    "CompactionFailed": "engine.events",
    "CompactionOutcome": "engine.outcomes",
    "CompactionPreview": "engine.outcomes",
    "CompactionRecord": "engine.outcomes",
    "CompactionStarted": "engine.events",
    "ConfigError": "engine.config",
    "ContentBlock": "engine.messages",
    "ErrorClass": "engine.summarizers",
    "EventBus": "engine.events",
    "ExtractiveSummarizer": "engine.summarizers",
    "History": "engine.history",
    "HistoryError": "engine.messages",
    "Message": "engine.messages",
    "MessageMetadata": "engine.messages",
    "PAYLOAD_REGISTRY": "engine.events",
    "PreparedCompaction": "engine.outcomes",
    "ProjectedCompaction": "engine.policy.projection",
    "Projection": "engine.policy.projection",
    "Role": "engine.messages",
    "SessionManager": "engine.manager",
    "ManagerDeps": "engine.manager",
    "SessionPrefix": "engine.summarizers.request",
    "CallUsage": "engine.summarizers.pricing",
    "CompactionSavings": "engine.savings",
    "compaction_savings": "engine.savings",
    "StrategyPlan": "engine.policy.strategies",
    "plan_strategy": "engine.policy.strategies",
    "SummaryCallPrice": "engine.policy.summary_budget",
    "summary_budget": "engine.policy.summary_budget",
    "COMPACTION_STRATEGIES": "engine.config",
    "SessionPersistence": "engine.manager",
    "SessionSnapshot": "engine.outcomes",
    "SpanChanged": "engine.outcomes",
    "SpanPlan": "engine.policy.span",
    "Summarizer": "engine.summarizers",
    "SummarizerError": "engine.summarizers",
    "SummaryRequest": "engine.summarizers",
    "SummaryResult": "engine.summarizers",
    "TextContentBlock": "engine.messages",
    "ToolResultContentBlock": "engine.messages",
    "ToolUseContentBlock": "engine.messages",
    "TriggerAction": "engine.policy.trigger",
    "TriggerDecision": "engine.policy.trigger",
    "TriggerReason": "engine.policy.trigger",
    "TruncationPlan": "engine.policy.span",
    "TurnPlan": "engine.outcomes",
    "canonical_bytes": "engine.cache_key",
    "canonicalize": "engine.cache_key",
    "compute_cache_key": "engine.cache_key",
    "decide_trigger": "engine.policy.trigger",
    "decode_event": "engine.events",
    "decode_message": "engine.messages",
    "encode_event": "engine.events",
    "encode_message": "engine.messages",
    "estimate_message_tokens": "engine.tokens",
    "estimate_text_tokens": "engine.tokens",
    "event_type": "engine.events",
    "is_tool_cycle_boundary": "engine.policy.span",
    "make_summarizer": "engine.summarizers",
    "check_summarizer": "engine.summarizers",
    "price_origin": "engine.summarizers",
    "StatedPrice": "engine.summarizers.settings",
    "SummarizerSettings": "engine.summarizers.settings",
    "ConfigFileError": "engine.workspace_config",
    "ResolvedConfig": "engine.workspace_config",
    "resolve_config": "engine.workspace_config",
    "plan_span": "engine.policy.span",
    "plan_truncation": "engine.policy.span",
    "plan_turn": "engine.policy.plan",
    "NothingToCompact": "engine.errors",
    "project_compactions": "engine.policy.projection",
    "redact": "engine.events",
    "splice": "engine.policy.splice",
    "summary_message": "engine.policy.splice",
    "summary_text": "engine.policy.splice",
    "text_message": "engine.history",
    "validate_history": "engine.messages",
    "validate_message": "engine.messages",
}

__all__ = [
    "COMPACTION_STRATEGIES",
    "PAYLOAD_REGISTRY",
    "AsyncCompactionCache",
    "CacheRow",
    "CacheUnavailable",
    "CallUsage",
    "CompactionCache",
    "CompactionCompleted",
    "CompactionConfig",
    "CompactionEvent",
    "CompactionFailed",
    "CompactionOutcome",
    "CompactionPreview",
    "CompactionRecord",
    "CompactionSavings",
    "CompactionStarted",
    "ConfigError",
    "ConfigFileError",
    "ContentBlock",
    "ErrorClass",
    "EventBus",
    "ExtractiveSummarizer",
    "History",
    "HistoryError",
    "ManagerDeps",
    "Message",
    "MessageMetadata",
    "NothingToCompact",
    "PreparedCompaction",
    "ProjectedCompaction",
    "Projection",
    "ResolvedConfig",
    "Role",
    "SessionManager",
    "SessionPersistence",
    "SessionPrefix",
    "SessionSnapshot",
    "SpanChanged",
    "SpanPlan",
    "StatedPrice",
    "StrategyPlan",
    "Summarizer",
    "SummarizerError",
    "SummarizerSettings",
    "SummaryCallPrice",
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
    "check_summarizer",
    "compaction_savings",
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
    "plan_strategy",
    "plan_truncation",
    "plan_turn",
    "price_origin",
    "project_compactions",
    "redact",
    "resolve_config",
    "splice",
    "summary_budget",
    "summary_message",
    "summary_text",
    "text_message",
    "validate_history",
    "validate_message",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


if TYPE_CHECKING:  # the eager imports, for type checkers and editors only
    from engine.cache import AsyncCompactionCache, CacheRow, CacheUnavailable, CompactionCache
    from engine.cache_key import canonical_bytes, canonicalize, compute_cache_key
    from engine.config import COMPACTION_STRATEGIES, CompactionConfig, ConfigError
    from engine.errors import NothingToCompact
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
    from engine.manager import ManagerDeps, SessionManager, SessionPersistence
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
    from engine.policy.plan import plan_turn
    from engine.policy.projection import ProjectedCompaction, Projection, project_compactions
    from engine.policy.span import (
        SpanPlan,
        TruncationPlan,
        is_tool_cycle_boundary,
        plan_span,
        plan_truncation,
    )
    from engine.policy.splice import splice, summary_message, summary_text
    from engine.policy.strategies import StrategyPlan, plan_strategy
    from engine.policy.summary_budget import SummaryCallPrice, summary_budget
    from engine.policy.trigger import TriggerAction, TriggerDecision, TriggerReason, decide_trigger
    from engine.savings import CompactionSavings, compaction_savings
    from engine.summarizers import (
        ErrorClass,
        ExtractiveSummarizer,
        Summarizer,
        SummarizerError,
        SummaryRequest,
        SummaryResult,
        check_summarizer,
        make_summarizer,
        price_origin,
    )
    from engine.summarizers.pricing import CallUsage
    from engine.summarizers.request import SessionPrefix
    from engine.summarizers.settings import StatedPrice, SummarizerSettings
    from engine.tokens import estimate_message_tokens, estimate_text_tokens
    from engine.workspace_config import ConfigFileError, ResolvedConfig, resolve_config
