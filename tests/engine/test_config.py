"""§11: the knobs, their defaults, and a ConfigError naming the knob for each bad value."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from engine.config import CompactionConfig, parse_budget
from engine.errors import ConfigError
from engine.events import EventBus
from engine.manager import ManagerDeps, SessionManager
from engine.prompt import COMPACTION_SUMMARY_PROMPT_VERSION
from tests.history_builders import RecordingSummarizer

# §11, verbatim but for the prompt version: §11 says "bump to force cache miss on a prompt
# change", so its default moves with the prompt (1.0.0 when the spec was written; now 1.1.0).
SPEC_DEFAULTS: dict[str, Any] = {
    "compaction_threshold_tokens": 30_000,
    "compaction_hard_cap_tokens": 80_000,
    "compaction_preserve_recent_turns": 5,
    "compaction_model": "anthropic:claude-haiku-4-5",
    "compaction_max_cost_per_session_usd": Decimal("0.20"),
    "compaction_summary_prompt_version": COMPACTION_SUMMARY_PROMPT_VERSION,
    "compaction_cache_max_rows": 1000,
}


def test_config_defaults_equal_the_spec_table() -> None:
    config = CompactionConfig()
    for knob, default in SPEC_DEFAULTS.items():
        assert getattr(config, knob) == default, knob
    assert isinstance(config.compaction_max_cost_per_session_usd, Decimal)


def test_session_manager_takes_a_config_and_still_each_0_1_knob_keyword() -> None:
    config = CompactionConfig(compaction_threshold_tokens=1_000, compaction_hard_cap_tokens=2_000)
    assert SessionManager(config=config).config == config
    # metis dev's 0.1 calls name each knob: still accepted, and they override `config`.
    old_style = SessionManager(compaction_threshold_tokens=1_000, compaction_hard_cap_tokens=2_000)
    assert old_style.config == config
    both = SessionManager(config=config, compaction_preserve_recent_turns=3)
    assert both.config.compaction_threshold_tokens == 1_000
    assert both.config.compaction_preserve_recent_turns == 3
    with pytest.raises(TypeError, match="compaction_threshold"):
        SessionManager(compaction_threshold=1)  # a misspelt knob is not silently dropped


def test_session_manager_takes_its_dependencies_as_one_struct_or_as_0_1_keywords() -> None:
    bus = EventBus()
    assert SessionManager(deps=ManagerDeps(bus=bus, clock=lambda: 7)).bus is bus
    manager = SessionManager(deps=ManagerDeps(clock=lambda: 7), bus=bus)
    assert manager.bus is bus and manager._clock() == 7


def test_session_manager_built_with_no_knobs_holds_the_spec_defaults() -> None:
    manager = SessionManager()
    for knob, default in SPEC_DEFAULTS.items():
        assert getattr(manager.config, knob) == default, knob


# Each bad value, and the knob its error must name.
BAD_KNOBS: list[tuple[str, dict[str, Any]]] = [
    ("compaction_threshold_tokens", {"compaction_threshold_tokens": 80_000}),  # == hard cap
    ("compaction_threshold_tokens", {"compaction_threshold_tokens": 90_000}),  # > hard cap
    ("compaction_threshold_tokens", {"compaction_threshold_tokens": 0}),
    ("compaction_threshold_tokens", {"compaction_threshold_tokens": -1}),
    ("compaction_threshold_tokens", {"compaction_threshold_tokens": True}),
    ("compaction_threshold_tokens", {"compaction_threshold_tokens": 30_000.0}),
    ("compaction_hard_cap_tokens", {"compaction_hard_cap_tokens": 0}),
    ("compaction_hard_cap_tokens", {"compaction_hard_cap_tokens": -80_000}),
    ("compaction_hard_cap_tokens", {"compaction_hard_cap_tokens": False}),
    ("compaction_preserve_recent_turns", {"compaction_preserve_recent_turns": 0}),
    ("compaction_preserve_recent_turns", {"compaction_preserve_recent_turns": -5}),
    ("compaction_preserve_recent_turns", {"compaction_preserve_recent_turns": True}),
    ("compaction_cache_max_rows", {"compaction_cache_max_rows": 0}),
    ("compaction_cache_max_rows", {"compaction_cache_max_rows": -1}),
    ("compaction_max_summary_tokens", {"compaction_max_summary_tokens": 0}),
    ("compaction_max_summary_tokens", {"compaction_max_summary_tokens": True}),
    ("compaction_model", {"compaction_model": "claude-haiku-4-5"}),  # no prefix at all
    ("compaction_model", {"compaction_model": ""}),
    ("compaction_model", {"compaction_model": "anthropic:"}),
    ("compaction_model", {"compaction_model": "acme:has space"}),
    ("compaction_model", {"compaction_model": "acme:\x1b[31m"}),
    ("compaction_max_cost_per_session_usd", {"compaction_max_cost_per_session_usd": Decimal(-1)}),
    ("compaction_max_cost_per_session_usd", {"compaction_max_cost_per_session_usd": 0.2}),
    ("compaction_max_cost_per_session_usd", {"compaction_max_cost_per_session_usd": 1}),
    (
        "compaction_max_cost_per_session_usd",
        {"compaction_max_cost_per_session_usd": Decimal("NaN")},
    ),
    (
        "compaction_max_cost_per_session_usd",
        {"compaction_max_cost_per_session_usd": Decimal("Infinity")},
    ),
    ("compaction_summary_prompt_version", {"compaction_summary_prompt_version": ""}),
]


def case_id(case: tuple[str, dict[str, Any]]) -> str:
    ((name, value),) = case[1].items()
    return f"{name}={value!r}"


@pytest.mark.parametrize(("knob", "bad"), BAD_KNOBS, ids=[case_id(c) for c in BAD_KNOBS])
def test_config_refuses_each_bad_knob_naming_it(knob: str, bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        CompactionConfig(**bad)
    assert raised.value.knob == knob
    assert str(raised.value).startswith(f"{knob}: ")


@pytest.mark.parametrize(("knob", "bad"), BAD_KNOBS, ids=[case_id(c) for c in BAD_KNOBS])
def test_session_manager_refuses_each_bad_knob_naming_it(knob: str, bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        SessionManager(**bad)
    assert raised.value.knob == knob


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="compaction_hard_cap_tokens"):
        CompactionConfig(compaction_hard_cap_tokens=-1)


def test_threshold_error_names_both_numbers() -> None:
    with pytest.raises(ConfigError, match=r"90000.*80000"):
        CompactionConfig(compaction_threshold_tokens=90_000)


def test_a_badly_shaped_model_name_error_lists_the_known_prefixes() -> None:
    with pytest.raises(ConfigError, match=r"anthropic:<model>.*local:<model>"):
        CompactionConfig(compaction_model="gpt-4o")


# Names of the right shape that nothing serves without an injected summarizer or an import path:
# the config holds them (a store may hold a session of metis dev's own model), the manager refuses.
UNSERVED_MODELS = ["openai:gpt-4o", "local:llama", "anthropic:claude-unknown-9"]


@pytest.mark.parametrize("model", UNSERVED_MODELS)
def test_a_model_nothing_serves_is_refused_by_the_manager_not_the_config(model: str) -> None:
    assert CompactionConfig(compaction_model=model).compaction_model == model
    with pytest.raises(ConfigError) as raised:
        SessionManager(compaction_model=model)
    assert raised.value.knob == "compaction_model"


def test_an_unpriced_anthropic_model_is_refused_with_how_to_state_its_price() -> None:
    with pytest.raises(ConfigError, match=r"no price known.*summarizer\.price"):
        SessionManager(compaction_model="anthropic:claude-unknown-9")


@pytest.mark.parametrize(
    "model",
    ["local:extractive", "anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5-20251001"],
)
def test_known_models_are_accepted(model: str) -> None:
    assert CompactionConfig(compaction_model=model).compaction_model == model


def test_a_zero_budget_is_a_valid_budget() -> None:
    config = CompactionConfig(compaction_max_cost_per_session_usd=Decimal(0))
    assert config.compaction_max_cost_per_session_usd == 0


def test_a_threshold_just_below_the_hard_cap_is_valid() -> None:
    config = CompactionConfig(compaction_threshold_tokens=79_999)
    assert config.compaction_threshold_tokens == 79_999


def test_replace_validates_the_new_values() -> None:
    config = CompactionConfig()
    assert config.replace(compaction_preserve_recent_turns=2).compaction_preserve_recent_turns == 2
    with pytest.raises(ConfigError) as raised:
        config.replace(compaction_preserve_recent_turns=0)
    assert raised.value.knob == "compaction_preserve_recent_turns"


def test_a_summarizer_serving_another_model_is_refused_naming_compaction_model() -> None:
    with pytest.raises(ConfigError) as raised:
        SessionManager(
            compaction_model="anthropic:claude-haiku-4-5",
            summarizer=RecordingSummarizer(name="local:extractive"),
        )
    assert raised.value.knob == "compaction_model"


@pytest.mark.parametrize(
    ("text", "budget"),
    [("0.20", Decimal("0.20")), ("$1", Decimal(1)), (" 0.05 ", Decimal("0.05"))],
)
def test_parse_budget_reads_exact_decimals(text: str, budget: Decimal) -> None:
    parsed = parse_budget(text)
    assert parsed == budget
    assert isinstance(parsed, Decimal)


def test_parse_budget_refuses_text_naming_the_knob() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_budget("twenty cents")
    assert raised.value.knob == "compaction_max_cost_per_session_usd"
