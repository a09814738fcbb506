"""Hypothesis properties over random valid histories with tool cycles.

Each example builds a random conversation (alternating user/assistant messages; some assistant
messages call tools, answered in the next user message; maybe a call still running at the end),
feeds it to a SessionManager a few messages per turn with random knobs, and checks after every
turn that compaction and truncation keep the invariants of §3-§4.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import msgspec
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.cache_key import compute_cache_key
from engine.history import History
from engine.manager import SessionManager
from engine.messages import (
    ContentBlock,
    Message,
    MessageMetadata,
    Role,
    TextContentBlock,
    ToolResultContentBlock,
    ToolUseContentBlock,
    validate_history,
)
from engine.outcomes import CompactionOutcome
from engine.policy.span import (
    is_tool_cycle_boundary,
    pending_history_tokens,
    plan_span,
    plan_truncation,
)
from engine.summarizers.base import ErrorClass, SummarizerError, SummaryRequest, SummaryResult
from engine.summarizers.extractive import ExtractiveSummarizer
from tests.history_builders import LOCAL, FailingSummarizer, ids

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SENTENCES = (
    "We decided to keep SQLite for the store. ",
    "The test in tests/test_app.py failed with an AssertionError. ",
    "Remember the port is set to 8080. ",
    "Edit src/app.py and run the tests again. ",
    "ok ",
    "Let's go with the smaller schema instead of the wide one. ",
)

Shape = tuple[Role, tuple[ContentBlock, ...]]


# --- strategies ----------------------------------------------------------------------------------


@st.composite
def texts(draw: st.DrawFn, max_repeats: int = 12) -> str:
    sentence = draw(st.sampled_from(SENTENCES))
    return sentence * draw(st.integers(1, max_repeats))


@st.composite
def conversation_shapes(draw: st.DrawFn, max_exchanges: int = 14) -> list[Shape]:
    """Roles and content blocks of a valid conversation: ids are added by `materialize`."""
    call_ids = itertools.count()
    exchanges = draw(st.integers(1, max_exchanges))
    shapes: list[Shape] = [(Role.USER, (TextContentBlock(draw(texts())),))]
    for exchange in range(exchanges):
        calls = tuple(
            ToolUseContentBlock(
                id=f"call-{next(call_ids)}",
                name=draw(st.sampled_from(["bash", "edit", "read"])),
                input={"cmd": draw(st.sampled_from(["ls", "pytest -q", "cat src/app.py"]))},
            )
            for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3])))
        )
        shapes.append((Role.ASSISTANT, (TextContentBlock(draw(texts())), *calls)))
        last = exchange == exchanges - 1
        if last and (not calls or draw(st.booleans())):
            break  # ends on the assistant: a plain answer, or a call still running
        if calls:
            answers: list[ContentBlock] = [
                ToolResultContentBlock(tool_use_id=c.id, content=draw(texts(6)))
                for c in draw(st.permutations(calls))
            ]
            if draw(st.booleans()):
                answers.append(TextContentBlock(draw(texts(3))))
            shapes.append((Role.USER, tuple(answers)))
        else:
            shapes.append((Role.USER, (TextContentBlock(draw(texts())),)))
    return shapes


def materialize(
    shapes: Sequence[Shape], prefix: str = "m", stamp: int | None = None
) -> list[Message]:
    """Messages with ids `prefix0, prefix1, ...` and, when `stamp` is given, metadata stamps."""
    metadata = (
        MessageMetadata()
        if stamp is None
        else MessageMetadata(created_at_ms=stamp, input_tokens=stamp % 97, cost_usd=f"0.{stamp}")
    )
    return [
        Message(id=f"{prefix}{i}", role=role, content=content, metadata=metadata)
        for i, (role, content) in enumerate(shapes)
    ]


def boundaries(messages: Sequence[Message]) -> list[int]:
    history = History(messages)
    return [i for i in range(len(messages) + 1) if is_tool_cycle_boundary(history, i)]


def initial_and_prefix_end(
    messages: Sequence[Message], initial: int, prefix_choice: int
) -> tuple[int, int]:
    """How many messages the session starts with, and a stable prefix end among its first cuts."""
    initial = min(initial, len(messages))
    candidates = [b for b in boundaries(messages[:initial]) if b <= min(initial, 3)]
    return initial, candidates[prefix_choice % len(candidates)]


async def play_turn(manager: SessionManager, turn: int, manual: bool) -> CompactionOutcome | None:
    """One turn: by hand (prepare then commit, None when the summarizer fails) or automatic."""
    if manual and manager.preview() is not None:
        try:
            prepared = await manager.prepare()
        except SummarizerError:
            return None
        return manager.commit(prepared)
    return await manager.before_turn(f"turn-{turn}")


# --- summarizers ---------------------------------------------------------------------------------


class FlakySummarizer:
    """Extractive, except that the calls whose flag is True fail (flags repeat)."""

    name = LOCAL

    def __init__(self, flags: Sequence[bool]) -> None:
        self.flags = itertools.cycle(flags or [False])
        self.inner = ExtractiveSummarizer()

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        if next(self.flags):
            raise SummarizerError(ErrorClass.OVERLOADED, "HTTP 529 overloaded_error")
        return await self.inner.summarize(request)

    def estimate_cost(self, tokens_in: int, max_tokens: int) -> Decimal:
        return Decimal(0)

    async def aclose(self) -> None:
        return None


summarizers = st.one_of(
    st.just("extractive"),
    st.just("failing"),
    st.lists(st.booleans(), min_size=1, max_size=4),
)


def build_summarizer(kind: str | list[bool]) -> object:
    if kind == "extractive":
        return ExtractiveSummarizer()
    if kind == "failing":
        return FailingSummarizer(ErrorClass.NETWORK)
    assert isinstance(kind, list)
    return FlakySummarizer(kind)


# --- the invariant checker -----------------------------------------------------------------------


class Ledger:
    """What the test appended, and what must hold of the manager's history after each turn."""

    def __init__(self, manager: SessionManager, prefix: Sequence[Message]) -> None:
        self.manager = manager
        self.prefix_ids = ids(prefix)
        self.originals: list[str] = []  # appended (non-prefix) message ids, in order
        # tool_use ids whose result has been appended (or sits in the stable prefix)
        self.answered: set[str] = {r for m in prefix for r in m.tool_result_ids()}
        self.consumed = 0  # how many originals are compacted or dropped: the logical watermark
        self.summary_ids: set[str] = set()

    def add(self, messages: Sequence[Message]) -> None:
        for message in messages:
            self.originals.append(message.id)
            self.answered.update(message.tool_result_ids())

    def check_invariants(self, before: list[Message]) -> None:
        """§3's invariants, whatever the strategy: what every turn must leave true."""
        manager = self.manager
        after = manager.messages
        preserve = manager.config.compaction_preserve_recent_turns
        spe = manager.history.stable_prefix_end

        # Validation holds after every compaction and truncation.
        validate_history(after)

        # The stable prefix and the preserved tail are untouched: same messages, same order.
        assert ids(after[:spe]) == self.prefix_ids
        assert ids(after[-preserve:]) == ids(before[-preserve:])

        # A call still running at the end is never compacted or truncated.
        if before and before[-1].tool_use_ids():
            assert after[-1] == before[-1]

        # The watermark never moves back: what is gone is always the oldest originals, so what
        # is left is a suffix of them, in order, and the gone part only grows.
        original_set = set(self.originals)
        present = [m.id for m in after if m.id in original_set]
        gone = len(self.originals) - len(present)
        assert present == self.originals[gone:]
        assert gone >= self.consumed
        self.consumed = gone
        # Below the floor (past the prefix) there are only summaries, fillers and notices.
        assert all(m.synthetic for m in after[spe : manager.history.floor])
        assert manager.history.floor >= spe

        # No tool pair is split: a call and its (appended) result are both here or both gone.
        calls = {c for m in after for c in m.tool_use_ids()}
        results = {r for m in after for r in m.tool_result_ids()}
        assert results <= calls
        assert {c for c in calls if c in self.answered} == results

        # The token ledger still matches the messages.
        assert manager.history.tokens == [manager.history.counter(m) for m in after]
        assert manager.history.total_tokens == sum(manager.history.tokens)

    def check_outcome(self, before: list[Message], outcome: CompactionOutcome | None) -> None:
        """What any turn's outcome promises: a skip changes nothing, a cut gets under the cap."""
        manager = self.manager
        if outcome is not None and outcome.status == "skipped":
            assert ids(manager.messages) == ids(before)
        if outcome is not None and outcome.status == "truncated":
            assert pending_history_tokens(
                manager.history, manager.config.compaction_preserve_recent_turns
            ) < (manager.config.compaction_hard_cap_tokens)

    def check(self, before: list[Message], outcome: CompactionOutcome | None) -> None:
        self.check_invariants(before)
        self.check_outcome(before, outcome)
        if outcome is None:
            return
        event(f"turn: {outcome.status} {outcome.failure_mode or ''}".strip())
        if outcome.status == "compacted":
            record = outcome.record
            assert record is not None
            span = before[record.watermark_before : record.watermark_after]
            # Summaries are never inside a later span (v1: never re-compacted).
            assert not any(m.synthetic for m in span)
            assert not any(m.id in self.summary_ids for m in span)
            assert span, "a compaction always replaces at least one message"
            assert is_tool_cycle_boundary(History(before), record.watermark_after)
            assert outcome.summary_message is not None
            self.summary_ids.add(outcome.summary_message.id)
        if outcome.status == "truncated":
            assert outcome.truncated_message_count > 0


