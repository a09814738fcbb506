from decimal import Decimal

import msgspec
import pytest

from engine.summarizers.pricing import PRICES, ModelPrice, cost_of, price_for


@pytest.mark.parametrize(
    ("model", "input_price", "output_price"),
    [
        ("claude-haiku-4-5", "1", "5"),
        ("claude-sonnet-4-5", "3", "15"),
        ("claude-opus-4-1", "15", "75"),
        ("claude-3-5-haiku", "0.80", "4"),
    ],
)
def test_each_model_has_its_published_price(
    model: str, input_price: str, output_price: str
) -> None:
    price = price_for(model)
    assert price.model == model
    assert price.input_per_mtok == Decimal(input_price)
    assert price.output_per_mtok == Decimal(output_price)


@pytest.mark.parametrize("model", sorted(PRICES))
def test_cache_writes_cost_1_25x_and_cache_reads_0_1x_input(model: str) -> None:
    price = price_for(model)
    assert price.cache_write_per_mtok == price.input_per_mtok * Decimal("1.25")
    assert price.cache_read_per_mtok == price.input_per_mtok * Decimal("0.1")


def test_prices_are_exact_decimals() -> None:
    rate_fields = [field for field in ModelPrice.__struct_fields__ if field != "model"]
    assert all(isinstance(getattr(p, f), Decimal) for p in PRICES.values() for f in rate_fields)
    assert price_for("claude-3-5-haiku").cache_read_per_mtok == Decimal("0.08")


@pytest.mark.parametrize(
    "spelling",
    [
        "claude-haiku-4-5",
        "anthropic:claude-haiku-4-5",
        "claude-haiku-4-5-20251001",
        "claude-haiku-4-5-latest",
    ],
)
def test_provider_prefix_and_snapshot_suffix_resolve_to_the_family(spelling: str) -> None:
    assert price_for(spelling) is PRICES["claude-haiku-4-5"]


def test_unknown_model_raises_key_error_naming_it_and_the_known_ones() -> None:
    with pytest.raises(KeyError) as raised:
        price_for("gpt-4o")
    message = str(raised.value)
    assert "gpt-4o" in message
    assert "claude-haiku-4-5" in message


def test_cost_of_sums_every_token_kind_exactly() -> None:
    price = price_for("claude-haiku-4-5")
    # 1M input at $1, 1M output at $5, 1M cache writes at $1.25, 1M cache reads at $0.10.
    assert cost_of(price, 1_000_000, 1_000_000, 1_000_000, 1_000_000) == Decimal("7.35")
    assert cost_of(price, 1200, 300) == Decimal("0.0027")
    assert cost_of(price, 0, 0) == 0


def test_cost_of_a_single_token_is_not_rounded_away() -> None:
    assert cost_of(price_for("claude-3-5-haiku"), 0, 0, 0, 1) == Decimal("0.00000008")


def test_cost_of_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="negative"):
        cost_of(price_for("claude-opus-4-1"), -1, 0)


def test_model_price_round_trips_through_msgspec() -> None:
    price = price_for("claude-sonnet-4-5")
    assert msgspec.json.decode(msgspec.json.encode(price), type=ModelPrice) == price
