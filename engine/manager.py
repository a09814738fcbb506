"""SessionManager: the §3-§6 rules run at the start of each turn, plus manual compaction.

The decisions (trigger, span, boundary, splice) are pure functions in engine.policy; the steps of
a run (the summary call with its cache lookup, the commit, the §3.4 fallback) are functions in
engine.compaction that return what they made. This class holds the session's state (history,
config, spend, revision) and is the one place that applies a step's result: the store first,
then the events, then its own state.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import fields, replace
from decimal import Decimal
from typing import Any

from engine.cache import CompactionCache
from engine.compaction.commit import commit_prepared
from engine.compaction.deps import ManagerDeps, SessionPersistence
from engine.compaction.result import CommitResult, StepInputs, Trigger, started_event
from engine.compaction.summary_call import (
    cache_key,
    max_summary_tokens,
    prepare_mask,
    prepare_summary,
)
from engine.compaction.turn import CompactSpan, open_turn, summary_failed
from engine.config import CompactionConfig
from engine.endpoint import call_endpoint
from engine.errors import ConfigError, NothingToCompact
from engine.events import CompactionEvent, EventBus
from engine.history import History
from engine.layout import cache_path
from engine.messages import Message, validate_history, validate_message
from engine.outcomes import (
    CompactionOutcome,
    CompactionPreview,
    PreparedCompaction,
    SessionSnapshot,
    SpanChanged,
    TurnPlan,
)
from engine.policy.plan import plan_turn
from engine.policy.span import SpanPlan, check_span_unchanged
from engine.policy.strategies import StrategyPlan, fold_start, plan_strategy, why_nothing_to_do
from engine.summarizers import (
    Summarizer,
    SummarizerError,
    SummarizerSettings,
    check_summarizer,
    make_summarizer,
    price_origin,
)
from engine.tokens import estimate_message_tokens

# Re-exported: metis dev imports these from here.
__all__ = ["ManagerDeps", "SessionManager", "SessionPersistence", "Trigger"]

_KNOBS = frozenset(CompactionConfig.__struct_fields__)
_DEPS = frozenset(field.name for field in fields(ManagerDeps))


class SessionManager:
    def __init__(
        self,
        *,
        session_id: str | None = None,
        history: Sequence[Message] = (),
        stable_prefix_end: int = 0,
        config: CompactionConfig | None = None,
        deps: ManagerDeps | None = None,
        spent_usd: Decimal = Decimal(0),
        revision: int = 0,
        **keywords: Any,
    ) -> None:
        """`config` holds the §11 knobs, `deps` what the manager works with. The 0.1 keywords
        (each knob, e.g. compaction_threshold_tokens=..., and workspace, summarizer,
        token_counter, cache, persistence, bus, clock) still work and override the two."""
        unknown = sorted(set(keywords) - _KNOBS - _DEPS)
        if unknown:
            raise TypeError(f"SessionManager() got an unexpected keyword argument {unknown[0]!r}")
        knobs = {k: v for k, v in keywords.items() if k in _KNOBS}
        if knobs:
            base = config or CompactionConfig()
            current = {name: getattr(base, name) for name in _KNOBS}
            # §11: every knob validated here; a bad one raises ConfigError naming it.
            config = CompactionConfig(**{**current, **knobs})
        self.config = config or CompactionConfig()
        deps = replace(deps or ManagerDeps(), **{k: v for k, v in keywords.items() if k in _DEPS})
        self.session_id = session_id or uuid.uuid4().hex
        validate_history(history)
        self.history = History(
            history,
            stable_prefix_end=stable_prefix_end,
            counter=deps.token_counter or estimate_message_tokens,
            eager_canonical=True,
        )
        model = self.config.compaction_model
        summarizer = deps.summarizer
        if summarizer is not None:
            # Any object meeting the Summarizer protocol, under any model name: its own.
            if not isinstance(summarizer, Summarizer):
                raise ConfigError(
                    "compaction_model",
                    f"a {type(summarizer).__name__} does not meet the Summarizer protocol "
                    "(name, summarize, estimate_cost, aclose)",
                )
            if summarizer.name != model:
                raise ConfigError(
                    "compaction_model",
                    f"the summarizer given serves {summarizer.name!r}, not {model!r}",
                )
        else:
            # No summarizer is made yet (no client until a compaction needs one), but a model
            # nothing can serve, or an unpriced one, fails here rather than mid-turn.
            check_summarizer(model, deps.summarizer_settings)
        self._summarizer = summarizer
        self.summarizer_settings = deps.summarizer_settings or SummarizerSettings()
        cache = deps.cache
        if cache is None and deps.workspace is not None:
            cache = CompactionCache(
                cache_path(deps.workspace), max_rows=self.config.compaction_cache_max_rows
            )
        self.cache = cache
        self.persistence = deps.persistence
        self.bus = deps.bus or EventBus()
        self.spent_usd = spent_usd
        self.revision = revision
        self._clock = deps.clock
        self._new_id = deps.new_id

    # -- the session's messages -------------------------------------------------------------

    def append(self, message: Message, tokens: int | None = None) -> int:
        """Add one message; it must keep the history valid (checked against the last message)."""
        index = len(self.history)
        validate_message(message, index)
        validate_history(
            [message],
            previous=self.history.messages[-1] if self.history.messages else None,
            first_index=index,
        )
        count = self.history.counter(message) if tokens is None else tokens
        if self.persistence is not None:
            # Store first, memory second: a refused write (disk full, read-only) leaves both as
            # they were, so the session is not left ahead of its store.
            self.persistence.append_message(self.session_id, message, count)
        return self.history.append(message, count)

    @property
    def messages(self) -> list[Message]:
        return self.history.messages

    @property
    def summarizer(self) -> Summarizer:
        if self._summarizer is None:
            self._summarizer = make_summarizer(
                self.config.compaction_model, self.summarizer_settings
            )
        return self._summarizer

    def sync(self) -> bool:
        """Pick up another process's compaction or undo (the app's "compact now"). True if any."""
        if self.persistence is None:
            return False
        snapshot = self.persistence.snapshot_if_changed(self.session_id, self.revision)
        if snapshot is None:
            return False
        self.load_snapshot(snapshot)
        return True

    def load_snapshot(self, snapshot: SessionSnapshot) -> None:
        """Take the stored session as it is: its messages with their stored token counts (they may
        be the adapter's own, §3.1, not re-estimated), its spend and its revision."""
        self.history = History(
            snapshot.messages,
            stable_prefix_end=snapshot.stable_prefix_end,
            counter=self.history.counter,
            tokens=snapshot.tokens,
            eager_canonical=True,
        )
        self.spent_usd = snapshot.spent_usd
        self.revision = snapshot.revision

    # -- planning (pure) -----------------------------------------------------------------------

    def plan(self) -> TurnPlan:
        return plan_turn(self.history, self.config, self.spent_usd)

    # -- the turn ------------------------------------------------------------------------------

    async def before_turn(self, turn_id: str | None = None) -> CompactionOutcome:
        """§3.1, at the start of every turn before the LLM call."""
        self.sync()
        plan = self.plan()
        turn_id = turn_id or uuid.uuid4().hex
        opened = open_turn(self._inputs(), plan, turn_id, now_ms=self._clock(), new_id=self._new_id)
        if not isinstance(opened, CompactSpan):
            return self._apply(opened)
        self._emit_all(opened.events)
        try:
            if opened.action == "mask":
                prepared = prepare_mask(self._inputs(), opened.span, opened.trigger)
            else:
                try:
                    prepared = await self._prepare_summary(opened.span, None, opened.trigger)
                except SummarizerError as error:
                    failure = summary_failed(
                        self._inputs(), plan, turn_id, opened, error,
                        now_ms=self._clock(), new_id=self._new_id,
                    )  # fmt: skip
                    return self._apply(failure)
            return self._apply(self._commit_step(plan, prepared, turn_id))
        except SpanChanged:
            # Another process (the app's "compact now") committed first: take its result.
            self.sync()
            return CompactionOutcome(status="skipped", plan=self.plan())

    # -- manual compaction ---------------------------------------------------------------------

    def preview(self, instructions: str | None = None) -> CompactionPreview | None:
        """What "compact now" would do; None when there is no span to compact."""
        self.sync()
        planned = self._strategy_plan()
        if planned is None:
            return None
        span = planned.span
        key, hit, cost = "", False, Decimal(0)
        # A mask makes no call and caches nothing: it is computed from the span itself.
        if planned.action != "mask":
            inputs = self._inputs()
            max_tokens = max_summary_tokens(inputs, self.summarizer, span, instructions)
            key = cache_key(inputs, self.summarizer, span, instructions, max_tokens)
            hit = self.cache is not None and self.cache.peek(key) is not None
            if not hit:
                cost = self.summarizer.estimate_cost(span.span_tokens, max_tokens)
        return CompactionPreview(
            span=span,
            cache_key=key,
            cache_hit=hit,
            model=self.config.compaction_model,
            estimated_cost_usd=cost,
            spent_usd=self.spent_usd,
            budget_usd=self.config.compaction_max_cost_per_session_usd,
            instructions=instructions or None,
            strategy=planned.strategy,
            action=planned.action,
            expected_saved_tokens=planned.expected_saved_tokens,
            price_origin=price_origin(self.config.compaction_model, self.summarizer_settings),
            endpoint=call_endpoint(self.config.compaction_model, self.summarizer_settings),
        )

    async def prepare(
        self, instructions: str | None = None, *, trigger: Trigger = "manual"
    ) -> PreparedCompaction:
        """Make the summary for the current span without changing the history. Raises
        SummarizerError on a failed call, NothingToCompact (a ValueError) when there is no span."""
        self.sync()
        planned = self._strategy_plan()
        if planned is None:
            config = self.config
            raise NothingToCompact(
                why_nothing_to_do(
                    self.history,
                    config.compaction_strategy,
                    config.compaction_preserve_recent_turns,
                )
            )
        if planned.action == "mask":
            return prepare_mask(self._inputs(), planned.span, trigger)
        return await self._prepare_summary(planned.span, instructions or None, trigger)

    def commit(self, prepared: PreparedCompaction, turn_id: str | None = None) -> CompactionOutcome:
        """Splice an accepted summary in. Raises SpanChanged if the span is no longer as it was,
        here or in the store (another process committed first); either way the manager has
        synced to what is stored before it raises, so a new preview starts from there."""
        span = prepared.span
        current = [m.id for m in self.history.messages[span.start : span.compaction_watermark]]
        # A span starts at the floor, or at the prefix end when it folds earlier summaries in.
        starts = (self.history.floor, fold_start(self.history))
        try:  # a span that no longer starts where a span may start has changed too
            check_span_unchanged(
                current if span.start in starts else [], span.start, prepared.span_ids
            )
        except SpanChanged:
            self.sync()
            raise
        turn_id = turn_id or uuid.uuid4().hex
        self._emit_all((started_event(self.session_id, turn_id, span, prepared.trigger),))
        try:
            return self._apply(self._commit_step(self.plan(), prepared, turn_id))
        except SpanChanged:
            self.sync()  # the store refused: take the winner's history, not keep a stale one
            raise

    # -- applying what the steps return -------------------------------------------------------

    def _inputs(self) -> StepInputs:
        return StepInputs(
            session_id=self.session_id,
            history=self.history,
            config=self.config,
            spent_usd=self.spent_usd,
        )

    async def _prepare_summary(
        self, span: SpanPlan, instructions: str | None, trigger: Trigger
    ) -> PreparedCompaction:
        """engine.compaction.summary_call's summary, its cost charged (a failed call's too)."""
        try:
            prepared = await prepare_summary(
                self._inputs(), span, instructions, trigger,
                summarizer=self.summarizer, cache=self.cache,
            )  # fmt: skip
        except SummarizerError as error:
            self._charge(error.billed_cost_usd)
            raise
        self._charge(prepared.cost_usd)
        return prepared

    def _commit_step(
        self, plan: TurnPlan, prepared: PreparedCompaction, turn_id: str
    ) -> CommitResult:
        return commit_prepared(
            self._inputs(), plan, prepared, turn_id, now_ms=self._clock(), new_id=self._new_id
        )

    def _charge(self, cost: Decimal) -> None:
        """Compaction spend, kept apart from the session's primary spend (§4, §12.5); written as
        soon as it is billed, whatever happens to the summary."""
        if cost:
            self.spent_usd += cost
            if self.persistence is not None:
                self.persistence.record_spend(self.session_id, self.spent_usd)

    def _emit_all(self, events: Sequence[CompactionEvent]) -> None:
        for event in events:
            if self.persistence is not None:
                self.persistence.record_event(self.session_id, event)
            self.bus.emit(event)

    def _apply(self, result: CommitResult) -> CompactionOutcome:
        """The store first: a refused write (SpanChanged, a full disk) leaves the session as it
        was. Then the events, then this manager's state."""
        change = result.replacement
        revision = self.revision
        if change is not None and self.persistence is not None:
            # Compare-and-set on the revision planned on: an undo made by another process since
            # then may leave the span's ids in place (a mask's copies) and would otherwise be
            # written over and never synced (the revision jumping past it).
            revision = self.persistence.commit_replacement(
                self.session_id, change.start, change.span_ids, change.messages, change.tokens,
                change.record, result.spent_usd, expected_revision=self.revision,
            )  # fmt: skip
        self._emit_all(result.events)
        if change is not None:
            self.history = change.history
        self.revision = revision
        self.spent_usd = result.spent_usd
        return result.outcome

    # -- internals -----------------------------------------------------------------------------

    def _strategy_plan(self) -> StrategyPlan | None:
        config = self.config
        return plan_strategy(
            self.history,
            config.compaction_strategy,
            config.compaction_preserve_recent_turns,
            config.compaction_threshold_tokens,
            config.compaction_max_summary_tokens,
        )

    async def aclose(self) -> None:
        if self._summarizer is not None:
            await self._summarizer.aclose()
