"""Any object meeting the Summarizer protocol serves any model name, injected into
SessionManager or named by an import path; a named model is never swapped for another."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.manager import SessionManager
from engine.summarizers import (
    StatedPrice,
    Summarizer,
    SummarizerSettings,
    check_summarizer,
    make_summarizer,
    price_origin,
)
from tests.history_builders import tool_session
from tests.plugins import acme
from tests.plugins.acme import AcmeSummarizer

MODEL = "acme:small"
KNOBS = {
    "compaction_threshold_tokens": 300,
    "compaction_hard_cap_tokens": 1_500,
    "compaction_preserve_recent_turns": 2,
}


def test_the_adapter_meets_the_documented_protocol() -> None:
    assert isinstance(AcmeSummarizer(MODEL), Summarizer)


async def test_an_injected_summarizer_compacts_under_its_own_name_and_is_billed(
    tmp_path: Path,
) -> None:
    summarizer = AcmeSummarizer(MODEL, fee_usd="0.002")
    manager = SessionManager(
        history=tool_session(6, size=300),
        compaction_model=MODEL,
        summarizer=summarizer,
        workspace=tmp_path,
        **KNOBS,
    )
    outcome = await manager.before_turn("t1")
    assert outcome.status == "compacted"
    assert outcome.record is not None
    assert outcome.record.model == MODEL
    assert manager.messages[0].text().startswith(f"<COMPACTION_SUMMARY model={MODEL} ")
    assert "ACME SUMMARY" in manager.messages[0].text()
    assert manager.spent_usd == Decimal("0.002")
    await manager.aclose()


async def test_an_import_path_serves_a_custom_name_through_the_manager(tmp_path: Path) -> None:
    settings = SummarizerSettings(
        model=MODEL, import_path="tests.plugins.acme:make", options={"fee_usd": "0.003"}
    )
    manager = SessionManager(
        history=tool_session(6, size=300),
        compaction_model=MODEL,
        summarizer_settings=settings,
        workspace=tmp_path,
        **KNOBS,
    )
    before = len(acme.CALLS)
    outcome = await manager.before_turn("t1")
    assert outcome.status == "compacted"
    assert acme.CALLS[before:] == [MODEL]
    assert manager.spent_usd == Decimal("0.003")
    assert price_origin(MODEL, settings) == "the summarizer's own"
    await manager.aclose()


def test_a_custom_name_without_a_summarizer_is_refused_not_swapped() -> None:
    with pytest.raises(ConfigError, match="no summarizer serves") as raised:
        SessionManager(compaction_model=MODEL)
    assert raised.value.knob == "compaction_model"


def test_an_injected_object_that_is_no_summarizer_is_refused() -> None:
    with pytest.raises(ConfigError, match="Summarizer protocol"):
        SessionManager(compaction_model=MODEL, summarizer=object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("tests.plugins.nowhere:make", "cannot import 'tests.plugins.nowhere'"),
        ("tests.plugins.acme:missing", "has no 'missing'"),
        ("tests.plugins.acme:broken", "acme is down for maintenance"),
        ("tests.plugins.acme:not_a_summarizer", "does not meet the Summarizer protocol"),
        ("tests.plugins.acme:wrong_name", "serving 'acme:other'"),
    ],
)
def test_a_failing_import_path_is_a_clear_error_never_a_fallback(path: str, words: str) -> None:
    settings = SummarizerSettings(import_path=path)
    with pytest.raises(ConfigError) as raised:
        make_summarizer(MODEL, settings)
    assert raised.value.knob == "summarizer.import"
    assert words in str(raised.value)


def test_a_missing_module_fails_when_the_manager_is_built() -> None:
    settings = SummarizerSettings(import_path="tests.plugins.nowhere:make")
    with pytest.raises(ConfigError, match="cannot import"):
        SessionManager(compaction_model=MODEL, summarizer_settings=settings)


def test_settings_for_another_model_do_not_serve_this_one() -> None:
    """A session stored with another model is not handed the workspace's adapter or prices."""
    settings = SummarizerSettings(model=MODEL, import_path="tests.plugins.acme:make")
    with pytest.raises(ConfigError, match="'acme:large': no summarizer serves"):
        check_summarizer("acme:large", settings)
    assert make_summarizer("local:extractive", settings).name == "local:extractive"


@pytest.mark.parametrize(
    ("model", "settings", "origin"),
    [
        ("anthropic:claude-haiku-4-5", None, "price table"),
        ("local:extractive", None, "local, $0"),
        (
            "anthropic:qwen2.5:7b",
            SummarizerSettings(
                price=StatedPrice(input_per_mtok=Decimal(0), output_per_mtok=Decimal(0))
            ),
            "price you set ($0)",
        ),
        (
            "anthropic:gateway-large",
            SummarizerSettings(
                price=StatedPrice(input_per_mtok=Decimal("0.5"), output_per_mtok=Decimal(2))
            ),
            "price you set",
        ),
        ("anthropic:claude-unknown-9", None, "no price: state one in summarizer.price"),
    ],
)
def test_price_origin_says_where_the_price_comes_from(
    model: str, settings: SummarizerSettings | None, origin: str
) -> None:
    assert price_origin(model, settings) == origin


@pytest.mark.parametrize(
    "url", ["ftp://127.0.0.1", "http://127.0.0.1:1/\x1b[31m", "http://a b", "127.0.0.1:11434"]
)
def test_a_base_url_must_be_http_without_controls(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        SummarizerSettings(base_url=url)
    assert raised.value.knob == "summarizer.base_url"
