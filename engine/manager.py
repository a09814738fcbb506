"""SessionManager: the §3-§6 rules run at the start of each turn, plus manual compaction.

The decisions (trigger, span, boundary, splice) are pure functions in their own modules; this
class holds the session's state and does the I/O around them: the summary call, the cache, the
events and, when given, the persistent store.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, Protocol

from engine.cache import CacheRow, CompactionCache
from engine.cache_key import compute_cache_key
from engine.config import CompactionConfig
from engine.errors import ConfigError, NothingToCompact
from engine.events import (
    CompactionCompleted,
    CompactionEvent,
    CompactionFailed,
    CompactionStarted,
    EventBus,
    FailureMode,
    redact,
)
from engine.history import History, text_message
from engine.layout import cache_path
from engine.messages import HistoryError, Message, Role, validate_history, validate_message
from engine.outcomes import (
    CompactionOutcome,
    CompactionPreview,
    CompactionRecord,
    PreparedCompaction,
    SessionSnapshot,
    SpanChanged,
    TurnPlan,
)
from engine.policy.cache_fit import cache_row_problem
from engine.policy.fallback import fallback
from engine.policy.plan import plan_turn
from engine.policy.span import (
    SpanPlan,
    check_span_unchanged,
    plan_truncation,
)
from engine.policy.splice import (
    splice,
    splice_masked,
    summary_message,
    truncation_cost,
    truncation_notice,
)
from engine.policy.strategies import (
    StrategyPlan,
    fold_start,
    masked_span,
    plan_strategy,
    why_nothing_to_do,
)
from engine.policy.trigger import TriggerAction
from engine.summarizers import (
    Summarizer,
    SummarizerError,
    SummarizerSettings,
    SummaryRequest,
    check_summarizer,
    make_summarizer,
)
from engine.tokens import TokenCounter, estimate_message_tokens

Trigger = Literal["threshold", "hard_cap", "manual"]


class SessionPersistence(Protocol):
    """What the manager needs from a store (engine.store.SessionStore implements it)."""

    def append_message(self, session_id: str, message: Message, tokens: int) -> None: ...

    def commit_replacement(
        self,
        session_id: str,
        start: int,
        span_ids: Sequence[str],
        replacement: Sequence[Message],
        replacement_tokens: Sequence[int],
        record: CompactionRecord,
        spent_usd: Decimal,
        *,
        expected_revision: int | None = None,
    ) -> int:
        """Replace the span in one transaction; raise SpanChanged if it is not as summarized,
        or if the session's revision is not `expected_revision` (the one the manager planned
        on: another process compacted or undid since). Returns the session's new revision."""
        ...

    def record_event(self, session_id: str, event: CompactionEvent) -> None: ...

    def record_spend(self, session_id: str, spent_usd: Decimal) -> None: ...

    def snapshot_if_changed(self, session_id: str, revision: int) -> SessionSnapshot | None: ...


def _probe(text: str) -> Message:
    """A summary as the message it would become, to count its tokens."""
    return text_message("probe", Role.USER, text, synthetic=True)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, kw_only=True)
