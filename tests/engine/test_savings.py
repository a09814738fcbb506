"""engine.savings: what a compaction saved, and when it paid back (§7's arithmetic)."""

from __future__ import annotations

from decimal import Decimal

from engine.outcomes import CompactionRecord
from engine.savings import compaction_savings
from engine.summarizers.settings import StatedPrice, SummarizerSettings


def record(before: int, after: int, cost: str = "0", model: str | None = None) -> CompactionRecord:
    return CompactionRecord(
        kind="summary",
        turn_id="t",
        watermark_before=0,
        watermark_after=10,
        span_message_count=10,
        span_token_count_in=before - after,
        span_token_count_out=0,
        replacement_count=1,
        cost_usd=Decimal(cost),
        model=model,
        history_tokens_before=before,
        history_tokens_after=after,
    )


def test_the_spec_example_pays_back_within_two_turns_when_the_call_is_free() -> None:
    # §7: ~33k of transcript down to ~5k; haiku rates: read $0.10, write $1.25 per Mtok.
    savings = compaction_savings(record(33_000, 5_000))
    assert savings is not None
    assert savings.saved_tokens == 28_000
    assert savings.saved_usd_per_turn == Decimal("0.0028")
    assert savings.recache_usd == Decimal("0.00625") - Decimal("0.0033")
    assert savings.break_even_turns == 2  # 0.00295 owed, 0.0028 a turn
    assert savings.priced_at == "claude-haiku-4-5"


def test_a_paid_call_counts_in_break_even_at_its_models_rates() -> None:
    free = compaction_savings(record(33_000, 3_000))
    paid = compaction_savings(record(33_000, 3_000, "0.0139", "anthropic:claude-haiku-4-5"))
    assert free is not None and paid is not None
    assert free.break_even_turns == 1
    assert paid.break_even_turns == 5  # (0.0139 + 0.00045) / 0.003 = 4.8, rounded up
    sonnet = compaction_savings(record(33_000, 3_000, "0.0139", "anthropic:claude-sonnet-4-5"))
    assert sonnet is not None and sonnet.priced_at == "claude-sonnet-4-5"
    assert sonnet.saved_usd_per_turn == 3 * free.saved_usd_per_turn


def test_nothing_saved_never_pays_and_an_old_record_has_no_figures() -> None:
    never = compaction_savings(record(5_000, 5_000))
    assert never is not None and never.break_even_turns is None
    assert compaction_savings(record(0, 0)) is None


def stated(model: str | None, input_per_mtok: str, **more: str) -> SummarizerSettings:
    rates = {k: Decimal(v) for k, v in more.items()}
    price = StatedPrice(input_per_mtok=Decimal(input_per_mtok), output_per_mtok=Decimal(0), **rates)
    return SummarizerSettings(model=model, price=price)


def test_a_stated_price_prices_its_own_models_compactions() -> None:
    # A model the table does not list (or one whose rates the user states): its stated rates,
    # not the reference model's.
    model = "anthropic:claude-internal-7"
    savings = compaction_savings(record(33_000, 3_000, "0.02", model), stated(model, "2"))
    assert savings is not None and savings.priced_at == "claude-internal-7"
    assert savings.saved_usd_per_turn == 30_000 * Decimal("0.2") / 1_000_000
    # A stated cache-read rate wins over the 0.1x rule.
    cheap = compaction_savings(
        record(33_000, 3_000, "0.02", model), stated(model, "2", cache_read_per_mtok="0.05")
    )
    assert cheap is not None and cheap.saved_usd_per_turn == 30_000 * Decimal("0.05") / 1_000_000


def test_a_stated_price_for_another_model_or_of_zero_is_not_used() -> None:
    model = "anthropic:claude-internal-7"
    other = compaction_savings(record(33_000, 3_000, "0", model), stated("openai:x", "2"))
    assert other is not None and other.priced_at == "claude-haiku-4-5"
    # Settings that name no model serve the session's: bound to it, they price its records.
    unbound = SummarizerSettings(
        price=StatedPrice(input_per_mtok=Decimal(2), output_per_mtok=Decimal(0))
    )
    assert compaction_savings(record(33_000, 3_000, "0", model), unbound.bound(model)) == (
        compaction_savings(record(33_000, 3_000, "0", model), stated(model, "2"))
    )
    # A local model stated at $0 says nothing of what reading the cache costs: no division by
    # a zero rate, the reference model's rates instead.
    local = compaction_savings(
        record(33_000, 3_000, "0", "local:llama"), stated("local:llama", "0")
    )
    assert local is not None and local.priced_at == "claude-haiku-4-5"
    assert local.break_even_turns is not None
