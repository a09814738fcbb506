"""What an Anthropic compaction call costs (§4: the call is accounted separately, in exact USD).

Prices are Decimal USD per million tokens. Prompt-cache writes and reads are priced by the input
price's factors in engine.policy.payback (Anthropic's published pricing).
"""

from __future__ import annotations

import re
from decimal import Decimal

import msgspec

from engine.policy.payback import CACHE_READ_FACTOR, CACHE_WRITE_FACTOR
from engine.record import CallUsage as CallUsage  # re-exported: its old home

_PER_TOKEN = Decimal(1_000_000)


class ModelPrice(msgspec.Struct, frozen=True):
    """USD per million tokens of each kind, for one model."""

    model: str
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cache_write_per_mtok: Decimal
    cache_read_per_mtok: Decimal


def price_from_rates(
    model: str,
    input_per_mtok: Decimal,
    output_per_mtok: Decimal,
    *,
    cache_write_per_mtok: Decimal | None = None,
    cache_read_per_mtok: Decimal | None = None,
) -> ModelPrice:
    """A price from its input and output rates; unset cache rates follow the 1.25x / 0.1x rule."""
    return ModelPrice(
        model=model,
        input_per_mtok=input_per_mtok,
        output_per_mtok=output_per_mtok,
        cache_write_per_mtok=(
            input_per_mtok * CACHE_WRITE_FACTOR
            if cache_write_per_mtok is None
            else cache_write_per_mtok
        ),
        cache_read_per_mtok=(
            input_per_mtok * CACHE_READ_FACTOR
            if cache_read_per_mtok is None
            else cache_read_per_mtok
        ),
    )


def _price(model: str, input_per_mtok: str, output_per_mtok: str) -> ModelPrice:
    return price_from_rates(model, Decimal(input_per_mtok), Decimal(output_per_mtok))


PRICES: dict[str, ModelPrice] = {
    price.model: price
    for price in (
        _price("claude-haiku-4-5", "1", "5"),
        _price("claude-sonnet-4-5", "3", "15"),
        _price("claude-opus-4-1", "15", "75"),
        _price("claude-3-5-haiku", "0.80", "4"),
    )
}

# A dated snapshot ("claude-haiku-4-5-20251001") or "-latest" alias costs what its family costs.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|latest)$")


def price_for(model: str) -> ModelPrice:
    """The price of `model`, given bare ("claude-haiku-4-5") or as "anthropic:claude-haiku-4-5"."""
    bare = model.removeprefix("anthropic:")
    price = PRICES.get(bare) or PRICES.get(_SNAPSHOT_SUFFIX.sub("", bare))
    if price is None:
        known = ", ".join(sorted(PRICES))
        raise KeyError(
            f"no price known for Anthropic model {model!r} (priced models: {known}); state its "
            "price in summarizer.price (input_per_mtok, output_per_mtok; 0 for a local model)"
        )
    return price


def usage_cost(price: ModelPrice, usage: CallUsage) -> Decimal:
    """§12.5: a compaction call priced through the standard path, each kind at its own rate."""
    return cost_of(
        price,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_write_tokens,
        usage.cache_read_tokens,
    )


def cost_of(
    price: ModelPrice,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> Decimal:
    """Exact USD for one call; `input_tokens` excludes the cached kinds, as the API reports."""
    counts = (input_tokens, output_tokens, cache_write_tokens, cache_read_tokens)
    if any(count < 0 for count in counts):
        raise ValueError(f"token counts cannot be negative: {counts}")
    micro_usd = (
        input_tokens * price.input_per_mtok
        + output_tokens * price.output_per_mtok
        + cache_write_tokens * price.cache_write_per_mtok
        + cache_read_tokens * price.cache_read_per_mtok
    )
    return micro_usd / _PER_TOKEN
