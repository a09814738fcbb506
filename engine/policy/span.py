"""§3.2-§3.4 as pure functions: the span to compact, the tool-cycle boundary, the truncation cut."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from engine.errors import SpanChanged
from engine.history import History


class SpanPlan(msgspec.Struct, frozen=True):
    """messages[start:compaction_watermark] is the span. `nominal_watermark` is message_count -
    preserve_recent_turns (§3.2); `compaction_watermark` (the spec's name) is where it landed
    after sliding back to a tool-cycle boundary (§3.3)."""

    start: int
    nominal_watermark: int
    compaction_watermark: int
    span_tokens: int
    pending_history_tokens: int

    @property
    def watermark(self) -> int:
        """The 0.1 name of `compaction_watermark`, kept for metis dev's code."""
        return self.compaction_watermark

    @property
    def span_message_count(self) -> int:
        return self.compaction_watermark - self.start

    @property
    def slid_back_by(self) -> int:
        return self.nominal_watermark - self.compaction_watermark


def check_span_unchanged(
    current_ids: Sequence[str],
    start: int,
    span_ids: Sequence[str],
    *,
    context: str = "",
    cause: str = "",
) -> None:
    """The commit-time rule, wherever the history lives (a manager's copy, the store, memory):
    the ids now at [start, start + len(span_ids)) are the ids that were summarized, in order.
    SpanChanged otherwise; `context` leads its message (e.g. which session), `cause` ends it."""
    if tuple(current_ids) != tuple(span_ids):
        end = start + len(span_ids)
        raise SpanChanged(
            f"{context}the span {start}..{end} changed since it was summarized{cause}"
        )


def is_tool_cycle_boundary(history: History, index: int) -> bool:
    """A cut before messages[index] splits no tool cycle: the message before it made no tool call
    (a tool_use is answered in the very next message, so that is the only way to split one)."""
    if index <= 0:
        return True
    return not history.messages[index - 1].tool_use_ids()


def nominal_watermark(history: History, preserve_recent_turns: int) -> int:
    """§3.2: the index just before the preserved tail, never below the compaction floor."""
    return max(history.floor, len(history) - preserve_recent_turns)


def pending_history_tokens(history: History, preserve_recent_turns: int) -> int:
    """§3.1 step 1: tokens between the stable-prefix end and the preserved tail. Summaries count:
    they are billed; they are just not compactable again (v1)."""
    end = max(history.stable_prefix_end, len(history) - preserve_recent_turns)
    return history.range_tokens(history.stable_prefix_end, end)


def plan_span(
    history: History, preserve_recent_turns: int, *, start: int | None = None
) -> SpanPlan | None:
    """The span for this turn, or None when the candidate range holds no valid boundary
    (§3.3 `no_valid_boundary`; an empty range is also None: nothing to compact). `start` below the
    floor is a re-compaction's (§12.4, engine.policy.strategies): earlier summaries are in it."""
    if start is None:
        start = history.floor
        nominal = nominal_watermark(history, preserve_recent_turns)
    else:
        start = max(history.stable_prefix_end, start)
        nominal = max(start, len(history) - preserve_recent_turns)
    watermark = nominal
    # §3.3: slide earlier until the cut lands on a tool-cycle boundary.
    while watermark > start and not is_tool_cycle_boundary(history, watermark):
        watermark -= 1
    if watermark <= start:
        return None
    return SpanPlan(
        start=start,
        nominal_watermark=nominal,
        compaction_watermark=watermark,
        span_tokens=history.range_tokens(start, watermark),
        pending_history_tokens=pending_history_tokens(history, preserve_recent_turns),
    )


def has_compactable_messages(history: History, preserve_recent_turns: int) -> bool:
    """True when the candidate range is non-empty, so a None from plan_span means no boundary."""
    return nominal_watermark(history, preserve_recent_turns) > history.floor


class TruncationPlan(msgspec.Struct, frozen=True):
    """Drop messages[start:end] (§3.4), leaving pending tokens at `pending_after`."""

    start: int
    end: int
    dropped_tokens: int
    pending_after: int

    @property
    def dropped_message_count(self) -> int:
        return self.end - self.start


def plan_truncation(
    history: History,
    preserve_recent_turns: int,
    hard_cap_tokens: int,
    *,
    replacement_tokens: Callable[[int, int], int] | None = None,
) -> TruncationPlan | None:
    """§3.4: the fewest oldest non-preserved messages, cut on a tool-cycle boundary, whose removal
    brings pending tokens under the hard cap. Summaries are messages too and go oldest first.
    `replacement_tokens(start, end)` counts what will stand in the cut's place (the truncation
    notice and its fillers): those are pending tokens too, and `pending_after` includes them.
    None when even dropping everything droppable cannot get there on a boundary."""
    start = history.stable_prefix_end
    limit = max(start, len(history) - preserve_recent_turns)
    pending = pending_history_tokens(history, preserve_recent_turns)
    for end in range(start + 1, limit + 1):
        dropped = history.range_tokens(start, end)
        if pending - dropped >= hard_cap_tokens or not is_tool_cycle_boundary(history, end):
            continue
        after = pending - dropped + (replacement_tokens(start, end) if replacement_tokens else 0)
        if after < hard_cap_tokens:
            return TruncationPlan(start, end, dropped, after)
    return None
