"""The §11 knobs, with their defaults, validated once at construction."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

import msgspec

from engine.errors import ConfigError
from engine.prompt import COMPACTION_SUMMARY_PROMPT_VERSION

# The built-in summarizers' prefixes; any other "provider:model" name is served by a summarizer
# injected into SessionManager or named by an import path (engine.summarizers.plugin).
KNOWN_MODEL_PREFIXES = ("anthropic:", "openai:", "local:")
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]*:[^\s\x00-\x1f\x7f]{1,200}$")
# engine.policy.strategies: what a compaction does to its span (summarize it, mask old tool
# results, mask then summarize if that is not enough, or fold the previous summary in, §12.4).
COMPACTION_STRATEGIES = ("summarize", "mask", "hybrid", "recompact")
LOCAL_MODELS = ("local:extractive",)


class CompactionConfig(msgspec.Struct, frozen=True, kw_only=True):
    compaction_threshold_tokens: int = 30_000
    compaction_hard_cap_tokens: int = 80_000
    compaction_preserve_recent_turns: int = 5
    compaction_model: str = "anthropic:claude-haiku-4-5"
    compaction_max_cost_per_session_usd: Decimal = Decimal("0.20")
    compaction_summary_prompt_version: str = COMPACTION_SUMMARY_PROMPT_VERSION
    compaction_cache_max_rows: int = 1000
    # Not a §11 knob, but part of the §5.1 key: the ceiling of the summary's output budget.
    compaction_max_summary_tokens: int = 2_000
    # Not a §11 knob: the budget a paid summary gets is the longest whose call and re-cache pay
    # back within this many turns (engine.policy.summary_budget); 0: always the ceiling above.
    compaction_summary_payback_turns: int = 3
    # Not a §11 knob: which engine.policy.strategies strategy a compaction runs.
    compaction_strategy: str = "summarize"

    def __post_init__(self) -> None:
        _positive("compaction_threshold_tokens", self.compaction_threshold_tokens)
        _positive("compaction_hard_cap_tokens", self.compaction_hard_cap_tokens)
        _positive("compaction_preserve_recent_turns", self.compaction_preserve_recent_turns)
        _positive("compaction_cache_max_rows", self.compaction_cache_max_rows)
        _positive("compaction_max_summary_tokens", self.compaction_max_summary_tokens)
        turns = self.compaction_summary_payback_turns
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
            raise ConfigError(
                "compaction_summary_payback_turns", f"{turns!r} must be a whole number, 0 or more"
            )
        if self.compaction_threshold_tokens >= self.compaction_hard_cap_tokens:
            raise ConfigError(
                "compaction_threshold_tokens",
                f"{self.compaction_threshold_tokens} must be below compaction_hard_cap_tokens "
                f"({self.compaction_hard_cap_tokens})",
            )
        model = self.compaction_model
        # Only the name's shape is checked here: whether a summarizer serves it (and at what
        # price) is engine.summarizers.check_summarizer's question, asked by SessionManager.
        if not isinstance(model, str) or not _MODEL_NAME.match(model):
            raise ConfigError(
                "compaction_model",
                f"{model!r} is not 'provider:model' (e.g. "
                f"{', '.join(p + '<model>' for p in KNOWN_MODEL_PREFIXES)}, or your own "
                "summarizer's name)",
            )
        budget = self.compaction_max_cost_per_session_usd
        if not isinstance(budget, Decimal) or not budget.is_finite() or budget < 0:
            raise ConfigError(
                "compaction_max_cost_per_session_usd", f"{budget!r} must be a Decimal of 0 or more"
            )
        if self.compaction_strategy not in COMPACTION_STRATEGIES:
            raise ConfigError(
                "compaction_strategy",
                f"{self.compaction_strategy!r}: the strategies are "
                f"{', '.join(COMPACTION_STRATEGIES)}",
            )
        if not self.compaction_summary_prompt_version:
            raise ConfigError("compaction_summary_prompt_version", "must not be empty")

    def replace(self, **changes: object) -> CompactionConfig:
        return msgspec.structs.replace(self, **changes)


def _positive(knob: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(knob, f"{value!r} must be a positive integer")


def parse_budget(text: str) -> Decimal:
    """A budget typed by a user ("0.20", "$1"), as the exact Decimal the config holds."""
    try:
        return Decimal(text.strip().lstrip("$"))
    except InvalidOperation:
        raise ConfigError(
            "compaction_max_cost_per_session_usd", f"{text!r} is not a number"
        ) from None


def config_with_text(config: CompactionConfig, values: Mapping[str, str]) -> CompactionConfig:
    """`config` with knobs typed as text (the app's what-if knobs, the CLI's --set); a name may
    leave off its `compaction_` prefix. Raises ConfigError naming the knob at fault."""
    knobs: dict[str, object] = {name: getattr(config, name) for name in config.__struct_fields__}
    for name, text in values.items():
        knob = name if name in knobs else f"compaction_{name}"
        if knob not in knobs:
            raise ConfigError(name, f"no such knob; the knobs are {', '.join(knobs)}")
        current = knobs[knob]
        if isinstance(current, Decimal):
            knobs[knob] = parse_budget(text)
        elif isinstance(current, int):
            try:
                knobs[knob] = int(text.replace(",", "").replace("_", "").strip())
            except ValueError:
                raise ConfigError(knob, f"{text!r} is not a whole number") from None
        else:
            knobs[knob] = text.strip()
    return CompactionConfig(**knobs)  # type: ignore[arg-type]
