"""Hypothesis properties of every compaction strategy (engine.policy.strategies), on a real store.

Like test_properties.py: a random valid conversation with tool cycles (here with some long tool
results, so masking has work to do) is fed to a SessionManager a few messages per turn, with random
knobs and one of the four strategies. After every turn §3's invariants must hold; each compaction's
originals must be archived exactly; and at the end, undoing every compaction (latest first) must
give back the whole conversation as it was appended.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import msgspec
from hypothesis import event, given
from hypothesis import strategies as st

from engine.config import COMPACTION_STRATEGIES, CompactionConfig
from engine.history import History, text_message
from engine.ledger import ledger_reserve
from engine.manager import SessionManager
from engine.messages import Message, Role, ToolResultContentBlock, validate_history
from engine.outcomes import CompactionOutcome
from engine.policy.span import is_tool_cycle_boundary
from engine.policy.splice import summary_text
from engine.policy.strategies import (
    MASKED_PREFIX,
    is_masked,
    is_summary_message,
    plan_strategy,
)
from engine.policy.summary_budget import SummaryCallPrice, summary_budget
from engine.store import SessionStore, UndoRefused
from engine.summarizers import ExtractiveSummarizer, SummaryRequest, SummaryResult
from tests.engine.test_properties import (
    PROPERTY_SETTINGS,
    Ledger,
    SessionPlay,
    Shape,
    build_summarizer,
    conversation_shapes,
    initial_and_prefix_end,
    materialize,
    play_turns,
    session_plays,
)
from tests.history_builders import LOCAL, ids


def lengthen(shapes: list[Shape], factors: Sequence[int]) -> list[Shape]:
    """The same conversation with tool results repeated `factor` times (cycling the factors)."""
    out: list[Shape] = []
    position = 0
    for role, blocks in shapes:
        new_blocks = []
        for block in blocks:
            if isinstance(block, ToolResultContentBlock):
                factor = factors[position % len(factors)]
                position += 1
                block = msgspec.structs.replace(block, content=block.content * factor)
            new_blocks.append(block)
        out.append((role, tuple(new_blocks)))
    return out


class StrategyLedger(Ledger):
    """`Ledger`'s invariants for any strategy, plus the store: archives and undo."""

    def __init__(
        self, manager: SessionManager, prefix: Sequence[Message], store: SessionStore
    ) -> None:
        super().__init__(manager, prefix)
        self.store = store
        self.compactions = 0

    def check(self, before: list[Message], outcome: CompactionOutcome | None) -> None:
        self.check_invariants(before)
        self.check_outcome(before, outcome)
        store = self.store
        manager = self.manager
        after = manager.messages
        strategy = manager.config.compaction_strategy
        spe = manager.history.stable_prefix_end
        # The store holds exactly the manager's history.
        assert ids(store.snapshot(manager.session_id).messages) == ids(after)

        if outcome is None:
            return
        event(f"{strategy}: {outcome.status} {outcome.record.kind if outcome.record else ''}")
        if outcome.status not in ("compacted", "truncated"):
            return
        record = outcome.record
        assert record is not None
        self.compactions += 1
        span = before[record.watermark_before : record.watermark_after]
        assert span and record.watermark_before >= spe
        assert is_tool_cycle_boundary(History(before), record.watermark_after)
        if outcome.status == "truncated":
            return
        assert record.strategy == strategy
        assert record.history_tokens_before == sum(manager.history.counter(m) for m in before)
        assert record.history_tokens_after == manager.history.total_tokens
        # Originals archived exactly, in order.
        stored = store.compactions(manager.session_id)[-1]
        assert [m.message.id for m in store.archived_messages(stored.compaction_id)] == ids(span)
        replaced = after[
            record.watermark_before : record.watermark_before + record.replacement_count
        ]
        if record.kind == "mask":
            assert strategy in ("mask", "hybrid")
            assert record.cost_usd == 0 and record.cache_key is None
            # One copy per original, same roles and tool ids; only tool results change, and
            # each changed one is a placeholder shorter than what it stands for.
            assert len(replaced) == len(span)
            assert not any(m.synthetic for m in span)
            for original, copy in zip(span, replaced, strict=True):
                assert copy.synthetic and copy.role is original.role
                assert copy.tool_use_ids() == original.tool_use_ids()
                assert copy.tool_result_ids() == original.tool_result_ids()
                for old, new in zip(original.content, copy.content, strict=True):
                    if old != new:
                        assert isinstance(old, ToolResultContentBlock)
                        assert isinstance(new, ToolResultContentBlock)
                        assert new.content.startswith(MASKED_PREFIX)
                        assert len(new.content) < len(old.content)
            assert record.history_tokens_after < record.history_tokens_before
            return
        assert record.kind == "summary"
        summaries = [m for m in replaced if m.role is Role.USER]
        assert len(summaries) == 1 and summaries[0].synthetic
        if strategy == "summarize":
            # v1: a summary is never inside a later span.
            assert not any(m.synthetic for m in span)
        else:
            # §12.4: the span folds in everything since the prefix, earlier summaries included,
            # so at most one summary is ever in the history.
            assert record.watermark_before == spe
            assert sum(is_summary(m) for m in after) == 1

    def undo_all(self, store: SessionStore) -> None:
        """Undo every compaction still in effect, latest first: the whole conversation is back."""
        session_id = self.manager.session_id
        undone = 0
        while True:
            try:
                store.undo_latest_compaction(session_id)
            except UndoRefused:
                break
            undone += 1
        assert undone == self.compactions
        restored = store.snapshot(session_id).messages
        assert ids(restored) == [*self.prefix_ids, *self.originals]
        validate_history(restored)