class ManagerDeps:
    """What a SessionManager works with, apart from the session and its knobs. Every field is
    optional: a summarizer from the model's name, a cache under `workspace/.metis/` when a
    workspace is given, no persistence (memory only), a fresh EventBus, the wall clock."""

    workspace: Path | None = None
    summarizer: Summarizer | None = None
    summarizer_settings: SummarizerSettings | None = None  # import path, endpoint, stated price
    token_counter: TokenCounter | None = None
    cache: CompactionCache | None = None
    persistence: SessionPersistence | None = None
    bus: EventBus | None = None
    clock: Callable[[], int] = _now_ms


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
        self.history = History(
            snapshot.messages,
            stable_prefix_end=snapshot.stable_prefix_end,
            counter=self.history.counter,
            tokens=snapshot.tokens,
            eager_canonical=True,
        )
        self.spent_usd = snapshot.spent_usd
        self.revision = snapshot.revision
        return True

    # -- planning (pure) -----------------------------------------------------------------------

    def plan(self) -> TurnPlan:
        return plan_turn(self.history, self.config, self.spent_usd)

    # -- the turn ------------------------------------------------------------------------------

    async def before_turn(self, turn_id: str | None = None) -> CompactionOutcome:
        """§3.1, at the start of every turn before the LLM call."""
        self.sync()
        turn_id = turn_id or uuid.uuid4().hex
        plan = self.plan()
        decision = plan.decision
        if not decision.fires:
            return CompactionOutcome(status="skipped", plan=plan)
        forced = decision.action is TriggerAction.FORCED
        trigger: Trigger = "hard_cap" if forced else "threshold"
        if plan.span is None:
            # §3.3: no tool-cycle boundary in the candidate range. One failed event per turn:
            # at the hard cap _truncate emits it, with truncated_message_count.
            if fallback(at_hard_cap=forced) == "truncate":
                return self._truncate(plan, turn_id, "no_valid_boundary")
            self._failed(turn_id, plan.floor, 0, "no_valid_boundary")
            return CompactionOutcome(status="failed", plan=plan, failure_mode="no_valid_boundary")
        span = plan.span
        if plan.action is None:
            # The strategy has nothing to do with this span (`mask`: no result long enough to
            # mask). Only the hard cap gets here (not reducible otherwise).
            detail = f"the {plan.strategy} strategy has nothing left to remove at the hard cap"
            if fallback(at_hard_cap=forced) == "truncate":
                return self._truncate(plan, turn_id, "validation_failed", detail=detail)
            self._failed(turn_id, plan.floor, 0, "validation_failed", error_message=detail)
            return CompactionOutcome(
                status="failed",
                plan=plan,
                failure_mode="validation_failed",
                error_message=redact(detail),
            )
        self._emit(
            CompactionStarted(
                self.session_id,
                turn_id,
                span.start,
                span.span_message_count,
                span.span_tokens,
                trigger,
            )
        )
        if decision.reason == "budget_exhausted_forced":
            # §3.1 step 2: the call runs anyway, and the overspend is reported.
            self._failed(
                turn_id,
                span.start,
                span.span_message_count,
                "budget_exhausted_forced",
                error_message=f"compaction budget spent (${self.spent_usd} of "
                f"${self.config.compaction_max_cost_per_session_usd}); compacting anyway "
                "at the hard cap",
            )
        try:
            if plan.action == "mask":
                return self._commit(plan, self._mask(span, trigger), turn_id)
            return await self._summarize_and_commit(plan, span, turn_id, trigger, None)
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
        if planned.action == "mask":
            # No call and nothing cached: a mask is computed from the span itself.
            return CompactionPreview(
                span=span,
                cache_key="",
                cache_hit=False,
                model=self.config.compaction_model,
                estimated_cost_usd=Decimal(0),
                spent_usd=self.spent_usd,
                budget_usd=self.config.compaction_max_cost_per_session_usd,
                instructions=instructions or None,
                strategy=planned.strategy,
                action=planned.action,
                expected_saved_tokens=planned.expected_saved_tokens,
            )
        key = self._cache_key(span, instructions)
        hit = self.cache is not None and self.cache.peek(key) is not None
        return CompactionPreview(
            span=span,
            cache_key=key,
            cache_hit=hit,
            model=self.config.compaction_model,
            estimated_cost_usd=Decimal(0)
            if hit
            else self.summarizer.estimate_cost(
                span.span_tokens, self.config.compaction_max_summary_tokens
            ),
            spent_usd=self.spent_usd,
            budget_usd=self.config.compaction_max_cost_per_session_usd,
            instructions=instructions or None,
            strategy=planned.strategy,
            action=planned.action,
            expected_saved_tokens=planned.expected_saved_tokens,
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
            return self._mask(planned.span, trigger)
        return await self._prepare(planned.span, instructions or None, trigger)

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
        self._emit(
            CompactionStarted(
                self.session_id,
                turn_id,
                span.start,
                span.span_message_count,
                span.span_tokens,
                prepared.trigger,
            )
        )
        try:
            return self._commit(self.plan(), prepared, turn_id)
        except SpanChanged:
            self.sync()  # the store refused: take the winner's history, not keep a stale one
            raise

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

    def _mask(self, span: SpanPlan, trigger: Trigger) -> PreparedCompaction:
        """engine.policy.strategies `mask`: the span's tool results as placeholders, no call."""
        replacement = tuple(masked_span(self.history, span.start, span.compaction_watermark))
        return PreparedCompaction(
            session_id=self.session_id,
            span=span,
            span_ids=tuple(
                m.id for m in self.history.messages[span.start : span.compaction_watermark]
            ),
            summary="",
            model=self.config.compaction_model,
            prompt_version=self.config.compaction_summary_prompt_version,
            cache_key="",
            cache_hit=False,
            tokens_in=span.span_tokens,
            tokens_out=0,
            cost_usd=Decimal(0),
            latency_ms=0,
            instructions=None,
            trigger=trigger,
            strategy=self.config.compaction_strategy,
            action="mask",
            replacement=replacement,
        )

    def _cache_key(self, span: SpanPlan, instructions: str | None) -> str:
        return compute_cache_key(
            self.history.messages[span.start : span.compaction_watermark],
            summarization_model=self.config.compaction_model,
            summarization_prompt_version=self.config.compaction_summary_prompt_version,
            summarization_max_tokens=self.config.compaction_max_summary_tokens,
            instructions=instructions,
            message_bytes=self.history.canonical_bytes(span.start, span.compaction_watermark),
            # A summarizer whose request differs from the plain one (trimmed tool outputs, the
            # session's cached prefix) may summarize differently: its variant is in the key.
            request_variant=getattr(self.summarizer, "request_variant", None),
        )

    async def _prepare(
        self, span: SpanPlan, instructions: str | None, trigger: Trigger
    ) -> PreparedCompaction:
        span_messages = tuple(self.history.messages[span.start : span.compaction_watermark])
        key = self._cache_key(span, instructions)
        cached = self._usable_hit(key, span) if self.cache is not None else None
        common = dict(
            session_id=self.session_id,
            span=span,
            span_ids=tuple(m.id for m in span_messages),
            prompt_version=self.config.compaction_summary_prompt_version,
            cache_key=key,
            instructions=instructions,
            trigger=trigger,
            strategy=self.config.compaction_strategy,
        )
        if cached is not None:
            # §5.3: a hit makes no call and costs nothing.
            return PreparedCompaction(
                summary=cached.summary_text,
                model=cached.summarization_model,
                cache_hit=True,
                tokens_in=cached.span_token_count_in,
                tokens_out=cached.span_token_count_out,
                cost_usd=Decimal(0),
                latency_ms=0,
                **common,  # type: ignore[arg-type]
            )
        request = SummaryRequest(
            span=span_messages,
            prompt_version=self.config.compaction_summary_prompt_version,
            max_tokens=self.config.compaction_max_summary_tokens,
            instructions=instructions,
            history=tuple(self.history.messages),
            span_start=span.start,
        )
        try:
            result = await self.summarizer.summarize(request)
        except SummarizerError as error:
            self._charge(error.billed_cost_usd)
            raise
        # A model may repeat a key or token pasted in the span: neither the cache file nor the
        # spliced summary keeps it (issue 6, secrets).
        summary = redact(result.text)
        # Cached before the spend is written: if the store refuses now, the retry pays nothing.
        if summary.strip() and self.cache is not None:
            self.cache.put(
                CacheRow(
                    cache_key=key,
                    summary_text=summary,
                    summarization_model=self.config.compaction_model,
                    summarization_prompt_version=self.config.compaction_summary_prompt_version,
                    span_message_count=span.span_message_count,
                    span_token_count_in=span.span_tokens,
                    span_token_count_out=result.tokens_out,
                )
            )
        self._charge(result.cost_usd)
        return PreparedCompaction(
            summary=summary,
            model=self.config.compaction_model,
            cache_hit=False,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            cost_usd=result.cost_usd,
            latency_ms=result.latency_ms,
            usage=result.usage,
            **common,  # type: ignore[arg-type]
        )

    def _usable_hit(self, key: str, span: SpanPlan) -> CacheRow | None:
        """A hit only if the row fits this span and its summary is a message within the summary
        budget (issue 17: a hand-edited 3 MB summary left a session ten times over its hard cap).
        Anything else is a miss, reported in `cache.rejected` and evicted."""
        assert self.cache is not None
        cached = self.cache.get(key)
        if cached is None:
            return None
        budget = self.config.compaction_max_summary_tokens
        problem = cache_row_problem(
            cached, span, budget, lambda text: self.history.counter(_probe(text))
        )
        if problem is None:
            return cached
        self.cache.rejected.append(f"compaction_cache row {key}: {problem}")
        self.cache.evict(key)
        return None

    async def _summarize_and_commit(
        self,
        plan: TurnPlan,
        span: SpanPlan,
        turn_id: str,
        trigger: Trigger,
        instructions: str | None,
    ) -> CompactionOutcome:
        try:
            prepared = await self._prepare(span, instructions, trigger)
        except SummarizerError as error:
            forced = plan.decision.action is TriggerAction.FORCED
            if fallback(at_hard_cap=forced) == "truncate":
                # _truncate emits the one failed event, with truncated_message_count.
                return self._truncate(plan, turn_id, "adapter_error", error)
            self._failed(
                turn_id,
                span.start,
                span.span_message_count,
                "adapter_error",
                error_class=error.error_class.value,
                error_message=str(error),
            )
            # Below the hard cap a failure only skips this turn; the next turn retries.
            return CompactionOutcome(
                status="failed",
                plan=plan,
                failure_mode="adapter_error",
                error_class=error.error_class.value,
                error_message=redact(str(error)),
            )
        return self._commit(plan, prepared, turn_id)

    def _commit(
        self, plan: TurnPlan, prepared: PreparedCompaction, turn_id: str
    ) -> CompactionOutcome:
        span = prepared.span
        message: Message | None = None
        if prepared.action == "mask":
            try:
                spliced, replacement = splice_masked(
                    self.history, span.start, span.compaction_watermark, prepared.replacement
                )
            except HistoryError as error:  # pragma: no cover - copies keep every pair and role
                return self._validation_failed(plan, turn_id, span, str(error), prepared)
        else:
            if not prepared.summary.strip():
                return self._validation_failed(
                    plan, turn_id, span, "the summary is empty", prepared
                )
            message = summary_message(
                model=prepared.model,
                watermark_before=span.start,
                watermark_after=span.compaction_watermark,
                summary=prepared.summary,
                cache_key=prepared.cache_key,
            )
            try:
                spliced, replacement = splice(
                    self.history, span.start, span.compaction_watermark, message
                )
            except HistoryError as error:
                return self._validation_failed(plan, turn_id, span, str(error), prepared)
        record = CompactionRecord(
            kind="mask" if prepared.action == "mask" else "summary",
            turn_id=turn_id,
            watermark_before=span.start,
            watermark_after=span.compaction_watermark,
            span_message_count=span.span_message_count,
            span_token_count_in=span.span_tokens,
            span_token_count_out=prepared.tokens_out
            if message is not None
            else sum(spliced.tokens[span.start : span.start + len(replacement)]),
            replacement_count=len(replacement),
            cache_key=prepared.cache_key or None,
            cache_hit=prepared.cache_hit,
            model=prepared.model,
            prompt_version=prepared.prompt_version,
            cost_usd=prepared.cost_usd,
            latency_ms=prepared.latency_ms,
            trigger=prepared.trigger,
            instructions=prepared.instructions,
            summary_message_id=(message or replacement[0]).id,
            created_at_ms=self._clock(),
            strategy=prepared.strategy,
            history_tokens_before=self.history.total_tokens,
            history_tokens_after=spliced.total_tokens,
            usage=prepared.usage,
        )
        self._persist_replacement(spliced, span.start, prepared.span_ids, replacement, record)
        self._emit(
            CompactionCompleted(
                self.session_id,
                turn_id,
                span.start,
                span.compaction_watermark,
                span.span_message_count,
                span.span_tokens,
                record.span_token_count_out,
                prepared.cache_hit,
                prepared.cache_key,
                prepared.cost_usd,
                prepared.latency_ms,
            )
        )
        return CompactionOutcome(
            status="compacted", plan=plan, record=record, summary_message=message
        )

    def _persist_replacement(
        self,
        spliced: History,
        start: int,
        span_ids: Sequence[str],
        replacement: Sequence[Message],
        record: CompactionRecord,
    ) -> None:
        """Store first, memory second: a SpanChanged leaves both as they were."""
        if self.persistence is not None:
            tokens = spliced.tokens[start : start + len(replacement)]
            # Compare-and-set on the revision planned on (issue 17): an undo made by another
            # process since then may leave the span's ids in place (a mask's copies) and would
            # otherwise be written over and never synced (the revision jumping past it).
            self.revision = self.persistence.commit_replacement(
                self.session_id, start, span_ids, replacement, tokens, record, self.spent_usd,
                expected_revision=self.revision,
            )  # fmt: skip
        self.history = spliced

    def _truncate(
        self,
        plan: TurnPlan,
        turn_id: str,
        cause: FailureMode,
        error: SummarizerError | None = None,
        detail: str | None = None,
    ) -> CompactionOutcome:
        """§3.4: drop the oldest non-preserved messages on a tool-cycle boundary until pending
        tokens are under the hard cap, and say how many went. Emits the turn's failed event."""
        history = self.history
        cut = plan_truncation(
            history,
            self.config.compaction_preserve_recent_turns,
            self.config.compaction_hard_cap_tokens,
            replacement_tokens=lambda start, end: truncation_cost(history, start, end),
        )
        error_class = error.error_class.value if error else None
        error_message = redact(str(error)) if error else (redact(detail) if detail else None)
        if cut is None:
            self._failed(
                turn_id,
                plan.floor,
                plan.span.span_message_count if plan.span else 0,
                cause,
                error_class=error_class,
                error_message=error_message,
            )
            return CompactionOutcome(
                status="failed",
                plan=plan,
                failure_mode=cause,
                error_class=error_class,
                error_message=error_message,
            )
        span_ids = tuple(m.id for m in self.history.messages[cut.start : cut.end])
        notice = truncation_notice(cut.dropped_message_count)
        try:
            spliced, replacement = splice(self.history, cut.start, cut.end, notice)
        except HistoryError:  # pragma: no cover - a boundary cut always bridges
            return CompactionOutcome(status="failed", plan=plan, failure_mode=cause)
        record = CompactionRecord(
            kind="truncation",
            turn_id=turn_id,
            watermark_before=cut.start,
            watermark_after=cut.end,
            span_message_count=cut.dropped_message_count,
            span_token_count_in=cut.dropped_tokens,
            span_token_count_out=0,
            replacement_count=len(replacement),
            trigger="hard_cap",
            summary_message_id=notice.id,
            created_at_ms=self._clock(),
        )
        self._persist_replacement(spliced, cut.start, span_ids, replacement, record)
        self._failed(
            turn_id,
            plan.floor,
            plan.span.span_message_count if plan.span else 0,
            cause,
            error_class=error_class,
            error_message=error_message,
            truncated_message_count=cut.dropped_message_count,
        )
        return CompactionOutcome(
            status="truncated",
            plan=plan,
            record=record,
            failure_mode=cause,
            error_class=error_class,
            error_message=error_message,
            truncated_message_count=cut.dropped_message_count,
        )

    def _validation_failed(
        self,
        plan: TurnPlan,
        turn_id: str,
        span: SpanPlan,
        detail: str,
        prepared: PreparedCompaction,
    ) -> CompactionOutcome:
        # §4.4: a result that would not validate is refused and the history stays as it was.
        # At the hard cap, keeping it there would force another (billed, budget-exempt) call
        # every turn: the fallback truncates.
        at_hard_cap = prepared.trigger == "hard_cap"
        if fallback(at_hard_cap=at_hard_cap) == "truncate":
            return self._truncate(plan, turn_id, "validation_failed", detail=detail)
        self._failed(
            turn_id, span.start, span.span_message_count, "validation_failed", error_message=detail
        )
        return CompactionOutcome(
            status="failed",
            plan=plan,
            failure_mode="validation_failed",
            error_message=redact(detail),
        )

    def _charge(self, cost: Decimal) -> None:
        """Compaction spend, kept apart from the session's primary spend (§4, §12.5)."""
        if cost:
            self.spent_usd += cost
            if self.persistence is not None:
                self.persistence.record_spend(self.session_id, self.spent_usd)

    def _failed(
        self,
        turn_id: str,
        watermark_before: int,
        span_message_count: int,
        failure_mode: FailureMode,
        *,
        error_class: str | None = None,
        error_message: str | None = None,
        truncated_message_count: int | None = None,
    ) -> None:
        self._emit(
            CompactionFailed(
                self.session_id,
                turn_id,
                watermark_before,
                span_message_count,
                failure_mode,
                error_class,
                redact(error_message) if error_message else None,
                truncated_message_count,
            )
        )

    def _emit(self, event: CompactionEvent) -> None:
        if self.persistence is not None:
            self.persistence.record_event(self.session_id, event)
        self.bus.emit(event)

    async def aclose(self) -> None:
        if self._summarizer is not None:
            await self._summarizer.aclose()
