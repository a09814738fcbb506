"""engine.policy.undo: the latest compaction in effect goes first, its originals come back."""

from __future__ import annotations

import pytest

from engine.errors import UndoRefused
from engine.history import History
from engine.outcomes import CompactionRecord
from engine.policy.splice import summary_message
from engine.policy.undo import NOTHING_TO_UNDO, latest_in_effect, undo_compaction
from tests.history_builders import assistant, ids, user


def record(start: int, count: int, summary_id: str | None) -> CompactionRecord:
    return CompactionRecord(
        kind="summary",
        turn_id="t",
        watermark_before=start,
        watermark_after=start + count,
        span_message_count=count,
        span_token_count_in=40,
        span_token_count_out=5,
        replacement_count=1,
        summary_message_id=summary_id,
    )


def test_the_latest_not_undone_goes_first() -> None:
    assert latest_in_effect([("a", False), ("b", False), ("c", True)]) == (1, "b")
    with pytest.raises(UndoRefused) as refused:
        latest_in_effect([("a", True)])
    assert refused.value.reason == NOTHING_TO_UNDO


def test_undo_puts_the_originals_back_in_place_of_the_summary() -> None:
    originals = [(user("u0", "x"), 10), (assistant("a1", "y"), 10)]
    summary = summary_message(
        message_id="s1",
        model="m",
        watermark_before=0,
        watermark_after=2,
        summary="s",
        cache_key="k",
    )
    history = History([summary, user("u2")], tokens=[5, 3])
    undo_compaction(history, record(0, 2, summary.id), originals)
    assert ids(history.messages) == ["u0", "a1", "u2"]
    assert history.tokens == [10, 10, 3]


def test_a_summary_that_moved_is_refused_and_nothing_changes() -> None:
    history = History([user("u9"), user("u2")], tokens=[5, 3])
    with pytest.raises(UndoRefused):
        undo_compaction(history, record(0, 2, "gone"), [(user("u0"), 1)])
    assert ids(history.messages) == ["u9", "u2"]
