"""Summarizers by `compaction_model` name: `anthropic:<model>` (the table's price or one the user
states, any Anthropic-compatible endpoint), `openai:<model>` (any OpenAI-compatible endpoint at a
stated price; the `openai` extra), `local:extractive`, or any object meeting the `Summarizer`
protocol, injected directly or through an import path in the settings."""

from __future__ import annotations

import os

from engine.errors import ConfigError
from engine.layout import CONFIG_FILE, METIS_DIR
from engine.summarizers.base import (
    EXTRACTIVE_MODEL,
    ErrorClass,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResult,
)
from engine.summarizers.pricing import ModelPrice, price_for
from engine.summarizers.settings import (
    PRICE_LOCAL,
    PRICE_NONE,
    PRICE_OWN,
    PRICE_STATED,
    PRICE_TABLE,
    StatedPrice,
    SummarizerSettings,
)

ANTHROPIC_PREFIX = "anthropic:"
LOCAL_PREFIX = "local:"
OPENAI_PREFIX = "openai:"
OPENAI_EXTRA_MISSING = (
    "openai:<model> needs the openai SDK: pip install 'metis-compaction-tui[openai]'"
)


def __getattr__(name: str) -> object:
    # PEP 562: the offline summarizer (its ranking tables take ~20 ms to build) loads on first
    # use, so what only needs a name or a price from here (engine.config, the status line's
    # refresher) does not pay for it.
    if name == "ExtractiveSummarizer":
        from engine.summarizers.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_summarizer(
    model: str,
    settings: SummarizerSettings | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float | None = None,
) -> Summarizer:
    """The summarizer `model` names. A named model is never silently swapped for another one:
    what cannot be served raises ConfigError."""
    chosen = (settings or SummarizerSettings()).for_model(model)
    if chosen.import_path is not None:
        from engine.summarizers.plugin import summarizer_from_factory

        return summarizer_from_factory(chosen.import_path, model, chosen.options)
    if model == EXTRACTIVE_MODEL:
        from engine.summarizers.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer()
    if model.startswith(ANTHROPIC_PREFIX):
        from engine.summarizers.anthropic_summarizer import AnthropicSummarizer

        return AnthropicSummarizer(
            model.removeprefix(ANTHROPIC_PREFIX),
            api_key=api_key,
            base_url=base_url or chosen.base_url,
            timeout_s=timeout_s or chosen.timeout_s,
            price=model_price(model, chosen),
            no_key=chosen.no_key,
        )
    if model.startswith(OPENAI_PREFIX):
        price = model_price(model, chosen)
        try:
            from engine.summarizers.openai_summarizer import OpenAISummarizer
        except ModuleNotFoundError as missing:
            if missing.name != "openai":
                raise
            raise ConfigError("compaction_model", OPENAI_EXTRA_MISSING) from None
        return OpenAISummarizer(
            model.removeprefix(OPENAI_PREFIX),
            price=price,
            api_key=api_key,
            base_url=base_url or chosen.base_url,
            no_key=chosen.no_key,
            timeout_s=timeout_s or chosen.timeout_s,
        )
    raise ConfigError("compaction_model", _unserved(model))


