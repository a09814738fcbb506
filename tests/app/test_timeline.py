"""metis_compaction_tui.timeline: the sparkline's points, held as arrays."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_compaction_tui.timeline import Timeline, TimelinePoint

points = st.lists(
    st.tuples(st.integers(0, 10**9), st.sampled_from([None, None, None, "summary", "truncation"])),
    max_size=300,
)


def reference_columns(
    values: list[tuple[int, str | None]], count: int
) -> list[tuple[int, str | None]]:
    """One column per turn, or per bucket of turns: its maximum and its first mark."""
    if not values or count <= 0:
        return []
    if len(values) <= count:
        return list(values)
    columns = []
    for column in range(count):
        start = column * len(values) // count
        end = max(start + 1, (column + 1) * len(values) // count)
        chunk = values[start:end]
        mark = next((m for _, m in chunk if m), None)
        columns.append((max(v for v, _ in chunk), mark))
    return columns


@given(points, st.integers(0, 120))
def test_columns_are_each_buckets_maximum_and_first_mark(
    values: list[tuple[int, str | None]], count: int
) -> None:
    timeline = Timeline(values)
    assert timeline.columns(count) == reference_columns(values, count)
    assert list(timeline) == [TimelinePoint(i, v, m) for i, (v, m) in enumerate(values)]
    assert timeline.peak == max((v for v, _ in values), default=0)
    assert timeline.compactions == sum(1 for _, m in values if m)


@given(points, st.integers(0, 400))
def test_dropping_turns_forgets_their_tokens_and_marks(
    values: list[tuple[int, str | None]], count: int
) -> None:
    timeline = Timeline(values)
    timeline.drop(count)
    kept = values[: max(0, len(values) - count)]
    assert timeline == Timeline(kept)
    assert list(timeline) == list(Timeline(kept))


def test_now_moves_the_last_point_and_keeps_its_mark() -> None:
    timeline = Timeline([(10, None), (50, "summary")])
    timeline.set_now(70)
    assert timeline[-1] == TimelinePoint(1, 70, "summary")
    assert timeline[0] == TimelinePoint(0, 10, None)
    timeline.add(80)
    assert len(timeline) == 3 and timeline.peak == 80 and timeline.compactions == 1
    with pytest.raises(IndexError):
        timeline[3]
    assert not Timeline() and Timeline().peak == 0 and Timeline().columns(10) == []
