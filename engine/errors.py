"""Errors shared across the engine's modules."""


class ConfigError(ValueError):
    """A knob with a bad value; `knob` names it."""

    def __init__(self, knob: str, detail: str) -> None:
        super().__init__(f"{knob}: {detail}")
        self.knob = knob


class NothingToCompact(ValueError):
    """A compaction was asked for but there is no span; `reason` says why. A ValueError, as the
    bare error it replaces was, so callers that caught that still catch it."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"nothing to compact: {reason}")
        self.reason = reason


def no_span_reason(message_count: int, preserve_recent_turns: int, floor: int = 0) -> str:
    """Why a history has no compactable span, in the words the CLI and the app both show: the
    span runs from the floor to the preserved tail (§3.2) and ends at a tool-cycle boundary
    (§3.3), so it is empty when the tail reaches back to the floor, else when no boundary fits."""
    if message_count - preserve_recent_turns <= floor:
        where = "" if floor == 0 else f" or the compacted part (up to message {floor})"
        return (
            f"no compactable span: all {message_count:,} messages are in the preserved "
            f"tail{where} (the {preserve_recent_turns} most recent are never compacted)"
        )
    return "no compactable span: no complete tool cycle ends before the preserved tail"


class SpanChanged(Exception):
    """The span a summary was made from is no longer in the history as it was: another process
    compacted or rewrote it first. Nothing was written."""


class StoreError(Exception):
    """One clear line: which file, what is wrong, what to do."""


class StoreLocked(StoreError):
    """Another process held the write lock past the busy timeout: nothing was written."""


class UndoRefused(StoreError):
    """An undo that cannot be done; `reason` says why (nothing to undo, a later compaction)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
