"""What planning and compaction return: plain Structs the app, CLI and store share."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import msgspec

from engine.errors import SpanChanged as SpanChanged  # re-exported: its old home
from engine.events import FailureMode
from engine.messages import Message
from engine.policy.plan import TurnPlan as TurnPlan  # re-exported: its old home
from engine.policy.span import SpanPlan
from engine.record import CallUsage
from engine.record import CompactionRecord as CompactionRecord  # re-exported: its old home


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
    price_origin: str = ""  # where the model's price comes from (engine.summarizers.price_origin)
    endpoint: str = ""  # where the call would send the session (engine.endpoint.call_endpoint)


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
