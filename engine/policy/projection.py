"""What-if over a recorded session: where this engine would have compacted it, turn by turn.

A recorded session (another agent's transcript) was never compacted by us. `Projection` replays
it message by message into a History and asks `plan_turn` at every turn start, as
`SessionManager.before_turn` would. When the trigger fires and a span exists, the span is replaced
by a stand-in summary of `min(compaction_max_summary_tokens, span tokens)`: the most a summary may
take, so the projection errs towards firing again sooner, never later. When the configured
strategy masks instead (engine.policy.strategies), the span gets its real masked copies. A forced
turn with nothing the strategy can take (no tool-cycle boundary, §3.3; nothing left to mask)
truncates as the engine does (§3.4, engine.compaction.fallback_run): the oldest messages go,
earlier stand-ins first, until pending tokens are under the hard cap. No call is made and the
budget is taken as unspent. Feeding costs O(1) per message plus the §3.3 boundary slide per turn.

Under `summarize` (v1) a stand-in is never compacted again (§3.2), so on a long recording they
pile up: once they alone reach the hard cap, every turn is forced and compacts the one turn that
left the preserved tail, exactly as a SessionManager would (a summary commits; only a turn with no
valid boundary truncates). `every_turn_forced` says so, and from when.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Literal

import msgspec

from engine.config import CompactionConfig
from engine.history import History, text_message
from engine.messages import Message, MessageMetadata, Role, TextContentBlock
from engine.policy.plan import plan_turn
from engine.policy.span import pending_history_tokens, plan_truncation
from engine.policy.splice import (
    ASSISTANT_FILLER_TEXT,
    bridge,
    truncation_cost,
    truncation_notice,
)
from engine.policy.strategies import masked_span
from engine.policy.trigger import TriggerAction, TriggerDecision, TriggerReason

_NO_TEXT = (TextContentBlock(""),)
_SYNTHETIC = MessageMetadata(synthetic=True)
_FILLER = text_message("projected-f", Role.ASSISTANT, ASSISTANT_FILLER_TEXT, synthetic=True)
# Strategies that never take anything below the floor again (the others fold it, §12.4), and
# what lies there under each.
_KEPT_BELOW_FLOOR = {"summarize": "stand-in summaries", "mask": "masked copies"}
_FOLDS_IT = {"summarize": "recompact", "mask": "hybrid"}

Kind = Literal["summary", "mask", "truncation"]


def _no_id(prefix: str) -> str:
    return f"projected-{prefix}"


def _covered_start(origin: int) -> int:
    """The recording index where what a history entry stands for begins. An entry of the
    recording holds its own index; a stand-in, notice or filler holds -1 - that index."""
    return origin if origin >= 0 else -1 - origin


class ProjectedCompaction(msgspec.Struct, frozen=True):
    """Our compaction before the turn that opens at `before_index` (indexes of the recording)."""

    before_index: int
    turn: int
    action: TriggerAction
    reason: TriggerReason
    pending_tokens: int  # pending history tokens when it fired
    span_start: int  # the recording's messages[span_start:span_end] were summarized (dropped)
    span_end: int
    span_tokens: int  # a truncation: the tokens it dropped, earlier stand-ins included
    kind: Kind = "summary"  # "truncation": §3.4 at the hard cap, with no span to compact


class EveryTurnForced(msgspec.Struct, frozen=True):
    """From the turn that opens at `before_index` on, every turn is forced (§3.1 step 2): what
    the strategy never takes again (`kept_tokens`, below the floor) is over the hard cap alone."""

    turn: int
    before_index: int
    fires: int  # fires since then, that turn's included
    kept_tokens: int  # tokens below the floor now
    hard_cap_tokens: int
    strategy: str

    @property
    def kept(self) -> str:
        return _KEPT_BELOW_FLOOR.get(self.strategy, "earlier compactions")

    def explain(self) -> str:
        """One sentence: from when, what is over the cap, and why it stays there."""
        if self.strategy == "summarize":
            why = "v1 never re-compacts a summary (§3.2)"
        else:
            why = f"the {self.strategy} strategy never takes them again"
        folds = _FOLDS_IT.get(self.strategy)
        return (
            f"from turn {self.turn:,} (message {self.before_index:,}) every turn is forced: "
            f"the {self.kept} alone ({self.kept_tokens:,} tokens) are over the hard cap "
            f"({self.hard_cap_tokens:,}); {why}"
            + (f"; the {folds} strategy folds them" if folds else "")
        )


class ForcedSince(msgspec.Struct, frozen=True):
    """Where the current run of forced turns began (saved with a projection)."""

    turn: int
    before_index: int
    fire_count: int  # fires before it


class ProjectionState(msgspec.Struct, frozen=True):
    """A projection saved between processes (the status line resumes one per call). Under our
    summarize strategy what lies below the history's floor is only tokens (stand-ins, notices,
    fillers), so `snapshot` keeps it as numbers, and what lies a hard cap's worth below the floor
    as one: the state stays the size of the live tail plus what a truncation may keep."""

    messages: list[Message]
    tokens: list[int]
    origin: list[int]
    stable_prefix_end: int
    count: int
    turns: int
    last_turn_start: int
    fire_count: int
    last_fire: ProjectedCompaction | None = None
    # The summarize strategy's stand-ins below the floor, as tokens and origins only (they hold
    # no text and no tool call): a truncation (§3.4) may drop any number of them.
    kept_tokens: list[int] = msgspec.field(default_factory=list)
    kept_origins: list[int] = msgspec.field(default_factory=list)
    kept_roles: str = ""  # "u" a stand-in or notice, "a" a filler: alternation reads them
    forced_since: ForcedSince | None = None


class Projection:
    """Feed a recording's messages in order; `fires` lists where our trigger compacted."""

    def __init__(self, config: CompactionConfig) -> None:
        self.config = config
        self.history = History()
        self.fires: list[ProjectedCompaction] = []
        self.count = 0  # messages of the recording fed so far
        self.turns = 0
        # history index -> recording index; a stand-in: -1 - the index its span began at
        self._origin: list[int] = []
        self._last_turn_start = -1  # recording index of the last turn start evaluated
        self._fires_before = 0  # fires dropped by a snapshot/restore (only the last is kept)
        self._forced_since: ForcedSince | None = None
        self._filler = self.history.counter(_FILLER)

    @property
    def fire_count(self) -> int:
        """Fires so far, including those before a `restore` (which keeps only the last)."""
        return self._fires_before + len(self.fires)

    def kept_tokens(self) -> int:
        """Tokens the configured strategy never takes again: below the floor under `summarize`
        and `mask` (a folding strategy re-reads them, §12.4). O(1)."""
        if self.config.compaction_strategy not in _KEPT_BELOW_FLOOR:
            return 0
        history = self.history
        return history.range_tokens(history.stable_prefix_end, history.floor)

    def every_turn_forced(self) -> EveryTurnForced | None:
        """When the recording ends in a run of forced turns that the strategy cannot leave
        (what it never takes again is over the hard cap alone), where that run began. O(1)."""
        since, kept = self._forced_since, self.kept_tokens()
        if since is None or kept < self.config.compaction_hard_cap_tokens:
            return None  # none, or a truncation (§3.4) has just taken the pile under the cap
        return EveryTurnForced(
            turn=since.turn,
            before_index=since.before_index,
            fires=self.fire_count - since.fire_count,
            kept_tokens=kept,
            hard_cap_tokens=self.config.compaction_hard_cap_tokens,
            strategy=self.config.compaction_strategy,
        )

    def snapshot(self) -> ProjectionState:
        history = self.history
        messages, tokens, origin = list(history.messages), list(history.tokens), self._origin
        start, floor = history.stable_prefix_end, history.floor
        kept_tokens: list[int] = []
        kept_origins: list[int] = []
        kept_roles = ""
        # Under `summarize` everything below the floor is a stand-in, notice or filler (spans
        # start at the floor): no text, no tool call. Only their tokens and origins are kept;
        # a fold re-reads earlier summaries and a mask's copies hold tool calls, so not those.
        if self.config.compaction_strategy == "summarize" and floor > start:
            # What has the hard cap's worth of these after it is never kept by a truncation
            # (§3.4 leaves pending tokens under the cap, and stand-ins only pile up after it):
            # any cut drops it whole, so it is saved as one. The state stays bounded by the cap.
            cap, fold_end = self.config.compaction_hard_cap_tokens, floor
            while fold_end > start and history.range_tokens(fold_end - 1, floor) < cap:
                fold_end -= 1  # O(what lies within the cap of the floor), not O(every fire)
            kept_tokens, kept_origins = tokens[fold_end:floor], origin[fold_end:floor]
            roles = ["a" if m.role is Role.ASSISTANT else "u" for m in messages[fold_end:floor]]
            if fold_end > start:  # the origin of its first entry (where a cut reports it began)
                kept_tokens.insert(0, history.range_tokens(start, fold_end))
                kept_origins.insert(0, origin[start])
                roles.insert(0, "u")
            kept_roles = "".join(roles)
            del messages[start:floor], tokens[start:floor]
            origin = [*origin[:start], *origin[floor:]]
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
            kept_tokens=kept_tokens,
            kept_origins=kept_origins,
            kept_roles=kept_roles,
            forced_since=self._forced_since,
        )

    @classmethod
    def restore(cls, config: CompactionConfig, state: ProjectionState) -> Projection:
        """Go on from a snapshot. Raises ValueError when the state does not hold together."""
        if not (len(state.messages) == len(state.tokens) == len(state.origin)):
            raise ValueError("projection state: messages, tokens and origins differ in length")
        kept = len(state.kept_tokens)
        if not (kept == len(state.kept_origins) == len(state.kept_roles)):
            raise ValueError("projection state: kept tokens, origins and roles differ in length")
        if set(state.kept_roles) - {"a", "u"}:
            raise ValueError("projection state: a kept role is neither 'a' nor 'u'")
        if not 0 <= state.stable_prefix_end <= len(state.messages):
            raise ValueError("projection state: the stable prefix is outside the history")
        start = state.stable_prefix_end
        stand_in = Message("projected-kept", Role.USER, _NO_TEXT, _SYNTHETIC)
        kept_messages = [_FILLER if role == "a" else stand_in for role in state.kept_roles]
        messages = state.messages[:start] + kept_messages
        projection = cls(config)
        projection.history = History(
            messages + state.messages[start:],
            stable_prefix_end=start,
            tokens=[*state.tokens[:start], *state.kept_tokens, *state.tokens[start:]],
        )
        projection._origin = [*state.origin[:start], *state.kept_origins, *state.origin[start:]]
        projection.count = state.count
        projection.turns = state.turns
        projection._last_turn_start = state.last_turn_start
        if state.last_fire is not None:
            projection.fires.append(state.last_fire)
        projection._fires_before = state.fire_count - len(projection.fires)
        projection._forced_since = state.forced_since
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
        # The run of forced turns goes on while what is never taken again stays over the cap.
        if self.kept_tokens() < config.compaction_hard_cap_tokens:
            self._forced_since = None
        elif self._forced_since is None:
            self._forced_since = ForcedSince(self.turns, self.count, self.fire_count)
        if (
            pending_history_tokens(self.history, config.compaction_preserve_recent_turns)
            < config.compaction_threshold_tokens
        ):
            return  # below the soft threshold nothing fires (§3.1): no plan to make, O(1)
        plan = plan_turn(self.history, config, Decimal(0))
        span = plan.span
        if not plan.decision.fires:
            return
        if span is None or plan.action is None:
            # No span the strategy can take (§3.3 no_valid_boundary; `mask` with nothing left to
            # mask): at the hard cap the engine truncates (§3.4), below it the turn only fails.
            if plan.decision.action is TriggerAction.FORCED:
                self._truncate(plan.decision)
            return
        # A folding strategy's span may start on an earlier stand-in (origin below 0).
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
                kind="mask" if plan.action == "mask" else "summary",
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
        self._splice(span.start, span.compaction_watermark, stand_in, tokens)

    def _splice(self, start: int, end: int, block: Message, tokens: int | None = None) -> None:
        """messages[start:end] replaced by `block` (`tokens` of it; None: counted) with the
        assistant fillers role alternation needs around it, as engine.policy.splice does. The
        fillers are one shared message: a long recording makes thousands."""
        history = self.history
        bridged = bridge(history.role_before(start), block, history.role_at(end), _no_id)
        bridged = [m if m is block else _FILLER for m in bridged]
        counts = [
            (history.counter(m) if tokens is None else tokens) if m is block else self._filler
            for m in bridged
        ]
        covered = -1 - _covered_start(self._origin[start])
        history.replace(start, end, bridged, counts)
        self._origin[start:end] = [covered] * len(bridged)

    def _truncate(self, decision: TriggerDecision) -> None:
        """§3.4 as engine.compaction.fallback_run.truncate does it: the fewest oldest messages
        on a tool-cycle boundary, replaced by the notice (and the fillers alternation needs)."""
        history, config = self.history, self.config
        cut = plan_truncation(
            history,
            config.compaction_preserve_recent_turns,
            config.compaction_hard_cap_tokens,
            replacement_tokens=lambda start, end: truncation_cost(history, start, end, _no_id),
        )
        if cut is None:
            return  # not even dropping all of it gets under the cap: the turn fails
        origin = self._origin
        after = origin[cut.end] if cut.end < len(origin) else self.count
        self.fires.append(
            ProjectedCompaction(
                before_index=self.count,
                turn=self.turns,
                action=decision.action,
                reason=decision.reason,
                pending_tokens=decision.pending_history_tokens,
                span_start=_covered_start(origin[cut.start]),
                span_end=_covered_start(after),
                span_tokens=cut.dropped_tokens,
                kind="truncation",
            )
        )
        self._splice(cut.start, cut.end, truncation_notice(cut.dropped_message_count, "t"))


def project_compactions(
    messages: Iterable[tuple[Message, int]], config: CompactionConfig
) -> list[ProjectedCompaction]:
    projection = Projection(config)
    projection.feed(messages)
    return projection.fires
