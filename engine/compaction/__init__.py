"""The steps of a compaction, each reading the session from explicit inputs (`StepInputs`: the
history, the knobs, the spend; the clock's `now_ms` and an id maker where a step makes records
or messages) and returning what it made. Nothing here writes: SessionManager applies a
`CommitResult` (the store first, then the events, then its own state).

- `result`: StepInputs, CommitResult (new history, record, events, spend), the event builders.
- `summary_call`: the summary for a span: the cache key, the cache lookup, the summarizer call,
  or the no-call mask. Returns a PreparedCompaction.
- `commit`: splice a prepared summary or mask in, with its CompactionRecord.
- `fallback_run`: §3.4's fallback when no summary can be used: truncate at the hard cap, or
  report the failure and leave the history as it was.
- `turn`: §3.1 at the start of a turn: skip, fall back, or which span to compact how.
- `deps`: what the manager works with (ManagerDeps, the SessionPersistence protocol).
"""
