"""History tokens at the end of each turn, for the sparkline.

A session the app stays open on can run to tens of thousands of turns, and the sparkline redraws
on every live update: so the points are an array of token counts (8 bytes a turn) and a dict of
the few turns that hold a compaction, not one object per turn, and the sparkline's columns are
reduced from array slices.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True)
class TimelinePoint:
    """History tokens at the end of one turn (the last point: now); `compaction` marks a
    compaction during that turn."""

    turn: int
    history_tokens: int
    compaction: str | None = None  # "summary" | "truncation"


class Timeline:
    """TimelinePoints by turn; turn i is point i."""

    __slots__ = ("_marks", "_tokens")

    def __init__(self, points: Iterable[tuple[int, str | None]] = ()) -> None:
        self._tokens = array("q")
        self._marks: dict[int, str] = {}
        for history_tokens, compaction in points:
            self.add(history_tokens, compaction)

    def add(self, history_tokens: int, compaction: str | None = None) -> None:
        """A new turn: the new last point."""
        if compaction is not None:
            self._marks[len(self._tokens)] = compaction
        self._tokens.append(history_tokens)

    def set_now(self, history_tokens: int) -> None:
        """The last point's tokens (its mark kept)."""
        self._tokens[-1] = history_tokens

    def drop(self, count: int) -> None:
        """Forget the last `count` turns (a rewritten recording took them back)."""
        keep = max(0, len(self._tokens) - count)
        del self._tokens[keep:]
        for turn in [t for t in self._marks if t >= keep]:
            del self._marks[turn]

    def __len__(self) -> int:
        return len(self._tokens)

    def __getitem__(self, index: int) -> TimelinePoint:
        turn = range(len(self._tokens))[index]  # negative indexes, and IndexError, as a list's
        return TimelinePoint(turn, self._tokens[turn], self._marks.get(turn))

    def __iter__(self) -> Iterator[TimelinePoint]:
        marks = self._marks
        for turn, history_tokens in enumerate(self._tokens):
            yield TimelinePoint(turn, history_tokens, marks.get(turn))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timeline):
            return NotImplemented
        return self._tokens == other._tokens and self._marks == other._marks

    def __repr__(self) -> str:
        return f"Timeline({len(self)} turns, {len(self._marks)} compactions)"

    @property
    def peak(self) -> int:
        return max(self._tokens, default=0)

    @property
    def compactions(self) -> int:
        return len(self._marks)

    def columns(self, count: int) -> list[tuple[int, str | None]]:
        """At most `count` (tokens, mark) columns: one per turn, or one per bucket of turns
        when there are more turns than columns (each bucket's maximum, and its first mark)."""
        tokens, marks, turns = self._tokens, self._marks, len(self._tokens)
        if not turns or count <= 0:
            return []
        if turns <= count:
            return [(value, marks.get(turn)) for turn, value in enumerate(tokens)]
        bounds = [column * turns // count for column in range(count + 1)]
        marked = sorted(marks)
        result: list[tuple[int, str | None]] = []
        for start, end in pairwise(bounds):
            end = max(start + 1, end)
            first = bisect_left(marked, start)
            mark = marks[marked[first]] if first < len(marked) and marked[first] < end else None
            result.append((max(tokens[start:end]), mark))
        return result
