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
from engine.manager import plan_turn
from engine.messages import Message, Role
from engine.policy.strategies import masked_span
from engine.policy.trigger import TriggerAction, TriggerReason


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

    def feed(self, messages: Iterable[tuple[Message, int]]) -> None:
        for message, tokens in messages:
            if message.opens_turn and len(self.history):
                self._before_turn()
                self._last_turn_start = self.count
                self.turns += 1
            self.history.append(message, tokens)
            self._origin.append(self.count)
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
        plan = plan_turn(self.history, self.config, Decimal(0))
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
        stand_in = text_message(f"projected-{len(self.fires)}", Role.USER, "", synthetic=True)
        tokens = min(self.config.compaction_max_summary_tokens, span.span_tokens)
        self.history.replace(span.start, span.compaction_watermark, [stand_in], [tokens])
        self._origin[span.start : span.compaction_watermark] = [-1]


def project_compactions(
    messages: Iterable[tuple[Message, int]], config: CompactionConfig
) -> list[ProjectedCompaction]:
    projection = Projection(config)
    projection.feed(messages)
    return projection.fires
