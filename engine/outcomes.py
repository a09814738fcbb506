"""What planning and compaction return: plain Structs the app, CLI and store share."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import msgspec

from engine.errors import SpanChanged as SpanChanged  # re-exported: its old home
from engine.events import FailureMode
from engine.messages import Message
from engine.policy.span import SpanPlan
from engine.policy.trigger import TriggerDecision
from engine.summarizers.pricing import CallUsage


class TurnPlan(msgspec.Struct, frozen=True):
    """What the engine would do at the start of this turn, and why (pure: nothing is called)."""

    decision: TriggerDecision
    span: SpanPlan | None  # None: nothing compactable, or no valid boundary (see boundary_found)
    boundary_found: bool
    floor: int  # first compactable index: just past the last summary
    stable_prefix_end: int
    message_count: int
    preserve_recent_turns: int
    nominal_watermark: int  # §3.2: where the preserved tail starts, before any slide
    irreducible_tokens: int | None  # pending tokens compaction of this span cannot remove
    # engine.policy.strategies: the configured strategy, what it would do with `span` (summarize
    # or mask; None: nothing to do), and the tokens that is expected to remove.
    strategy: str = "summarize"
    action: str | None = None
    expected_saved_tokens: int | None = None


class CompactionPreview(msgspec.Struct, frozen=True):
    """The compact-now preview: the span, what it costs, and whether the cache already has it."""

    span: SpanPlan
    cache_key: str
    cache_hit: bool
    model: str
    estimated_cost_usd: Decimal
    spent_usd: Decimal
    budget_usd: Decimal
    instructions: str | None
    strategy: str = "summarize"
    action: str = "summarize"  # "mask": no call, nothing cached (cache_key is "")
    expected_saved_tokens: int | None = None


class PreparedCompaction(msgspec.Struct, frozen=True):
    """A summary made (or read from the cache) and not yet spliced: shown for acceptance first."""

    session_id: str
    span: SpanPlan
    span_ids: tuple[
        str, ...
    ]  # checked again at commit: the span must be exactly what was summarized
    summary: str
    model: str
    prompt_version: str
    cache_key: str
    cache_hit: bool
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal
    latency_ms: int
    instructions: str | None
    trigger: Literal["threshold", "hard_cap", "manual"]
    strategy: str = "summarize"
    # "mask": no call was made; `replacement` holds the masked copies of the span.
    action: Literal["summarize", "mask"] = "summarize"
    replacement: tuple[Message, ...] = ()
    usage: CallUsage | None = None  # the call's usage as the provider reported it
    # What engine.summary_checks did to the answer ("summary_over_budget: ...",
    # "usage_implausible: ..."): kept in the CompactionRecord and shown by the CLI.
    notes: tuple[str, ...] = ()


class CompactionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One committed compaction or truncation, as the store keeps it beside the archived span."""

    kind: Literal["summary", "truncation", "mask"]
    turn_id: str
    watermark_before: int
    watermark_after: int
    span_message_count: int
    span_token_count_in: int
    span_token_count_out: int
    replacement_count: int  # messages put in the span's place: the summary and its fillers
    cache_key: str | None = None
    cache_hit: bool = False
    model: str | None = None
    prompt_version: str | None = None
    cost_usd: Decimal = Decimal(0)
    latency_ms: int = 0
    trigger: str = "threshold"
    instructions: str | None = None
    summary_message_id: str | None = None
    created_at_ms: int = 0
    # engine.policy.strategies: which strategy ran (None: written before strategies existed).
    strategy: str | None = None
    # The active history's tokens just before and just after: what the compaction saved.
    history_tokens_before: int = 0
    history_tokens_after: int = 0
    usage: CallUsage | None = None  # the compaction call's usage (None: no call, or a cache hit)
    # What engine.summary_checks did to the call's answer: "summary_over_budget: summary cut to
    # N tokens ...", "usage_implausible: ...; charged at the request's bound $X". (The §6 completed
    # event's payload is fixed by the spec; a failed call says it in error_message.)
    notes: tuple[str, ...] = ()


Status = Literal["skipped", "compacted", "failed", "truncated"]


class CompactionOutcome(msgspec.Struct, frozen=True, kw_only=True):
    status: Status
    plan: TurnPlan | None = None
    record: CompactionRecord | None = None
    failure_mode: FailureMode | None = None
    error_class: str | None = None
    error_message: str | None = None
    truncated_message_count: int = 0
    summary_message: Message | None = None


class SessionSnapshot(msgspec.Struct, frozen=True):
    """A session as the store holds it now; `revision` counts its compactions and undos."""

    session_id: str
    messages: list[Message]
    tokens: list[int]
    stable_prefix_end: int
    spent_usd: Decimal
    revision: int
