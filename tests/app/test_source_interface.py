"""The narrow source interface: data in, actions out. Each source declares what it can do and
where a compaction lands as data (the screens word it); none carries UI text or writable flags,
and a transcript's source works through MemorySource's methods, never its store."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from metis_compaction_tui.screens.compact_now import AFTER_COMPACTION
from metis_compaction_tui.sources import transcript
from metis_compaction_tui.sources.base import ALL_ACTIONS, CompactionLands, SessionSource
from metis_compaction_tui.sources.memory import MemorySource
from metis_compaction_tui.sources.store import StoreSource
from metis_compaction_tui.sources.transcript import TranscriptSource

SOURCES = [StoreSource, MemorySource, TranscriptSource]


@pytest.mark.parametrize("source", SOURCES)
def test_each_source_declares_its_actions_and_where_a_compaction_lands(source: type) -> None:
    assert source.actions <= ALL_ACTIONS
    assert source.compaction_lands in typing.get_args(CompactionLands)
    for gone in ("writable", "tunable", "after_compaction"):
        assert not hasattr(source, gone), gone


def test_every_landing_place_has_its_words_in_the_screen_not_the_source() -> None:
    assert set(AFTER_COMPACTION) == set(typing.get_args(CompactionLands))
    annotations = typing.get_type_hints(SessionSource)
    assert "cache_path" not in annotations and "after_compaction" not in annotations


def test_the_transcript_source_uses_memory_source_methods_only() -> None:
    assert "memory.store" not in inspect.getsource(transcript)


async def test_the_cache_browser_opens_the_cache_through_the_source(
    demo_workspace: Path,
) -> None:
    cache = StoreSource(demo_workspace).open_cache()
    assert cache is not None
    try:
        assert await cache.count() > 0
    finally:
        await cache.close()
    assert MemorySource().open_cache() is None  # no workspace, no cache