@dataclass(frozen=True)
class SessionPlay:
    """A drawn session: the conversation, the knobs, and how it is fed to the manager."""

    shapes: list[Shape]
    chunks: list[int]  # messages appended before each turn after the first
    initial: int  # messages already in the history at the start
    prefix_choice: int
    threshold: int
    cap_gap: int
    preserve: int
    summarizer_kind: str | list[bool]
    manual_turns: list[bool]  # cycled: True = prepare + commit by hand, when a span is planned


@st.composite
def session_plays(draw: st.DrawFn, max_threshold: int = 400, max_cap_gap: int = 800) -> SessionPlay:
    return SessionPlay(
        shapes=draw(conversation_shapes()),
        chunks=draw(st.lists(st.integers(1, 6), min_size=1, max_size=6)),
        initial=draw(st.integers(0, 20)),
        prefix_choice=draw(st.integers(0, 3)),
        threshold=draw(st.integers(20, max_threshold)),
        cap_gap=draw(st.integers(1, max_cap_gap)),
        preserve=draw(st.integers(1, 6)),
        summarizer_kind=draw(summarizers),
        manual_turns=draw(st.lists(st.booleans(), min_size=1, max_size=3)),
    )


async def play_turns(
    manager: SessionManager, ledger: Ledger, messages: list[Message], play: SessionPlay
) -> None:
    """Append each chunk, run a turn, and let the ledger check what the turn left."""
    position = min(play.initial, len(messages))
    for turn, size in enumerate([0, *play.chunks]):
        batch = messages[position : position + size]
        position += len(batch)
        for message in batch:
            manager.append(message)
        ledger.add(batch)
        before = list(manager.messages)
        outcome = await play_turn(manager, turn, play.manual_turns[turn % len(play.manual_turns)])
        ledger.check(before, outcome)


