"""The CompactionRecord: what the store keeps beside an archived span, for each committed
compaction or truncation (what undo, the savings and the app read back)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import msgspec

from engine.summarizers.pricing import CallUsage


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
