"""The session compaction engine (session-compaction-spec): a library with no UI import.

metis dev, the inspector app, the CLI and the benchmarks use the engine through the names below,
and only these: `from engine import SessionManager`. Each name is listed once, under the module
that defines it; it loads on first use (PEP 562), so `import engine` costs nothing and a caller
pays only for the modules its names live in (the status line never loads asyncio or SQLite).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a help page needs none)
if TYPE_CHECKING:
    from typing import Any

# module -> the public names it defines
_EXPORTS: dict[str, tuple[str, ...]] = {
    "engine.cache.async_cache": ("AsyncCompactionCache",),
    "engine.cache.rows": (
        "CacheRow",
        "CacheUnavailable",
        "cache_backers",
    ),
    "engine.cache.sync_cache": ("CompactionCache",),
    "engine.cache_key": (
        "canonical_bytes",
        "canonicalize",
        "compute_cache_key",
    ),
    "engine.compaction.deps": (
        "ManagerDeps",
        "SessionPersistence",
    ),
    "engine.config": (
        "COMPACTION_STRATEGIES",
        "CompactionConfig",
        "config_with_text",
    ),
    "engine.endpoint": ("call_endpoint",),
    "engine.errors": (
        "ConfigError",
        "no_span_reason",
        "NothingToCompact",
        "SpanChanged",
        "StoreError",
        "UndoRefused",
    ),
    "engine.events": (
        "CompactionCompleted",
        "CompactionEvent",
        "CompactionFailed",
        "CompactionStarted",
        "EventBus",
        "PAYLOAD_REGISTRY",
        "decode_event",
        "encode_event",
        "event_type",
    ),
    "engine.redaction": ("redact",),
    "engine.history": (
        "History",
        "text_message",
    ),
    "engine.layout": (
        "CONFIG_FILE",
        "METIS_DIR",
        "app_error_log_path",
        "cache_path",
        "config_path",
        "file_identity",
        "is_workspace",
        "metis_dir",
        "simulator_log_path",
        "store_path",
        "user_config_path",
    ),
    "engine.manager": ("SessionManager",),
    "engine.messages": (
        "ContentBlock",
        "HistoryError",
        "Message",
        "MessageMetadata",
        "Role",
        "TextContentBlock",
        "ToolResultContentBlock",
        "ToolUseContentBlock",
        "decode_message",
        "encode_message",
        "validate_history",
        "validate_message",
    ),
    "engine.outcomes": (
        "CompactionOutcome",
        "CompactionPreview",
        "PreparedCompaction",
        "SessionSnapshot",
    ),
    "engine.policy.plan": (
        "TurnPlan",
        "plan_turn",
    ),
    "engine.policy.projection": (
        "EveryTurnForced",
        "ProjectedCompaction",
        "Projection",
        "ProjectionState",
        "project_compactions",
    ),
    "engine.policy.span": (
        "SpanPlan",
        "TruncationPlan",
        "check_span_unchanged",
        "is_tool_cycle_boundary",
        "plan_span",
        "plan_truncation",
    ),
    "engine.policy.splice": (
        "splice",
        "summary_body",
        "summary_message",
        "summary_text",
    ),
    "engine.policy.strategies": (
        "StrategyPlan",
        "is_masked",
        "plan_strategy",
        "reads_tool_output",
    ),
    "engine.policy.summary_budget": (
        "SummaryCallPrice",
        "summary_budget",
    ),
    "engine.policy.trigger": (
        "PressureZone",
        "TriggerAction",
        "TriggerDecision",
        "TriggerReason",
        "budget_exhausted",
        "decide_trigger",
        "pressure_zone",
    ),
    "engine.policy.undo": (
        "latest_in_effect",
        "undo_compaction",
    ),
    "engine.record": ("CallUsage", "CompactionRecord"),
    "engine.row_check": ("BadRow",),
    "engine.savings": (
        "CompactionSavings",
        "compaction_savings",
    ),
    "engine.store": (
        "PlanHistories",
        "SCHEMA_VERSION",
        "SessionInfo",
        "SessionStore",
    ),
    "engine.store.rows": ("StoredCompaction",),
    "engine.store.tail": (
        "CommitWaiter",
        "StoreTailer",
    ),
    "engine.summarizers": (
        "ErrorClass",
        "ExtractiveSummarizer",
        "OFFLINE",
        "Summarizer",
        "SummarizerError",
        "SummaryRequest",
        "SummaryResult",
        "check_summarizer",
        "is_offline",
        "make_summarizer",
        "missing_key",
        "named_price_origin",
        "price_origin",
    ),
    "engine.summarizers.anthropic_summarizer": ("PROMPT_OVERHEAD_TOKENS",),
    "engine.summarizers.pricing": (
        "cost_of",
        "price_for",
    ),
    "engine.summarizers.request": ("SessionPrefix",),
    "engine.summarizers.settings": (
        "StatedPrice",
        "SummarizerSettings",
    ),
    "engine.tokens": (
        "CHARS_PER_TOKEN",
        "estimate_message_tokens",
        "estimate_text_tokens",
    ),
    "engine.workspace_config": (
        "ConfigFileError",
        "ResolvedConfig",
        "parse_flags",
        "resolve_config",
        "trust_workspace",
    ),
    "engine.workspace_trust": (
        "WorkspaceUntrusted",
        "read_record",
        "record_path",
        "untrust_workspace",
    ),
}
# Public names under another name than their module's (a bare DEFAULT would say too little).
_RENAMED: dict[str, tuple[str, str]] = {
    "LedgerSection": ("engine.ledger.render", "Section"),
    "ledger_counts": ("engine.ledger.render", "counts"),
    "split_ledger": ("engine.ledger.render", "split"),
    "ORIGIN_DEFAULT": ("engine.workspace_config", "DEFAULT"),
}
_HOME: dict[str, tuple[str, str]] = {
    **{name: (module, name) for module, names in _EXPORTS.items() for name in names},
    **_RENAMED,
}
__all__ = sorted(_HOME)  # derived from the one table above


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = home
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
