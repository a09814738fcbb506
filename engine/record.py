"""The CompactionRecord: what the store keeps beside an archived span, for each committed
compaction or truncation (what undo, the savings and the app read back), with the compaction
call's usage (CallUsage) as the provider reported it."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import msgspec


class CallUsage(msgspec.Struct, frozen=True, kw_only=True):
    """One call's usage as the provider reported it. `input_tokens` excludes the cached kinds,
    as the Messages API counts them; the four kinds are priced separately (§12.5)."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Everything the call read, whatever rate it was billed at."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


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
