"""The refresher's own pass over a transcript (resumable, GC paused, what it builds parked) gives
the figures the app's full import gives: on every fixture transcript, every figure the line
shows is computed here again from `load_transcript` and the engine's projection, and compared."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from engine.policy.plan import plan_turn
from engine.policy.projection import Projection
from engine.tokens import estimate_message_tokens
from metis_compaction_tui.importers import TranscriptError, load_transcript
from metis_compaction_tui.importers.model import as_ordinary
from metis_compaction_tui.statusline.refresh import CONFIG, refresh
from metis_compaction_tui.statusline.state import load_line_state, trigger_word

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
ALL = sorted(p for p in FIXTURES.rglob("*.jsonl"))


def from_full_import(path: Path) -> dict[str, object] | None:
    try:
        imported = load_transcript(path)
    except TranscriptError:
        return None
    projection = Projection(CONFIG)
    projection.feed((as_ordinary(m), estimate_message_tokens(m)) for m in imported.messages)
    decision = plan_turn(projection.history, CONFIG, Decimal(0)).decision
    usage = [u for u in imported.recorded_usage if u.message_index >= 0]
    last = imported.agent_compactions[-1] if imported.agent_compactions else None
    return {
        "format": imported.format,
        "messages": len(imported.messages),
        "agent_compactions": len(imported.agent_compactions),
        "last_before": last.pre_tokens if last else None,
        "our_compactions": projection.fire_count,
        "pending": decision.pending_history_tokens,
        "threshold": decision.threshold_tokens,
        "hard_cap": decision.hard_cap_tokens,
        "trigger": trigger_word(decision.action.value),
        "soft_in": decision.tokens_to_threshold,
        "explain": decision.explain(),
        "cache_read": sum(u.cache_read_tokens for u in usage),
        "cache_total": sum(u.context_tokens for u in usage),
    }


def test_the_fixtures_are_many() -> None:
    assert len(ALL) >= 20  # the parametrisation below would pass on an empty folder


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_refresher_and_the_full_importer_agree(path: Path, tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    assert refresh(str(path), state, "claude-sonnet-4-5", wait=True)
    saved = load_line_state(state, str(path))
    assert saved is not None
    expected = from_full_import(path)
    if expected is None:  # not a transcript: the line says so instead of figures
        assert saved["error"] and saved["format"] == ""
        return
    assert saved["error"] is None
    assert {key: saved[key] for key in expected} == expected
