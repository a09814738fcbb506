"""engine.policy.projection: where our trigger would have compacted a recorded session."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import CompactionConfig, History, Message, SessionManager
from engine.policy.projection import Projection, ProjectionState, project_compactions
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
    # As engine.policy.splice does, a stand-in between two user messages gets assistant fillers.
    history = projection.history
    fillers = [i for i, m in enumerate(history.messages) if m.synthetic and m.role == "assistant"]
    assert fillers, "some span ends before a user message"
    filler_tokens = sum(history.tokens[i] for i in fillers)
    assert history.total_tokens == raw_total - removed + filler_tokens
    assert len(history) == len(recording) - sum(
        f.span_end - f.span_start - 1 for f in projection.fires
    ) + len(fillers)
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


# The extractive summary fills a budget this small exactly (its header cut to fit, §4.2 wrapper
# included), so the engine's summaries are the size the projection assumes for its stand-ins.
PILE_UP = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=1_500,
    compaction_hard_cap_tokens=3_000,
    compaction_preserve_recent_turns=4,
    compaction_max_summary_tokens=40,
)


def _live(recording: list[Message], config: CompactionConfig) -> tuple[dict[int, str], History]:
    """A real SessionManager fed the recording, asked before every turn as metis dev asks it:
    {recording index of the turn: outcome status} for every turn that was not a skip."""

    async def run() -> tuple[dict[int, str], History]:
        knobs = {name: getattr(config, name) for name in config.__struct_fields__}
        manager = SessionManager(**knobs)  # type: ignore[arg-type]
        outcomes: dict[int, str] = {}
        for index, message in enumerate(recording):
            if message.opens_turn and manager.messages:
                outcome = await manager.before_turn()
                if outcome.status != "skipped":
                    outcomes[index] = outcome.status
                    if outcome.summary_message is not None:  # the premise of the comparison
                        summary = outcome.summary_message
                        position = manager.history.messages.index(summary)
                        assert (
                            manager.history.tokens[position] == config.compaction_max_summary_tokens
                        )
            manager.append(message)
        await manager.aclose()
        return outcomes, manager.history

    import asyncio

    return asyncio.run(run())


def test_as_summaries_pile_up_past_the_hard_cap_the_engine_compacts_every_turn_as_projected() -> (
    None
):
    recording = _recording(200)
    live, history = _live(recording, PILE_UP)
    projection = Projection(PILE_UP)
    projection.feed(_with_tokens(recording))
    # Where each fired, and what it did: the same turns, all summaries (no truncation: every
    # forced span has a tool-cycle boundary, so the engine's summary commits, §3.1 step 2).
    assert {f.before_index: f.kind for f in projection.fires} == dict.fromkeys(live, "summary")
    assert set(live.values()) == {"compacted"}
    assert projection.history.total_tokens == history.total_tokens
    # From the turn the summaries alone pass the hard cap, every turn is forced, in both.
    forced = projection.every_turn_forced()
    assert forced is not None
    turn_starts = [i for i, m in enumerate(recording) if m.opens_turn and i >= forced.before_index]
    assert turn_starts and all(index in live for index in turn_starts)
    assert forced.fires == len(turn_starts)
    assert forced.kept_tokens >= PILE_UP.compaction_hard_cap_tokens
    before = [i for i, m in enumerate(recording) if m.opens_turn and 0 < i < forced.before_index]
    assert not all(index in live for index in before), "it began when the stand-ins passed the cap"
    text = forced.explain()
    assert text.startswith(
        f"from turn {forced.turn:,} (message {forced.before_index:,}) every turn is forced: "
    )
    assert f"({forced.kept_tokens:,} tokens) are over the hard cap (3,000)" in text
    assert "§3.2" in text and "recompact" in text


def test_at_the_hard_cap_with_nothing_left_to_mask_both_truncate() -> None:
    """`mask` keeps its copies below the floor; once they pass the hard cap, a turn whose span
    has no result long enough to mask truncates (§3.4), earlier copies first, in the engine and
    in the projection alike."""
    config = msgspec.structs.replace(PILE_UP, compaction_strategy="mask")
    recording = _recording(200)
    live, history = _live(recording, config)
    projection = Projection(config)
    projection.feed(_with_tokens(recording))
    kinds = {f.before_index: f.kind for f in projection.fires}
    status = {"mask": "compacted", "truncation": "truncated"}
    assert {index: status[kind] for index, kind in kinds.items()} == live
    assert "truncated" in live.values() and "compacted" in live.values()
    assert projection.history.total_tokens == history.total_tokens
    for fire in projection.fires:
        if fire.kind == "truncation":  # the oldest go first: from the start of the recording
            assert fire.span_start == 0 < fire.span_end <= fire.before_index
            assert fire.action == "forced"


def test_a_folding_strategy_never_piles_up() -> None:
    config = msgspec.structs.replace(PILE_UP, compaction_strategy="recompact")
    projection = Projection(config)
    projection.feed(_with_tokens(_recording(200)))
    assert projection.fires and projection.every_turn_forced() is None
    assert projection.kept_tokens() == 0


@pytest.mark.parametrize("strategy", ["summarize", "mask"])
def test_a_projection_saved_and_restored_goes_on_as_one_never_stopped(strategy: str) -> None:
    config = msgspec.structs.replace(PILE_UP, compaction_strategy=strategy)
    recording = _with_tokens(_recording(200))
    whole = Projection(config)
    whole.feed(recording)
    for cut in (150, 600, 1000):
        first = Projection(config)
        first.feed(recording[:cut])
        saved = msgspec.msgpack.encode(first.snapshot())
        resumed = Projection.restore(config, msgspec.msgpack.decode(saved, type=ProjectionState))
        resumed.feed(recording[cut:])
        assert resumed.fire_count == whole.fire_count
        assert resumed.fires[-1] == whole.fires[-1]
        assert resumed.history.total_tokens == whole.history.total_tokens
        assert resumed.every_turn_forced() == whole.every_turn_forced()
    if strategy == "summarize":  # the stand-ins are saved as numbers, not messages, and what
        state = whole.snapshot()  # lies past the hard cap's worth of them as one number
        assert len(state.messages) < 60 < len(state.kept_tokens)
        below_floor = whole.history.floor - whole.history.stable_prefix_end
        assert len(state.kept_tokens) < below_floor / 2
        assert sum(state.kept_tokens) == whole.kept_tokens()
        assert sum(state.kept_tokens[1:]) < PILE_UP.compaction_hard_cap_tokens


def test_a_restored_state_that_does_not_hold_together_is_refused() -> None:
    projection = Projection(PILE_UP)
    projection.feed(_with_tokens(_recording(120)))
    state = projection.snapshot()
    assert state.kept_roles
    for broken in (
        msgspec.structs.replace(state, kept_roles=state.kept_roles[:-1]),
        msgspec.structs.replace(state, kept_roles="x" * len(state.kept_roles)),
        msgspec.structs.replace(state, stable_prefix_end=len(state.messages) + 1),
    ):
        with pytest.raises(ValueError, match="projection state"):
            Projection.restore(PILE_UP, broken)


def test_a_truncation_after_a_restore_cuts_where_one_never_stopped_would() -> None:
    """A turn of only a prompt (a recording need not alternate) leaves a lone tool call as the
    span: no valid boundary (§3.3), so at the hard cap the projection truncates (§3.4), earlier
    stand-ins first. The saved state folds what any cut drops whole, and still cuts the same."""
    recording: list[Message] = []
    for index in range(300):
        recording.append(user(f"u{index}", "ask " * 60))
        recording.append(tool_call(f"c{index}", f"k{index}", text="call " * 80))
        if index % 20 == 19:  # the call left hanging, and a turn of only a prompt
            recording.append(user(f"v{index}", "again " * 30))
        else:
            recording.append(tool_result(f"r{index}", f"k{index}", output="out " * 40))
            recording.append(assistant(f"a{index}", "done " * 30))
    config = CompactionConfig(
        compaction_model="local:extractive",
        compaction_threshold_tokens=300,
        compaction_hard_cap_tokens=600,
        compaction_preserve_recent_turns=1,
        compaction_max_summary_tokens=40,
    )
    pairs = _with_tokens(recording)
    whole = Projection(config)
    whole.feed(pairs)
    truncations = [f for f in whole.fires if f.kind == "truncation"]
    assert len(truncations) > 5 and all(f.action == "forced" for f in truncations)
    # Each cut starts at the recording's start (the oldest go first) and ends before the turn.
    assert all(f.span_start == 0 < f.span_end < f.before_index for f in truncations)
    # A truncation takes the pile under the cap: a run of forced turns begins after the last.
    forced = whole.every_turn_forced()
    assert forced is not None and forced.before_index > truncations[-1].before_index
    for truncation in truncations[:3]:
        upto = Projection(config)
        upto.feed(pairs[: truncation.before_index + 1])  # the turn it truncated before
        assert upto.fires[-1] == truncation and upto.every_turn_forced() is None
        assert upto.kept_tokens() < config.compaction_hard_cap_tokens
    folded = 0
    for cut in range(1, len(pairs), 7):
        first = Projection(config)
        first.feed(pairs[:cut])
        state = msgspec.msgpack.decode(
            msgspec.msgpack.encode(first.snapshot()), type=ProjectionState
        )
        assert sum(state.kept_tokens) == first.kept_tokens()
        folded += len(state.kept_tokens) < first.history.floor - first.history.stable_prefix_end
        resumed = Projection.restore(config, state)
        resumed.feed(pairs[cut:])
        assert resumed.fire_count == whole.fire_count
        assert resumed.fires[-1] == whole.fires[-1]
        assert resumed.history.total_tokens == whole.history.total_tokens
    assert folded, "some saved states folded what any cut drops whole"
