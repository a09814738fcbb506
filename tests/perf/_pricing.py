"""The rates the cost benchmarks bill at: a model of the price table's, or rates the user states.

One price bills both the session's own turns and the paid summarizer's calls. A stated price goes
through the engine's own path (summarizer settings with a StatedPrice, read back by
engine.summarizers.model_price and price_origin), so an unset cache rate follows the engine's rule
and the summarizer prices its calls exactly as a workspace's `summarizer: price:` would have it.

Not a benchmark itself (run_all.py skips files whose name starts with "_").
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import msgspec

from engine.errors import ConfigError
from engine.summarizers import model_price, price_origin
from engine.summarizers.pricing import ModelPrice
from engine.summarizers.settings import PRICE_STATED, PRICE_TABLE, StatedPrice, SummarizerSettings

DEFAULT_MODEL = "claude-haiku-4-5"  # §7's reference model, from the price table
# The name a stated price bills under when none is given: a model the table does not list, so the
# figures are plainly the user's rates, whatever the table says of a model of that name.
STATED_MODEL = "user-priced"
PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cache_write_per_mtok", "cache_read_per_mtok")
PRICE_USAGE = "INPUT,OUTPUT[,CACHE_WRITE[,CACHE_READ]]"
ORIGIN_WORDS = {"table": PRICE_TABLE, "stated": PRICE_STATED}  # as the app and CLI say them


class Pricing(msgspec.Struct, frozen=True):
    model: str  # bare, as the price table names it ("claude-haiku-4-5")
    price: ModelPrice
    origin: str  # "table" or "stated"
    settings: SummarizerSettings  # bound to `name`; holds the stated price, if any

    @property
    def name(self) -> str:
        """The compaction_model the paid summarizer serves under these prices."""
        return f"anthropic:{self.model}"

    def to_json(self) -> dict[str, Any]:
        stated = self.settings.price
        derived = [f for f in PRICE_FIELDS if stated is not None and getattr(stated, f) is None]
        return {
            "model": self.model,
            "origin": self.origin,
            **{f: rate(getattr(self.price, f)) for f in PRICE_FIELDS},
            # Cache rates left out of --price: the engine's rule (writes 1.25x input, reads 0.1x).
            "derived_from_input": derived,
            "applies_to": "the session's turns and the paid summarizer's calls",
        }


def rate(usd_per_mtok: Decimal) -> str:
    """A rate as written, without the trailing zeros a derived one carries (0.8 x 1.25 = 1.000)."""
    return format(usd_per_mtok.normalize(), "f")


def parse_price(text: str) -> StatedPrice:
    """`--price INPUT,OUTPUT[,CACHE_WRITE[,CACHE_READ]]`, USD per million tokens. ValueError
    names the field at fault and what it expects."""
    parts = [part.strip() for part in text.split(",")]
    if not 2 <= len(parts) <= len(PRICE_FIELDS):
        raise ValueError(
            f"expected {PRICE_USAGE}: 2 to 4 comma-separated USD amounts per million tokens, "
            f"got {len(parts)} field(s)"
        )
    values: dict[str, Decimal] = {}
    for index, (field, part) in enumerate(zip(PRICE_FIELDS, parts, strict=False), start=1):
        if not part and index > 2:
            continue  # an empty cache rate: the engine's rule from the input rate
        try:
            values[field] = Decimal(part)
        except InvalidOperation:
            raise ValueError(
                f"field {index} ({field}) {part!r} is not a number: expected USD per million "
                "tokens, 0 or more"
            ) from None
    try:
        stated = StatedPrice(**values)
    except ConfigError as error:  # the engine's own check: finite, 0 or more
        field = error.knob.rsplit(".", 1)[-1]
        index = PRICE_FIELDS.index(field) + 1
        raise ValueError(
            f"field {index} ({field}) {parts[index - 1]!r}: expected a finite number of USD per "
            "million tokens, 0 or more"
        ) from None
    if stated.input_per_mtok <= 0:
        # Every ratio the benchmarks report is over billed input; at a $0 input rate there is
        # none to compare.
        raise ValueError(
            f"field 1 (input_per_mtok) {parts[0]!r}: expected more than 0 (the cost curve's "
            "ratios divide by the billed input)"
        )
    return stated


def pricing(model: str | None = None, stated: StatedPrice | None = None) -> Pricing:
    """`model`'s prices: `stated` if given, else the price table's. ValueError when the table
    does not list `model` and no price is stated."""
    bare = (model or (STATED_MODEL if stated is not None else DEFAULT_MODEL)).removeprefix(
        "anthropic:"
    )
    name = f"anthropic:{bare}"
    settings = SummarizerSettings(model=name, price=stated)
    try:
        price = model_price(name, settings)
    except ConfigError:
        raise ValueError(
            f"no price known for {bare!r} in the price table: state one with --price {PRICE_USAGE}"
        ) from None
    origin = price_origin(name, settings)
    kind = "stated" if origin.startswith(PRICE_STATED) else "table" if origin == PRICE_TABLE else ""
    if not kind:
        raise ValueError(f"{bare!r}: {origin}")
    return Pricing(model=bare, price=price, origin=kind, settings=settings)


DEFAULT = pricing()
