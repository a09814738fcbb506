"""engine.policy.projection: where our trigger would have compacted a recorded session."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import CompactionConfig, History, Message, SessionManager
from engine.policy.projection import Projection, project_compactions
from metis_compaction_tui.demo.workload import scripted_session
from tests.history_builders import assistant, tool_call, tool_result, user

CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=3_000,
    compaction_hard_cap_tokens=9_000,
    compaction_preserve_recent_turns=4,
    compaction_max_summary_tokens=400,
)


def _recording(turns: int = 60) -> list[Message]:
    return [message for turn in scripted_session(3, turns) for message in turn]


def _with_tokens(messages: list[Message]) -> list[tuple[Message, int]]:
    history = History(messages)
    return list(zip(history.messages, history.tokens, strict=True))


def test_first_fire_is_the_turn_a_live_manager_compacts_at() -> None:
    recording = _recording()
    fires = project_compactions(_with_tokens(recording), CONFIG)
    assert fires, "the recording is long enough to cross the threshold"

    async def live_first_compaction() -> int:
        knobs = {name: getattr(CONFIG, name) for name in CONFIG.__struct_fields__}
        manager = SessionManager(**knobs)  # type: ignore[arg-type]
        for index, message in enumerate(recording):
            if message.opens_turn and manager.messages:
                outcome = await manager.before_turn()
                if outcome.status == "compacted":
                    return index
            manager.append(message)
        raise AssertionError("the live manager never compacted")

    import asyncio

    assert fires[0].before_index == asyncio.run(live_first_compaction())
    assert fires[0].span_start == 0


def test_fires_are_ordered_disjoint_and_cut_on_tool_cycle_boundaries() -> None:
    recording = _recording(120)
    fires = project_compactions(_with_tokens(recording), CONFIG)
    assert len(fires) >= 3
    previous_end = 0
    for fire in fires:
        assert previous_end <= fire.span_start < fire.span_end < fire.before_index
        assert not recording[fire.span_end - 1].tool_use_ids()  # §3.3: no split tool cycle
        assert recording[fire.before_index].opens_turn
        assert fire.pending_tokens >= CONFIG.compaction_threshold_tokens
        previous_end = fire.span_end
    # Every fire but the first starts where the previous span ended: summaries are the floor.
    assert [f.span_start for f in fires[1:]] == [f.span_end for f in fires[:-1]]


def test_no_fire_below_the_threshold() -> None:
    relaxed = CompactionConfig(compaction_threshold_tokens=10**8, compaction_hard_cap_tokens=10**9)
    assert project_compactions(_with_tokens(_recording()), relaxed) == []


def test_each_fire_takes_its_span_out_and_puts_a_capped_stand_in_back() -> None:
    recording = _with_tokens(_recording(120))
    projection = Projection(CONFIG)
    projection.feed(recording)
    raw_total = sum(tokens for _, tokens in recording)
    cap = CONFIG.compaction_max_summary_tokens
    removed = sum(f.span_tokens - min(cap, f.span_tokens) for f in projection.fires)
    assert projection.history.total_tokens == raw_total - removed
    assert len(projection.history) == len(recording) - sum(
        f.span_end - f.span_start - 1 for f in projection.fires
    )
    # v1 never re-compacts a summary, so on a long enough session the stand-ins alone pass the
    # hard cap and every later turn is forced: the projection shows that, as the engine would.
    assert projection.fires[-1].action == "forced"


def _grown(messages: list[Message], extra: int) -> Message:
    last = messages[-1]
    text = last.text() + " more" * extra
    return assistant(last.id, text) if last.role == "assistant" else user(last.id, text)


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(min_value=2, max_value=400), extra=st.integers(min_value=1, max_value=900))
def test_rewriting_the_newest_message_matches_projecting_from_scratch(cut: int, extra: int) -> None:
    recording = _recording(60)[:cut]
    projection = Projection(CONFIG)
    projection.feed(_with_tokens(recording))
    rewritten = [*recording[:-1], _grown(recording, extra)]
    tail = _with_tokens(rewritten)[-1:]
    if projection.rewrite(len(recording) - 1, tail):
        assert projection.fires == project_compactions(_with_tokens(rewritten), CONFIG)
        assert projection.count == len(rewritten)
    else:  # only a turn-opening newest message may refuse: a turn was decided on it
        assert recording[-1].opens_turn


def test_rewrite_refuses_what_a_turn_was_decided_on() -> None:
    messages = [user("u1"), tool_call("a1", "c1"), tool_result("r1", "c1"), assistant("a2")]
    messages += [user("u2"), assistant("a3")]
    projection = Projection(CONFIG)
    projection.feed(_with_tokens(messages))
    assert not projection.rewrite(4, _with_tokens([user("u2", "changed"), assistant("a3")]))
    assert projection.rewrite(5, _with_tokens([assistant("a3", "changed")]))


@pytest.mark.parametrize("strategy", ["mask", "hybrid", "recompact"])
def test_a_projection_follows_the_configured_strategy(strategy: str) -> None:
    messages = _recording(90)
    config = CompactionConfig(
        compaction_threshold_tokens=12_000,
        compaction_model="local:extractive",
        compaction_strategy=strategy,
    )
    projection = Projection(config)
    projection.feed(_with_tokens(messages))
    fires = projection.fires
    assert len(fires) >= 2
    for fire in fires:
        # Spans are in the recording's own indexes, inside it, before the turn that fired.
        assert 0 <= fire.span_start < fire.span_end <= fire.before_index <= len(messages)
    stand_ins = [m for m in projection.history.messages if m.id.startswith("projected-")]
    masked = [m for m in projection.history.messages if m.id.endswith("~masked")]
    if strategy == "recompact":
        assert len(stand_ins) == 1 and not masked  # each summary folds the one before
    if strategy == "mask":
        assert masked and not stand_ins
