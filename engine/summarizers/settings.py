"""How to reach and price the compaction model: the `summarizer:` settings of a workspace.

They sit beside the §11 knobs (`compaction_model` names the model; these say how to serve it):
an import path to a factory of any object meeting the `Summarizer` protocol, an Anthropic- or
OpenAI-compatible endpoint's base URL, whether that endpoint takes no key, the price the user states
for a model our price table does not list, and the call's timeout. An API key is never a setting:
the SDK reads ANTHROPIC_API_KEY (OPENAI_API_KEY for `openai:` models).
"""

from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import urlsplit

import msgspec

from engine.errors import ConfigError
from engine.summarizers.pricing import ModelPrice, price_from_rates

# "package.module:attribute" (the attribute may be dotted: "pkg.mod:Class.create").
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
# http(s), and no spaces or control characters (it is shown in the app and the CLI).
_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f-\x9f]+$")

BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"  # the SDK's own, read when no base_url is set


def check_base_url(url: object, knob: str) -> None:
    """An Anthropic-compatible endpoint: an http(s) URL with a host, no spaces or controls (it is
    shown in the app and the CLI), no user name or password. ConfigError naming `knob` otherwise;
    the URL is never echoed (it may hold a password)."""
    if not isinstance(url, str) or not _URL.match(url):
        scheme = url.partition("://")[0] if isinstance(url, str) and "://" in url else ""
        if scheme and scheme.isascii() and scheme.isalnum() and len(scheme) <= 16:
            raise ConfigError(knob, f"scheme {scheme!r} is not supported: use http:// or https://")
        raise ConfigError(knob, "is not an http:// or https:// URL without spaces or controls")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check (a bad one raises ValueError)
    except ValueError:
        raise ConfigError(
            knob, "is not a valid URL (a stray bracket or a bad port?): fix its host and port"
        ) from None
    # Credentials in the URL would be shown wherever the setting is (status, the app's settings
    # screen): refused, without echoing them.
    if "@" in parts.netloc:
        raise ConfigError(
            knob, "holds a user name or password; put the key in ANTHROPIC_API_KEY instead"
        )
    if not parts.hostname:
        raise ConfigError(knob, "has no host name")


# Where a price came from, as the app and CLI say it.
PRICE_TABLE = "price table"
PRICE_STATED = "price you set"
PRICE_LOCAL = "local, $0"
PRICE_OWN = "the summarizer's own"
PRICE_NONE = "no price: state one in summarizer.price"


class StatedPrice(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """USD per million tokens the user states for a model the price table does not list (0 for a
    local model). Unset cache rates follow Anthropic's rule: writes 1.25x input, reads 0.1x."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cache_write_per_mtok: Decimal | None = None
    cache_read_per_mtok: Decimal | None = None

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if value is None:
                continue
            if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
                raise ConfigError(
                    f"summarizer.price.{field}", f"{value!r} must be a Decimal of 0 or more"
                )

    def model_price(self, model: str) -> ModelPrice:
        return price_from_rates(
            model,
            self.input_per_mtok,
            self.output_per_mtok,
            cache_write_per_mtok=self.cache_write_per_mtok,
            cache_read_per_mtok=self.cache_read_per_mtok,
        )

    @property
    def is_zero(self) -> bool:
        return not any(getattr(self, f) for f in self.__struct_fields__)


class SummarizerSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """`model`: the compaction_model these settings serve (None: whichever the knob names). A
    session stored with another model gets the defaults, never these (no silent swap)."""

    model: str | None = None
    import_path: str | None = msgspec.field(default=None, name="import")
    options: dict[str, str | int | float | bool] = msgspec.field(default_factory=dict)
    base_url: str | None = None
    # The endpoint takes no key (a model server on another machine of the LAN): none is sent,
    # even one the environment holds. Loopback endpoints need not say so
    # (engine.summarizers.keyless).
    no_key: bool = False
    price: StatedPrice | None = None
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.import_path is not None and not _IMPORT_PATH.match(self.import_path):
            raise ConfigError(
                "summarizer.import", f"{self.import_path!r} is not 'package.module:factory'"
            )
        if self.base_url is not None:
            check_base_url(self.base_url, "summarizer.base_url")
        if not isinstance(self.no_key, bool):
            raise ConfigError("summarizer.no_key", f"{self.no_key!r} must be true or false")
        if isinstance(self.timeout_s, bool) or not 0 < self.timeout_s <= 3600:
            raise ConfigError("summarizer.timeout_s", f"{self.timeout_s!r} must be in (0, 3600]")

    @property
    def names_a_summarizer(self) -> bool:
        """Whether these say which summarizer serves, or how: more than a timeout."""
        return self != SummarizerSettings(timeout_s=self.timeout_s)

    def bound(self, model: str) -> SummarizerSettings:
        """These settings with the model they serve named: `model`, when none is named."""
        return self if self.model is not None else msgspec.structs.replace(self, model=model)

    def for_model(self, model: str) -> SummarizerSettings:
        """These settings if they serve `model`, else the defaults (only a timeout)."""
        if self.model is None or self.model == model:
            return self
        return SummarizerSettings(timeout_s=self.timeout_s)