def is_summary(message: Message) -> bool:
    text = message.content[0]
    return message.synthetic and getattr(text, "text", "").startswith("<COMPACTION_SUMMARY")


class PricedExtractive:
    """local:extractive priced like a paid model (engine.policy.summary_budget then picks each
    call's max_tokens): records each request's max_tokens beside what the rule gives for it."""

    name = LOCAL

    def __init__(self, ceiling: int) -> None:
        self.inner = ExtractiveSummarizer()
        self.ceiling = ceiling
        # (max_tokens sent, the rule's budget less the work ledger's reserve: engine.ledger)
        self.seen: list[tuple[int, int]] = []

    def call_price(self, request: SummaryRequest) -> SummaryCallPrice:
        return SummaryCallPrice(
            input_usd=Decimal("0.000001") * sum(History().counter(m) for m in request.span),
            output_per_token=Decimal("0.000005"),
            cache_write_per_token=Decimal("0.00000125"),
            cache_read_per_token=Decimal("0.0000001"),
        )

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        span = sum(History().counter(m) for m in request.span)
        kept = sum(History().counter(m) for m in request.history) - span
        # A fold (§12.4) brings the earlier summary's room, up to one more ceiling.
        carried = sum(History().counter(m) for m in request.span if is_summary_message(m))
        ceiling = self.ceiling + min(carried, self.ceiling)
        rule = summary_budget(
            span, kept, self.call_price(request), ceiling=ceiling, payback_turns=3
        )

        def count(text: str) -> int:
            wrapped = summary_text(LOCAL, request.span_start, text)
            return History().counter(text_message("probe", Role.USER, wrapped, synthetic=True))

        self.seen.append((request.max_tokens, rule - ledger_reserve(request.span, rule, count)))
        return await self.inner.summarize(request)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return Decimal("0.000001") * tokens_in + Decimal("0.000005") * max_tokens

    async def aclose(self) -> None:
        return None


