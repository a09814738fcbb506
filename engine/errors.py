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
