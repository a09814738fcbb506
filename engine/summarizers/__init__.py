"""Summarizers by `compaction_model` name: `anthropic:<model>` and `local:extractive`."""

from __future__ import annotations

from engine.errors import ConfigError
from engine.summarizers.base import (
    ErrorClass,
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResult,
)
from engine.summarizers.extractive import ExtractiveSummarizer


def make_summarizer(
    model: str, *, api_key: str | None = None, base_url: str | None = None, timeout_s: float = 60.0
) -> Summarizer:
    """The summarizer `model` names. A named model is never silently swapped for the local one."""
    if model == ExtractiveSummarizer.name:
        return ExtractiveSummarizer()
    if model.startswith("anthropic:"):
        from engine.summarizers.anthropic_summarizer import AnthropicSummarizer

        try:
            return AnthropicSummarizer(
                model.removeprefix("anthropic:"),
                api_key=api_key,
                base_url=base_url,
                timeout_s=timeout_s,
            )
        except KeyError as error:
            raise ConfigError("compaction_model", str(error.args[0])) from None
    raise ConfigError("compaction_model", f"{model!r}: no summarizer serves this model")


__all__ = [
    "ErrorClass",
    "ExtractiveSummarizer",
    "Summarizer",
    "SummarizerError",
    "SummaryRequest",
    "SummaryResult",
    "make_summarizer",
]
