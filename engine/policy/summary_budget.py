"""How long a summary may be: the compaction call's max_tokens, chosen from what pays (§7).

`compaction_max_summary_tokens` is the ceiling, not the length every summary fills. With a paid
summarizer most of the compaction call's cost is its output (a 2,000-token summary at haiku's $5
per million output tokens is 70% of a call on the session's cached prefix), and each token the
summary keeps is one token the next turns read again. So the budget is the longest summary whose
call, plus the one-time §7 re-cache, is paid back by the per-turn saving within
`compaction_summary_payback_turns` turns (engine.policy.payback's inequality):

    call(B) + rewrite(B) <= N * read * (S - B)
    call(B)    = input_usd + output * B          (the request's input, then B tokens out)
    rewrite(B) = write * (K + B) - read * (K + S) (the compaction turn writes the new transcript
                                                  where it would have read the old one)

S: the span's tokens; K: the rest of the active history (kept as it is); read/write: the cache
rates the session's next turns bill the transcript at. Solved for B:

    B <= (N * read * S + read * (K + S) - write * K - input_usd) / (output + write + N * read)

Never above the ceiling; never below MIN_SUMMARY_TOKENS (a span too small to pay back anything
still gets a summary worth keeping); a free summarizer (output price 0) keeps the ceiling, since
its summary costs nothing to write. N = 0 turns the rule off (the ceiling).
"""

from __future__ import annotations

from decimal import Decimal

import msgspec

from engine.policy.payback import payback_turns

# The floor: room for the goal, the last ask, the constraints and a handful of exact facts.
MIN_SUMMARY_TOKENS = 500
# Budgets are rounded down to this step, so a tail a few tokens longer keeps the same §5.1 key.
BUDGET_STEP = 50


class SummaryCallPrice(msgspec.Struct, frozen=True, kw_only=True):
    """What a compaction call for one span is projected to cost, and what the session's next
    turns pay per transcript token: all in USD (per token where named so)."""

    input_usd: Decimal  # the request's input, at the rates it will bill (cached prefix or not)
    output_per_token: Decimal  # each token of summary written
    cache_write_per_token: Decimal  # the session's rate for writing its transcript to the cache
    cache_read_per_token: Decimal  # ... and for reading it back on each later turn

    @property
    def free(self) -> bool:
        return self.output_per_token <= 0


FREE = SummaryCallPrice(
    input_usd=Decimal(0),
    output_per_token=Decimal(0),
    cache_write_per_token=Decimal(0),
    cache_read_per_token=Decimal(0),
)


def summary_budget(
    span_tokens: int,
    kept_tokens: int,
    price: SummaryCallPrice,
    *,
    ceiling: int,
    payback_turns: int,
    floor: int = MIN_SUMMARY_TOKENS,
) -> int:
    """The summary's max_tokens for a span of `span_tokens` with `kept_tokens` of history left
    as they are: the largest budget that pays back within `payback_turns` turns (module doc),
    rounded down to BUDGET_STEP and clamped to [min(floor, ceiling), ceiling]."""
    if payback_turns <= 0 or price.free:
        return ceiling
    low = min(floor, ceiling)
    n = Decimal(payback_turns)
    read, write = price.cache_read_per_token, price.cache_write_per_token
    room = n * read * span_tokens + read * (kept_tokens + span_tokens) - write * kept_tokens
    room -= price.input_usd
    per_token = price.output_per_token + write + n * read
    best = int(room / per_token) // BUDGET_STEP * BUDGET_STEP if room > 0 else 0
    return max(low, min(ceiling, best))


def payback_turns_for(
    span_tokens: int, kept_tokens: int, summary_tokens: int, price: SummaryCallPrice
) -> Decimal | None:
    """Turns after the compaction until a summary of `summary_tokens` has paid for its call and
    its re-cache (the module doc's inequality, solved for N); None when it never does."""
    return payback_turns(
        kept_tokens + span_tokens,
        kept_tokens + summary_tokens,
        call_usd=price.input_usd + price.output_per_token * summary_tokens,
        read=price.cache_read_per_token,
        write=price.cache_write_per_token,
    )


__all__ = ["FREE", "MIN_SUMMARY_TOKENS", "SummaryCallPrice", "payback_turns_for", "summary_budget"]