def missing_key(model: str, settings: SummarizerSettings | None = None) -> str | None:
    """The environment variable `model`'s calls need and lack (a local endpoint needs none),
    or None: what a command checks before it starts a run that would fail at its first call."""
    from engine.summarizers.keyless import sends_no_key  # only when a run is about to start

    chosen = (settings or SummarizerSettings()).for_model(model)
    if chosen.import_path is not None:
        return None
    for prefix, key, url in (
        (ANTHROPIC_PREFIX, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        (OPENAI_PREFIX, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    ):
        if model.startswith(prefix):
            # An Anthropic gateway may take a bearer token instead of a key, as the SDK does.
            token = os.environ.get("ANTHROPIC_AUTH_TOKEN") if prefix == ANTHROPIC_PREFIX else None
            have = os.environ.get(key) or token
            keyless = sends_no_key(
                chosen.base_url or os.environ.get(url), have, no_key=chosen.no_key
            )
            return None if keyless or have else key
    return None


def check_summarizer(model: str, settings: SummarizerSettings | None = None) -> None:
    """What make_summarizer would refuse, refused now (no client made, no call): a manager fails
    at construction, not at its first compaction mid-turn."""
    chosen = (settings or SummarizerSettings()).for_model(model)
    if chosen.import_path is not None:
        from engine.summarizers.plugin import load_factory

        load_factory(chosen.import_path)
    elif model.startswith(ANTHROPIC_PREFIX):
        model_price(model, chosen)
    elif model.startswith(OPENAI_PREFIX):
        model_price(model, chosen)
        import importlib.util  # only an openai: model asks

        if importlib.util.find_spec("openai") is None:
            raise ConfigError("compaction_model", OPENAI_EXTRA_MISSING)
    elif model != EXTRACTIVE_MODEL:
        raise ConfigError("compaction_model", _unserved(model))


def model_price(model: str, settings: SummarizerSettings | None = None) -> ModelPrice:
    """The stated price if the user gave one for `model`, else the price table's."""
    chosen = (settings or SummarizerSettings()).for_model(model)
    bare = model.removeprefix(ANTHROPIC_PREFIX).removeprefix(OPENAI_PREFIX)
    if chosen.price is not None:
        return chosen.price.model_price(bare)
    if model.startswith(OPENAI_PREFIX):
        # No price table lists OpenAI-compatible models: a stated price, as for any unlisted one.
        raise ConfigError(
            "compaction_model",
            f"no price known for {model!r}; state its price in summarizer.price "
            "(input_per_mtok, output_per_mtok; 0 for a local model)",
        )
    try:
        return price_for(bare)
    except KeyError as error:
        raise ConfigError("compaction_model", str(error.args[0])) from None


def price_origin(model: str, settings: SummarizerSettings | None = None) -> str:
    """Where the price of `model`'s calls comes from, in the words the app and CLI show."""
    chosen = (settings or SummarizerSettings()).for_model(model)
    if chosen.import_path is not None:
        return PRICE_OWN
    if model == EXTRACTIVE_MODEL:
        return PRICE_LOCAL
    if chosen.price is not None:
        return f"{PRICE_STATED} ($0)" if chosen.price.is_zero else PRICE_STATED
    if model.startswith(ANTHROPIC_PREFIX):
        try:
            price_for(model)
        except KeyError:
            return PRICE_NONE
        return PRICE_TABLE
    return PRICE_NONE


# How the app and CLI label a model served on this machine (no call leaves it, no cost).
OFFLINE = "offline"


def is_offline(model: str) -> bool:
    return model.startswith(LOCAL_PREFIX)


def named_price_origin(origin: str) -> str | None:
    """A price's origin when it is worth naming beside the price: one the user stated, or a
    summarizer's own. The price table's and the offline $0 go unsaid (None)."""
    return origin if origin and origin not in (PRICE_TABLE, PRICE_LOCAL) else None


def _unserved(model: str) -> str:
    return (
        f"{model!r}: no summarizer serves this model; built in are "
        f"{ANTHROPIC_PREFIX}<model>, {OPENAI_PREFIX}<model> and {EXTRACTIVE_MODEL}; any other "
        "name needs a "
        "summarizer passed to SessionManager(summarizer=...) or summarizer.import in "
        f"{METIS_DIR}/{CONFIG_FILE}"
    )


__all__ = [
    "OFFLINE",
    "ErrorClass",
    "ExtractiveSummarizer",
    "StatedPrice",
    "Summarizer",
    "SummarizerError",
    "SummarizerSettings",
    "SummaryRequest",
    "SummaryResult",
    "check_summarizer",
    "is_offline",
    "make_summarizer",
    "missing_key",
    "model_price",
    "named_price_origin",
    "price_origin",
]
