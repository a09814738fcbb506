"""What a committed compaction saved (§7's arithmetic, per compaction): the tokens it took out of
every later request, what that is worth per turn at the cache-read rate, what it cost (its call,
and the one-time re-cache of the shorter transcript), and after how many turns it has paid back.

The arithmetic is engine.policy.payback's: the compaction turn's re-cache, then a saving per
turn at the cache-read rate.
"""

from __future__ import annotations

import math
from decimal import Decimal

import msgspec

from engine.policy.payback import payback_turns, recache_usd
from engine.record import CompactionRecord
from engine.summarizers.pricing import ModelPrice, price_for
from engine.summarizers.settings import SummarizerSettings

_PER_TOKEN = Decimal(1_000_000)
# The session's primary model is the agent's, not ours to know: a compaction is priced at its own
# model's rates (the ones the workspace states for it, else the price table's for an Anthropic
# model), anything else at the §7 reference model's. A stated cache-read rate of 0 (a local
# model's $0, say) would make every saving worth nothing and never paid back: the reference
# model's rates then too.
REFERENCE_MODEL = "claude-haiku-4-5"


class CompactionSavings(msgspec.Struct, frozen=True):
    saved_tokens: int  # removed from every later request
    saved_usd_per_turn: Decimal  # those tokens at the cache-read rate
    cost_usd: Decimal  # the compaction call (0: a mask, or a cache hit)
    recache_usd: Decimal  # first turn after: the new transcript written, not the old one read
    # Turns after the compaction's own turn until it has paid back (0: on that turn, as
    # tests/perf/workload_cost.py counts); None: it removed nothing, so never.
    break_even_turns: int | None
    priced_at: str  # the model whose rates these are


def price_for_record(
    record: CompactionRecord, settings: SummarizerSettings | None = None
) -> ModelPrice:
    """`settings`: the workspace's summarizer settings, bound to the model they serve (their
    stated price is that model's, not another's a session used before)."""
    model = record.model or ""
    if settings is not None and settings.model == model and settings.price is not None:
        stated = settings.price.model_price(model.removeprefix("anthropic:"))
        if stated.cache_read_per_mtok > 0:
            return stated
    if model.startswith("anthropic:"):
        try:
            return price_for(model)
        except KeyError:
            pass
    return price_for(REFERENCE_MODEL)


def compaction_savings(
    record: CompactionRecord, settings: SummarizerSettings | None = None
) -> CompactionSavings | None:
    """None for a record written before the history's tokens were recorded on it."""
    before, after = record.history_tokens_before, record.history_tokens_after
    if before <= 0:
        return None
    price = price_for_record(record, settings)
    read, write = price.cache_read_per_mtok / _PER_TOKEN, price.cache_write_per_mtok / _PER_TOKEN
    saved = before - after
    per_turn = saved * read
    recache = recache_usd(before, after, read=read, write=write)
    # The compaction's own turn pays the re-cache; each later turn earns `per_turn`.
    turns = payback_turns(before, after, call_usd=record.cost_usd, read=read, write=write)
    even = None if saved <= 0 or per_turn <= 0 or turns is None else math.ceil(turns)
    return CompactionSavings(
        saved_tokens=saved,
        saved_usd_per_turn=per_turn,
        cost_usd=record.cost_usd,
        recache_usd=recache,
        break_even_turns=even,
        priced_at=price.model,
    )
