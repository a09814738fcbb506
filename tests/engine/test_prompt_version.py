"""The compaction prompt carries the checklist, and its version is part of the §5.1
cache key, so a summary cached under the previous prompt is not reused after the bump."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cache import CacheRow
from engine.cache_key import compute_cache_key
from engine.manager import SessionManager
from engine.prompt import COMPACTION_SUMMARY_PROMPT_VERSION, SYSTEM_PROMPT
from tests.history_builders import LOCAL, tool_session

KNOBS = {
    "compaction_threshold_tokens": 300,
    "compaction_hard_cap_tokens": 1_500,
    "compaction_preserve_recent_turns": 2,
}


@pytest.mark.parametrize(
    "item",
    [
        "versions, ports",
        "paths",
        "counts",
        "error messages",
        "commands that worked",
        "reason given",
        "never touch",
        "preferences",
        "Open tasks",
        "Files touched",
        "memory_add",
    ],
)
def test_the_prompt_has_the_checklist(item: str) -> None:
    assert item in SYSTEM_PROMPT.replace("\n", " ").replace("   ", " ")


def test_the_prompt_version_was_bumped_and_is_the_knobs_default() -> None:
    assert COMPACTION_SUMMARY_PROMPT_VERSION != "1.0.0"
    manager = SessionManager(compaction_model=LOCAL)
    assert manager.config.compaction_summary_prompt_version == COMPACTION_SUMMARY_PROMPT_VERSION


async def test_a_summary_cached_under_the_old_prompt_version_is_not_reused(
    tmp_path: Path,
) -> None:
    history = tool_session(6, size=300)
    manager = SessionManager(history=history, compaction_model=LOCAL, workspace=tmp_path, **KNOBS)
    preview = manager.preview()
    assert preview is not None
    span = history[preview.span.start : preview.span.compaction_watermark]
    max_tokens = manager.config.compaction_max_summary_tokens
    old_key = compute_cache_key(
        span,
        summarization_model=LOCAL,
        summarization_prompt_version="1.0.0",
        summarization_max_tokens=max_tokens,
    )
    new_key = compute_cache_key(
        span,
        summarization_model=LOCAL,
        summarization_prompt_version=COMPACTION_SUMMARY_PROMPT_VERSION,
        summarization_max_tokens=max_tokens,
    )
    assert old_key != new_key and preview.cache_key == new_key
    assert manager.cache is not None
    manager.cache.put(CacheRow(old_key, "OLD PROMPT SUMMARY", LOCAL, "1.0.0", 12, 900, 40))
    outcome = await manager.before_turn("t1")
    assert outcome.record is not None and not outcome.record.cache_hit
    assert "OLD PROMPT SUMMARY" not in manager.messages[0].text()
    # The same manager under the old version would have hit it: the version alone decided.
    old = SessionManager(
        history=history,
        compaction_model=LOCAL,
        workspace=tmp_path,
        compaction_summary_prompt_version="1.0.0",
        **KNOBS,
    )
    assert old.preview().cache_hit  # type: ignore[union-attr]
    await manager.aclose()
    await old.aclose()
