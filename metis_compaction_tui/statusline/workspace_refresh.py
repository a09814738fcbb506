"""The status line's slow half for a metis workspace: the engine's store API and trigger rule
(no SQL here), run by a detached refresher (or inline with `--sync`), its figures saved for the
line (statusline.workspace) with the session counters they were computed from.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from engine import (
    CompactionCompleted,
    ConfigError,
    SessionInfo,
    SessionStore,
    StoreError,
    resolve_config,
)
from metis_compaction_tui.statusline.render import FIELD_NAMES, clean
from metis_compaction_tui.statusline.state import prune_states, trigger_word, write_atomic
from metis_compaction_tui.statusline.workspace import (
    WS_STATE_VERSION,
    probe,
    state_file,
    store_file,
)

_EVENT_PAGE = 1000


def choose_session(sessions: list[SessionInfo], session_id: str | None) -> SessionInfo | None:
    """The given session, else the most recently updated (ties: the first listed)."""
    if session_id is not None:
        return next((s for s in sessions if s.session_id == session_id), None)
    return max(sessions, key=lambda s: s.updated_at_ms, default=None)


def compute_fields(workspace: str, session_id: str | None) -> dict[str, object]:
    """Fields for one stored session, read through the engine's store API. A missing store or
    session gives fields with a note, never an exception."""
    f: dict[str, object] = dict.fromkeys(FIELD_NAMES)
    f["source"] = "metis"
    try:
        store = SessionStore.open(Path(workspace))
    except Exception as exc:
        f["note"] = f"no metis store ({clean(str(exc), 200)})"
        return f
    with store:
        chosen = choose_session(store.list_sessions(), session_id)
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
    try:
        return resolve_config(workspace).trust.state == "untrusted"
    except (ConfigError, StoreError):
        return False


def refresh_workspace(
    directory: str,
    workspace: str,
    session_arg: str | None,
    *,
    wait: bool = False,
) -> bool:
    """Compute the fields and save them with the counters read before: a write made meanwhile
    leaves the saved key behind the store, so the next call refreshes again (never a figure
    newer than its key). False when another refresher holds the lock and `wait` is off."""
    store = store_file(workspace)
    path = state_file(directory, store, session_arg)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(path + ".lock", "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        started = time.perf_counter()
        key = probe(store, session_arg)
        fields = compute_fields(workspace, session_arg)
        took_ms = round((time.perf_counter() - started) * 1000)
        if isinstance(key, list):  # else the line tells what is wrong from its own read
            saved = {
                "version": WS_STATE_VERSION,
                "store": store,
                "session_arg": session_arg or "",
                "key": key,
                "took_ms": took_ms,
                "fields": fields,
            }
            write_atomic(path, json.dumps(saved).encode())
    try:
        prune_states(directory)  # once a day at most: one stat otherwise
    except OSError:
        pass
    return True


def main(argv: list[str]) -> int:
    """`DIR WORKSPACE [SESSION]`: the detached refresher."""
    try:
        refresh_workspace(argv[0], argv[1], argv[2] if len(argv) > 2 else None)
    except Exception:
        return 1
    return 0