def run_strategy_session(
    strategy: str,
    play: SessionPlay,
    summarizer: object | None = None,
    max_summary_tokens: int = 200,
) -> None:
    messages = materialize(play.shapes)
    initial, spe = initial_and_prefix_end(messages, play.initial, play.prefix_choice)
    config = CompactionConfig(
        compaction_threshold_tokens=play.threshold,
        compaction_hard_cap_tokens=play.threshold + play.cap_gap,
        compaction_preserve_recent_turns=play.preserve,
        compaction_model=LOCAL,
        compaction_strategy=strategy,
        compaction_max_summary_tokens=max_summary_tokens,
        # The budget check must not stop the priced runs before they compact.
        compaction_max_cost_per_session_usd=Decimal(1000),
    )
    with tempfile.TemporaryDirectory(prefix="strategy-props-") as scratch:
        store = SessionStore.open(Path(scratch), create=True)
        try:
            store.create_session("s", config=config, stable_prefix_end=spe)
            for message in messages[:initial]:
                store.append_message("s", message, History().counter(message))
            chosen = summarizer or build_summarizer(play.summarizer_kind)
            manager = store.manager("s", summarizer=chosen)
            ledger = StrategyLedger(manager, messages[:spe], store)
            ledger.add(messages[spe:initial])
            asyncio.run(play_turns(manager, ledger, messages, play))
            ledger.undo_all(store)
        finally:
            store.close()


@PROPERTY_SETTINGS
@given(
    strategy=st.sampled_from(COMPACTION_STRATEGIES),
    play=session_plays(max_threshold=600, max_cap_gap=900),
    factors=st.lists(st.integers(1, 8), min_size=1, max_size=4),
)
def test_every_strategy_keeps_every_invariant_archives_its_span_and_undoes(
    strategy: str, play: SessionPlay, factors: list[int]
) -> None:
    # Longer tool results give masking something to do.
    play = dataclasses.replace(play, shapes=lengthen(play.shapes, factors))
    run_strategy_session(strategy, play)


@PROPERTY_SETTINGS
@given(
    strategy=st.sampled_from(COMPACTION_STRATEGIES),
    play=session_plays(max_threshold=600, max_cap_gap=900),
    factors=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    ceiling=st.sampled_from([120, 600, 2_000]),
)
def test_every_strategy_with_a_priced_summarizer_sends_the_rules_budget_and_keeps_invariants(
    strategy: str, play: SessionPlay, factors: list[int], ceiling: int
) -> None:
    play = dataclasses.replace(play, shapes=lengthen(play.shapes, factors))
    priced = PricedExtractive(ceiling)
    run_strategy_session(strategy, play, priced, max_summary_tokens=ceiling)
    for sent, rule in priced.seen:
        assert sent == rule <= 2 * ceiling


@PROPERTY_SETTINGS
@given(
    shapes=conversation_shapes(),
    factors=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    preserve=st.integers(1, 6),
    threshold=st.integers(20, 600),
)
def test_a_planned_mask_removes_what_it_promises_and_never_touches_a_short_result(
    shapes: list[Shape], factors: list[int], preserve: int, threshold: int
) -> None:
    from engine.policy.strategies import masked_span

    messages = materialize(lengthen(shapes, factors))
    history = History(messages)
    planned = plan_strategy(history, "mask", preserve, threshold, 200)
    if planned is None:
        return
    span = planned.span
    copies = masked_span(history, span.start, span.compaction_watermark)
    saved = history.range_tokens(span.start, span.compaction_watermark) - sum(
        history.counter(m) for m in copies
    )
    masked_blocks = sum(
        isinstance(b, ToolResultContentBlock) and is_masked(b.content)
        for m in copies
        for b in m.content
    )
    # The plan estimates per block, the history counts per message: they differ by rounding only.
    assert planned.expected_saved_tokens > 0 and masked_blocks > 0
    assert abs(saved - planned.expected_saved_tokens) <= 2 * masked_blocks
    # Masking is idempotent: a copy masked again is the same content.
    again = masked_span(History(copies), 0, len(copies))
    assert [m.content for m in again] == [m.content for m in copies]
    for copy in copies:
        for block in copy.content:
            if isinstance(block, ToolResultContentBlock) and not is_masked(block.content):
                assert History().counter(Message("x", Role.USER, (block,))) < 100
