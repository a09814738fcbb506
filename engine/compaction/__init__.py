"""What a SessionManager does for a turn, split by responsibility (engine.manager coordinates):

- `deps`: what the manager works with (ManagerDeps, the SessionPersistence protocol).
- `writes`: everything a run writes outside the history: events (store + bus), the spend, the
  spliced history (store first, memory second).
- `summary_call`: the summary for a span: the cache key, the cache lookup, the summarizer call,
  or the no-call mask.
- `fallback_run`: §3.4's fallback when no summary can be used: truncate at the hard cap, or
  report the failure and leave the history as it was.
- `commit`: splice a prepared summary or mask in, with its CompactionRecord.
- `turn`: §3.1 at the start of a turn: plan, then compact, fall back or skip.
"""
