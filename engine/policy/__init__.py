"""The spec's decisions as pure functions: trigger (§3.1), span and truncation (§3.2-§3.4),
splice (§4.2, §4.4), the turn plan that combines them, and the projection over a recorded session.
Nothing here does I/O; `SessionManager`, the store and the app call these."""
