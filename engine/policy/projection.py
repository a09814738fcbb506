"""What-if over a recorded session: where this engine would have compacted it, turn by turn.

A recorded session (another agent's transcript) was never compacted by us. `Projection` replays
it message by message into a History and asks `plan_turn` at every turn start, as
`SessionManager.before_turn` would. When the trigger fires and a span exists, the span is replaced
by a stand-in summary of `min(compaction_max_summary_tokens, span tokens)`: the most a summary may
take, so the projection errs towards firing again sooner, never later. When the configured
strategy masks instead (engine.policy.strategies), the span gets its real masked copies. No call is
made and the budget is taken as unspent. Feeding costs O(1) per message plus the §3.3 boundary
slide per turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

import msgspec

from engine.config import CompactionConfig
from engine.history import History, text_message
from engine.messages import Message, MessageMetadata, Role, TextContentBlock
from engine.policy.plan import plan_turn
from engine.policy.span import pending_history_tokens
from engine.policy.strategies import masked_span
from engine.policy.trigger import TriggerAction, TriggerReason

_NO_TEXT = (TextContentBlock(""),)
_SYNTHETIC = MessageMetadata(synthetic=True)


class ProjectedCompaction(msgspec.Struct, frozen=True):
    """Our compaction before the turn that opens at `before_index` (indexes of the recording)."""

    before_index: int
    turn: int
    action: TriggerAction
    reason: TriggerReason
    pending_tokens: int  # pending history tokens when it fired
    span_start: int  # the recording's messages[span_start:span_end] were summarized
    span_end: int
    span_tokens: int


class ProjectionState(msgspec.Struct, frozen=True):
    """A projection saved between processes (the status line resumes one per call). Everything
    before the history's floor only counts as tokens once our summarize strategy has compacted
    it, so `snapshot` folds it into one stand-in: the state stays the size of the live tail."""

    messages: list[Message]
    tokens: list[int]
    origin: list[int]
    stable_prefix_end: int
    count: int
    turns: int
    last_turn_start: int
    fire_count: int
    last_fire: ProjectedCompaction | None = None


class Projection:
    """Feed a recording's messages in order; `fires` lists where our trigger compacted."""

    def __init__(self, config: CompactionConfig) -> None:
        self.config = config
        self.history = History()
        self.fires: list[ProjectedCompaction] = []
        self.count = 0  # messages of the recording fed so far
        self.turns = 0
        self._origin: list[int] = []  # history index → recording index (-1: a stand-in)
        self._last_turn_start = -1  # recording index of the last turn start evaluated
        self._fires_before = 0  # fires dropped by a snapshot/restore (only the last is kept)

    @property
    def fire_count(self) -> int:
        """Fires so far, including those before a `restore` (which keeps only the last)."""
        return self._fires_before + len(self.fires)

    def snapshot(self) -> ProjectionState:
        history = self.history
        messages, tokens, origin = list(history.messages), list(history.tokens), self._origin
        floor = history.floor
        # Only the summarize strategy never looks below the floor again (a fold re-reads earlier
        # summaries, engine.policy.strategies), so only then is the folded prefix exact.
        if self.config.compaction_strategy == "summarize" and floor > history.stable_prefix_end + 1:
            start = history.stable_prefix_end
            folded = text_message("projected-prefix", Role.USER, "", synthetic=True)
            messages[start:floor] = [folded]
            tokens[start:floor] = [history.range_tokens(start, floor)]
            origin = [*origin[:start], -1, *origin[floor:]]
        return ProjectionState(
            messages=messages,
            tokens=tokens,
            origin=list(origin),
            stable_prefix_end=history.stable_prefix_end,
            count=self.count,
            turns=self.turns,
            last_turn_start=self._last_turn_start,
            fire_count=self.fire_count,
            last_fire=self.fires[-1] if self.fires else None,
        )

    @classmethod
    def restore(cls, config: CompactionConfig, state: ProjectionState) -> Projection:
        """Go on from a snapshot. Raises ValueError when the state does not hold together."""
        if not (len(state.messages) == len(state.tokens) == len(state.origin)):
            raise ValueError("projection state: messages, tokens and origins differ in length")
        projection = cls(config)
        projection.history = History(
            state.messages, stable_prefix_end=state.stable_prefix_end, tokens=state.tokens
        )
        projection._origin = list(state.origin)
        projection.count = state.count
        projection.turns = state.turns
        projection._last_turn_start = state.last_turn_start
        if state.last_fire is not None:
            projection.fires.append(state.last_fire)
        projection._fires_before = state.fire_count - len(projection.fires)
        return projection

    def feed(self, messages: Iterable[tuple[Message, int]]) -> None:
        # The history and the origins are changed in place by _before_turn, never replaced.
        history, origin, append = self.history, self._origin, self.history.append
        for message, tokens in messages:
            if message.opens_turn and history.messages:
                self._before_turn()
                self._last_turn_start = self.count
                self.turns += 1
            append(message, tokens)
            origin.append(self.count)
            self.count += 1

    def rewrite(self, start: int, messages: Iterable[tuple[Message, int]]) -> bool:
        """Replace the recording's messages from `start` on. Only what no turn was decided on can
        be rewritten in place (an agent adding a block to its newest message); returns False when
        the caller must project again from the start."""
        if start <= self._last_turn_start or start > self.count:
            return False
        keep = len(self.history) - (self.count - start)
        self.history.replace(keep, len(self.history), [], [])
        del self._origin[keep:]
        self.count = start
        self.feed(messages)
        return True

    def _before_turn(self) -> None:
        config = self.config
        if (
            pending_history_tokens(self.history, config.compaction_preserve_recent_turns)
            < config.compaction_threshold_tokens
        ):
            return  # below the soft threshold nothing fires (§3.1): no plan to make, O(1)
        plan = plan_turn(self.history, config, Decimal(0))
        span = plan.span
        if not plan.decision.fires or span is None:
            return  # a skip, or a failed no_valid_boundary turn: the history carries on as is
        # A folding strategy's span may start on an earlier stand-in (origin -1).
        origins = [o for o in self._origin[span.start : span.compaction_watermark] if o >= 0]
        if not origins:
            return
        start, end = origins[0], origins[-1] + 1
        self.fires.append(
            ProjectedCompaction(
                before_index=self.count,
                turn=self.turns,
                action=plan.decision.action,
                reason=plan.decision.reason,
                pending_tokens=plan.decision.pending_history_tokens,
                span_start=start,
                span_end=end,
                span_tokens=span.span_tokens,
            )
        )
        if plan.action == "mask":
            copies = masked_span(self.history, span.start, span.compaction_watermark)
            tokens = [self.history.counter(copy) for copy in copies]
            self.history.replace(span.start, span.compaction_watermark, copies, tokens)
            return  # one copy per original: the origins stay as they are
        # One content and one metadata for every stand-in (both frozen): a long recording
        # makes one a turn, and the history keeps them all (a summary is never compacted again).
        stand_in = Message(f"projected-{len(self.fires)}", Role.USER, _NO_TEXT, _SYNTHETIC)
        tokens = min(self.config.compaction_max_summary_tokens, span.span_tokens)
        self.history.replace(span.start, span.compaction_watermark, [stand_in], [tokens])
        self._origin[span.start : span.compaction_watermark] = [-1]


def project_compactions(
    messages: Iterable[tuple[Message, int]], config: CompactionConfig
) -> list[ProjectedCompaction]:
    projection = Projection(config)
    projection.feed(messages)
    return projection.fires