def run_session(play: SessionPlay) -> None:
    messages = materialize(play.shapes)
    initial, spe = initial_and_prefix_end(messages, play.initial, play.prefix_choice)
    manager = SessionManager(
        history=messages[:initial],
        stable_prefix_end=spe,
        compaction_threshold_tokens=play.threshold,
        compaction_hard_cap_tokens=play.threshold + play.cap_gap,
        compaction_preserve_recent_turns=play.preserve,
        compaction_model=LOCAL,
        summarizer=build_summarizer(play.summarizer_kind),  # type: ignore[arg-type]
    )
    ledger = Ledger(manager, messages[:spe])
    ledger.add(messages[spe:initial])
    asyncio.run(play_turns(manager, ledger, messages, play))


@PROPERTY_SETTINGS
@given(play=session_plays())
def test_turn_after_turn_compaction_and_truncation_keep_every_invariant(play: SessionPlay) -> None:
    run_session(play)


@PROPERTY_SETTINGS
@given(
    shapes=conversation_shapes(),
    chunks=st.lists(st.integers(1, 4), min_size=2, max_size=6),
    threshold=st.integers(20, 200),
    cap_gap=st.integers(1, 300),
    preserve=st.integers(1, 4),
)
def test_an_always_failing_summarizer_still_keeps_pending_under_the_cap(
    shapes: list[Shape], chunks: list[int], threshold: int, cap_gap: int, preserve: int
) -> None:
    # Every forced turn truncates (or finds nothing it can cut): the invariants hold throughout.
    run_session(SessionPlay(shapes, chunks, 1, 0, threshold, cap_gap, preserve, "failing", [False]))


