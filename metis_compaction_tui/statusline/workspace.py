"""The status line for a metis workspace, read through the engine's store API (no SQL here)."""

from __future__ import annotations

from pathlib import Path

from engine import CompactionCompleted, SessionStore
from metis_compaction_tui.statusline.render import FIELD_NAMES, clean
from metis_compaction_tui.statusline.state import trigger_word

_EVENT_PAGE = 1000


def workspace_fields(workspace: str, session_id: str | None) -> dict[str, object]:
    """Fields for one stored session: the given one, else the most recently updated. A missing
    store or session gives a line with a note, never an exception."""
    f: dict[str, object] = dict.fromkeys(FIELD_NAMES)
    f["source"] = "metis"
    try:
        store = SessionStore.open(Path(workspace))
    except Exception as exc:
        f["note"] = f"no metis store ({clean(str(exc), 60)})"
        return f
    with store:
        sessions = store.list_sessions()
        if session_id is not None:
            chosen = next((s for s in sessions if s.session_id == session_id), None)
        else:
            chosen = max(sessions, key=lambda s: s.updated_at_ms, default=None)
        if chosen is None:
            f["note"] = "no such session" if session_id else "no sessions yet"
            return f
        plan = store.plan(chosen.session_id)
        compactions = [c for c in store.compactions(chosen.session_id) if not c.undone]
        hits = completed = 0
        after = 0
        while True:
            page = store.events(chosen.session_id, after_id=after, limit=_EVENT_PAGE)
            for stored in page:
                if isinstance(stored.event, CompactionCompleted):
                    completed += 1
                    hits += stored.event.cache_hit
            if len(page) < _EVENT_PAGE:
                break
            after = page[-1].event_id
    decision = plan.decision
    f["model"] = clean(chosen.config.compaction_model, 40)
    f["session"] = clean(chosen.session_id, 40)
    f["ctx"] = chosen.total_tokens
    f["pending"] = decision.pending_history_tokens
    f["threshold"] = decision.threshold_tokens
    f["hard_cap"] = decision.hard_cap_tokens
    f["trigger"] = trigger_word(decision.action.value)
    if decision.tokens_to_threshold is not None:
        f["soft_in"] = decision.tokens_to_threshold
    f["explain"] = clean(decision.explain(), 200)
    f["our_compactions"] = len(compactions)
    if compactions:
        record = compactions[-1].record
        f["last_before"] = record.history_tokens_before
        f["last_after"] = record.history_tokens_after
    if completed:
        f["cache_pct"] = round(100 * hits / completed)
    f["compaction_usd"] = f"{chosen.spent_usd:.4f}"
    f["stale"] = False
    if _untrusted(Path(workspace)):
        f["note"] = "untrusted config"  # engine.workspace_trust: `metis-compaction-tui trust`
    return f


def _untrusted(workspace: Path) -> bool:
    """Whether the workspace file sets what needs trust and is not trusted; a file that cannot
    be read is `status`'s to explain, not the line's."""
    from engine import ConfigError, StoreError, resolve_config

    try:
        return resolve_config(workspace).trust.state == "untrusted"
    except (ConfigError, StoreError):
        return False
