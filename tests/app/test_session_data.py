"""The dashboard's view model: zones around the watermark and history tokens over turns."""

from __future__ import annotations

import itertools

from engine import CompactionConfig, CompactionRecord, Role, text_message
from metis_compaction_tui.demo.workload import scripted_session
from metis_compaction_tui.sources.session_data import (
    CompactionInfo,
    SessionData,
    Zone,
    build_timeline,
    message_log,
    short_tokens,
)

CONFIG = CompactionConfig(
    compaction_threshold_tokens=2_000,
    compaction_hard_cap_tokens=9_000,
    compaction_preserve_recent_turns=4,
    compaction_model="local:extractive",
)


def session(turns: int = 8) -> SessionData:
    messages = [m for turn in scripted_session(seed=3, turns=turns) for m in turn]
    return SessionData.from_messages("s", messages, config=CONFIG, stable_prefix_end=2)


def test_zones_tile_the_history_in_order() -> None:
    data = session()
    zones = data.zones()
    assert zones[0].zone is Zone.PREFIX and zones[0].start == 0 and zones[0].end == 2
    assert zones[-1].zone is Zone.TAIL and zones[-1].end == data.message_count
    for before, after in itertools.pairwise(zones):
        assert before.end == after.start
    span = data.plan.span
    assert span is not None
    span_zone = next(z for z in zones if z.zone is Zone.SPAN)
    assert (span_zone.start, span_zone.end) == (span.start, span.compaction_watermark)
    assert sum(z.tokens for z in zones) == data.history.total_tokens


def test_appends_move_the_tail_and_extend_the_timeline() -> None:
    data = session(4)
    points = len(data.timeline)
    extra = [m for turn in list(scripted_session(seed=3, turns=6))[4:] for m in turn]
    added = data.append((m, data.history.counter(m)) for m in extra)
    assert added == len(extra)
    assert len(data.timeline) == points + 2
    assert data.timeline[-1].history_tokens == data.history.total_tokens
    assert data.zones()[-1].end == data.message_count


def test_timeline_takes_a_compacted_span_back_out_and_marks_it() -> None:
    log = [
        (text_message("u1", Role.USER, "a"), 100),
        (text_message("a1", Role.ASSISTANT, "b"), 100),
        (text_message("u2", Role.USER, "c"), 100),
        (text_message("s1", Role.USER, "summary", synthetic=True, compaction_span=(0, 2)), 10),
        (text_message("a2", Role.ASSISTANT, "d"), 100),
        (text_message("u3", Role.USER, "e"), 100),
    ]
    record = CompactionRecord(
        kind="summary",
        turn_id="t",
        watermark_before=0,
        watermark_after=2,
        span_message_count=2,
        span_token_count_in=200,
        span_token_count_out=10,
        replacement_count=1,
        summary_message_id="s1",
    )
    points = build_timeline(message_log(log), [CompactionInfo(1, record)])
    # 200 before u2; u2 + the summary, less the 200 compacted, + a2 = 210; then now, with u3
    assert [p.history_tokens for p in points] == [200, 210, 310]
    assert [p.compaction for p in points] == [None, "summary", None]


def test_short_tokens_fit_a_narrow_column_at_every_scale() -> None:
    cases = {
        0: "0",
        999: "999",
        1_234: "1.2k",
        41_000: "41k",
        999_999: "999k",
        1_300_000: "1.3M",
        41_000_000: "41M",
        1_000_000_000: "1.0B",
        2 * 10**12: "2.0T",
        10**15: "1000T",
    }
    assert {count: short_tokens(count) for count in cases} == cases