# --- the pure planners over random histories ------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    shapes=conversation_shapes(),
    preserve=st.integers(1, 8),
    cap=st.integers(0, 2_000),
    data=st.data(),
)
def test_planned_spans_and_cuts_respect_boundaries_the_tail_and_the_cap(
    shapes: list[Shape], preserve: int, cap: int, data: st.DataObject
) -> None:
    messages = materialize(shapes)
    spe = data.draw(st.sampled_from([b for b in boundaries(messages) if b <= 3]))
    history = History(messages, stable_prefix_end=spe)
    limit = max(spe, len(messages) - preserve)

    span = plan_span(history, preserve)
    if span is not None:
        assert (
            spe <= history.floor == span.start < span.compaction_watermark <= span.nominal_watermark
        )
        assert span.compaction_watermark <= limit
        assert is_tool_cycle_boundary(history, span.compaction_watermark)
        assert span.span_tokens == sum(history.tokens[span.start : span.compaction_watermark])
        assert not any(m.synthetic for m in messages[span.start : span.compaction_watermark])
        # it slid back no further than the nearest boundary
        for index in range(span.compaction_watermark + 1, span.nominal_watermark + 1):
            assert not is_tool_cycle_boundary(history, index)

    cut = plan_truncation(history, preserve, cap)
    pending = pending_history_tokens(history, preserve)
    if cut is not None:
        assert cut.start == spe < cut.end <= limit
        assert is_tool_cycle_boundary(history, cut.end)
        assert cut.pending_after == pending - cut.dropped_tokens < cap
        # the fewest messages: no shorter boundary cut gets under the cap
        for end in range(spe + 1, cut.end):
            if is_tool_cycle_boundary(history, end):
                assert pending - history.range_tokens(spe, end) >= cap
    else:
        assert all(
            pending - history.range_tokens(spe, end) >= cap
            for end in range(spe + 1, limit + 1)
            if is_tool_cycle_boundary(history, end)
        )


# --- the cache key --------------------------------------------------------------------------------

KEY_KNOBS = {
    "summarization_model": LOCAL,
    "summarization_prompt_version": "1.0.0",
    "summarization_max_tokens": 2_000,
}


@PROPERTY_SETTINGS
@given(
    shapes=conversation_shapes(),
    prefixes=st.tuples(st.text("abcxyz-", min_size=1, max_size=5), st.text("0123", max_size=4)),
    stamps=st.tuples(st.none() | st.integers(1, 10**9), st.none() | st.integers(1, 10**9)),
    preserve=st.integers(1, 4),
)
def test_equal_content_gives_equal_keys_whatever_the_ids_and_metadata(
    shapes: list[Shape],
    prefixes: tuple[str, str],
    stamps: tuple[int | None, int | None],
    preserve: int,
) -> None:
    first = materialize(shapes, prefixes[0], stamps[0])
    second = materialize(shapes, prefixes[1] + "-other", stamps[1])
    assert compute_cache_key(first, **KEY_KNOBS) == compute_cache_key(second, **KEY_KNOBS)

    def preview_key(messages: list[Message]) -> str | None:
        manager = SessionManager(
            history=messages,
            compaction_threshold_tokens=10,
            compaction_hard_cap_tokens=20,
            compaction_preserve_recent_turns=preserve,
            compaction_model=LOCAL,
        )
        preview = manager.preview()
        return preview.cache_key if preview is not None else None

    assert preview_key(first) == preview_key(second)


@PROPERTY_SETTINGS
@given(shapes=conversation_shapes(), data=st.data())
def test_metadata_only_changes_keep_the_key_and_content_changes_change_it(
    shapes: list[Shape], data: st.DataObject
) -> None:
    messages = materialize(shapes)
    index = data.draw(st.integers(0, len(messages) - 1))
    target = messages[index]
    key = compute_cache_key(messages, **KEY_KNOBS)

    restamped = msgspec.structs.replace(
        target,
        id=target.id + "-renamed",
        metadata=MessageMetadata(
            created_at_ms=data.draw(st.integers(0, 10**12)),
            input_tokens=data.draw(st.integers(0, 10**6)),
            output_tokens=data.draw(st.integers(0, 10**6)),
            cost_usd=str(data.draw(st.decimals(0, 10, places=6))),
        ),
    )
    same = [*messages[:index], restamped, *messages[index + 1 :]]
    assert compute_cache_key(same, **KEY_KNOBS) == key

    edited = msgspec.structs.replace(target, content=(edit(target.content[0]), *target.content[1:]))
    changed = [*messages[:index], edited, *messages[index + 1 :]]
    assert compute_cache_key(changed, **KEY_KNOBS) != key


def edit(block: ContentBlock) -> ContentBlock:
    """The same block with one character of content changed."""
    if isinstance(block, TextContentBlock):
        return TextContentBlock(block.text + "!")
    if isinstance(block, ToolResultContentBlock):
        return msgspec.structs.replace(block, content=block.content + "!")
    return msgspec.structs.replace(block, input={**block.input, "extra": 1})
