"""Undo as a rule on a history: which compaction goes first, and putting its originals back.

The SQLite store does the same inside one transaction (engine.store.sql.undo); a store that
holds sessions in memory (the app's transcripts) calls these instead of writing its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from engine.errors import UndoRefused
from engine.history import History
from engine.messages import Message
from engine.record import CompactionRecord

NOTHING_TO_UNDO = "this session has no compaction to undo"
T = TypeVar("T")


def latest_in_effect(compactions: Sequence[tuple[T, bool]]) -> tuple[int, T]:
    """(index, item) of the newest compaction not undone, from (item, undone) pairs oldest first:
    the latest is undone first, since later ones were made on top of it."""
    for index in range(len(compactions) - 1, -1, -1):
        item, undone = compactions[index]
        if not undone:
            return index, item
    raise UndoRefused(NOTHING_TO_UNDO)


def replacement_range(record: CompactionRecord) -> tuple[int, int]:
    """Where the compaction's replacement (summary and fillers, or masked copies) sits."""
    return record.watermark_before, record.watermark_before + record.replacement_count


def undo_compaction(
    history: History, record: CompactionRecord, originals: Sequence[tuple[Message, int]]
) -> None:
    """Put `originals` (message, tokens) back in place of the replacement; refuse when the
    replacement is no longer where the compaction put it."""
    start, end = replacement_range(record)
    placed = {m.id for m in history.messages[start:end]}
    if end > len(history) or (
        record.summary_message_id is not None and record.summary_message_id not in placed
    ):
        raise UndoRefused("the summary is no longer where it was put")
    history.replace(start, end, [m for m, _ in originals], [t for _, t in originals])
